"""Break review s10 (second pass): the refused-second-write verdict (exit code 87, SecondDeltaWriteError).

No Spark session here: the entry runs in this process on an application that never starts one, and the
operator runs with a spark-submit that records being called.
"""
from __future__ import annotations

import stat
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from task_context import LOGICAL, RUN_KEY, task_context

APP_ID = "dag:delta_job@" + RUN_KEY
APP_VERSION = int(LOGICAL.timestamp())
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _entry(monkeypatch, tmp_path: Path, source: str):
    from airflow_provider_delta.spark.delta_job import APPLICATION_ARG, DeltaJobContext, run_application
    from pyspark.sql import SparkSession
    ctx = DeltaJobContext(input_table_uri=None, input_version=None, output_table_uri=str(tmp_path / "out"),
                          txn_app_id=APP_ID, txn_version=APP_VERSION,
                          job={"dag_id": "dag", "task_id": "delta_job", "run_id": "r", "try_number": 1})
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(source))
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", SparkSession.Builder.getOrCreate)  # undone after
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    with pytest.raises(SystemExit) as exited:
        run_application([f"{APPLICATION_ARG}={app}", ctx.to_argument()])
    return exited.value.code


@pytest.mark.parametrize("how", ["sys.exit(87)", "raise SystemExit(87)"])
def test_the_applications_own_exit_87_is_not_the_entrys_verdict(monkeypatch, tmp_path, how):
    """An application that fails for a reason of its own with exit code 87 (after its one write, the
    operator finds the pair) was taken for a refused second write: SecondDeltaWriteError, no retry, a
    message about a write that never happened. The entry now exits 1 for it: a plain, retried failure."""
    from airflow_provider_delta.spark.delta_job import EXIT_SECOND_WRITE_REFUSED
    code = _entry(monkeypatch, tmp_path, f"import sys\nprint('validation failed')\n{how}\n")
    assert code != EXIT_SECOND_WRITE_REFUSED            # was: 87
    assert code == 1


def test_other_exit_codes_of_the_application_stay_as_they_are(monkeypatch, tmp_path):
    assert _entry(monkeypatch, tmp_path, "import sys\nsys.exit(3)\n") == 3


def _recording_spark_submit(tmp_path: Path) -> str:
    path = tmp_path / "spark-submit-records"
    path.write_text(f"#!/bin/sh\necho called > {tmp_path}/spark-submit-was-called\nexit 7\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_following_the_second_write_message_literally_loses_no_rows(tmp_path):
    """The message's recovery, done literally: restore to the version before the named one, clear the task."""
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    out = DeltaTable.create(str(tmp_path / "out"), SCHEMA)                        # version 0
    out.write(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))        # version 1: the first write
    with out.transaction(operation="WRITE") as txn:                                # version 2: its pair (Delta
        txn.set_txn(APP_ID, APP_VERSION)                                           # Spark: in the same commit)
    out.restore(version=0)                                                        # "the version before" it
    assert out.snapshot().transaction_version(APP_ID) == APP_VERSION              # the pair stays
    op = DeltaSparkApplicationOperator(task_id="delta_job", conn_id="spark_not_defined", application="app.py",
                                       output_table_uri=str(out.uri),
                                       spark_binary=_recording_spark_submit(tmp_path))
    ctx = task_context(task_id="delta_job", try_number=2)                          # the cleared task
    try:
        result = op.execute(ctx)
    except Exception:
        result = "failed"
    # correct: the application runs again (and its rows land), or the task fails saying what to do;
    # wrong: success without submitting, announcing an output that holds none of the run's rows
    assert result == "failed" or (tmp_path / "spark-submit-was-called").exists()


def _pair_table(tmp_path: Path) -> DeltaTable:
    """The output with the run's pair committed at version 2 (after its rows at version 1), as above."""
    out = DeltaTable.create(str(tmp_path / "out"), SCHEMA)                        # version 0
    out.write(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))        # version 1
    with out.transaction(operation="WRITE") as txn:                                # version 2: the pair
        txn.set_txn(APP_ID, APP_VERSION)
    return out


def _application_operator(tmp_path: Path, out: DeltaTable):
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    return DeltaSparkApplicationOperator(task_id="delta_job", conn_id="spark_not_defined", application="app.py",
                                         output_table_uri=str(out.uri), spark_binary=_recording_spark_submit(tmp_path))


def test_a_pair_undone_by_a_restore_fails_typed_saying_what_to_do(tmp_path):
    """#27 (decided): the run's pair is committed (version 2) but the RESTORE at version 3 went back to version 0:
    the cleared task fails with DeltaPairUndoneByRestoreError (no retry), naming both versions and the way out;
    nothing submitted, nothing written."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_delta.log import PairUndoneByRestoreError
    from airflow_provider_delta.hooks.undone_by_restore import DeltaPairUndoneByRestoreError
    out = _pair_table(tmp_path)
    out.restore(version=0)                                                        # version 3
    with pytest.raises(DeltaPairUndoneByRestoreError) as raised:
        _application_operator(tmp_path, out).execute(task_context(task_id="delta_job", try_number=2))
    e = raised.value
    assert isinstance(e, PairUndoneByRestoreError) and isinstance(e, AirflowFailException)
    assert (e.version, e.restore_version, e.restored_version) == (2, 3, 0)
    text = str(e)
    assert "version 2" in text and "RESTORE at version 3" in text and "higher app_version" in text
    assert "Delta Spark would skip" in text
    assert not (tmp_path / "spark-submit-was-called").exists() and out.latest_version() == 3


def _live_on(out, after: str, undo_to: int) -> None:
    """After a table whose version 2 holds the pair (or position): version 3, another writer's rows, then
    ``after``: nothing; a RESTORE to version 2 (version 4); a RESTORE to ``undo_to`` (before version 2: version 4,
    undone) and one forward again to version 3 (version 5); an overwrite (version 4)."""
    out.write(pa.table({"id": [3], "name": ["c"]}, schema=SCHEMA))                # version 3
    if after == "restore-after-pair":
        out.restore(version=2)                                                    # version 4
    elif after == "restore-forward-again":
        out.restore(version=undo_to)                                              # version 4: undone
        out.restore(version=3)                                                    # version 5: back again
    elif after == "overwrite":
        out.write(pa.table({"id": [9], "name": ["z"]}, schema=SCHEMA), mode="overwrite")


@pytest.mark.parametrize("after", ["nothing", "restore-after-pair", "restore-forward-again", "overwrite"])
def test_a_pair_not_undone_still_skips(tmp_path, after):
    """The opposite sides: no RESTORE after the pair; a RESTORE to a version at or after the pair's commit; a
    RESTORE that undid it followed by one forward again to a version holding it; an ordinary overwrite after
    it (the table's life, not an undo): the task skips (nothing submitted) and reports the pair's commit."""
    out = _pair_table(tmp_path)
    _live_on(out, after, undo_to=0)
    version = _application_operator(tmp_path, out).execute(task_context(task_id="delta_job", try_number=2))
    assert version == 2 and not (tmp_path / "spark-submit-was-called").exists()


def test_the_submit_operator_commit_dataframe_and_the_hook_refuse_an_undone_pair_too(tmp_path):
    """Every place that skips on a committed pair asks the one rule: DeltaSparkSubmitOperator (before
    submitting), commit_dataframe (before touching the DataFrame) and DeltaTableHook.commit_files; the
    same table with no RESTORE after the pair skips in each."""
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.log import PairUndoneByRestoreError
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    from airflow_provider_delta.hooks.undone_by_restore import DeltaPairUndoneByRestoreError
    from airflow_provider_delta.spark.commit import commit_dataframe
    app_id = "dag:spark_job@" + RUN_KEY
    src = DeltaTable.create(str(tmp_path / "src"), SCHEMA)
    kept, undone = (DeltaTable.create(str(tmp_path / name), SCHEMA) for name in ("kept", "undone"))
    for out in (kept, undone):
        out.write(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA), app_id=app_id, app_version=APP_VERSION)
        out.write(pa.table({"id": [2], "name": ["b"]}, schema=SCHEMA))                           # version 2
    undone.restore(version=0)                                                                   # version 3

    def submit(out):
        op = DeltaSparkSubmitOperator(task_id="spark_job", input_table_uri=str(src.uri), output_table_uri=str(out.uri),
                                      transform="identity", conn_id="spark_not_defined",
                                      spark_binary=_recording_spark_submit(tmp_path))
        return op.execute(task_context(task_id="spark_job", try_number=2))
    assert submit(kept) == 1
    with pytest.raises(DeltaPairUndoneByRestoreError, match="RESTORE at version 3"):
        submit(undone)
    assert not (tmp_path / "spark-submit-was-called").exists()
    assert commit_dataframe(None, kept, app_id=app_id, app_version=APP_VERSION) is None
    with pytest.raises(PairUndoneByRestoreError, match="version 1 was undone"):
        commit_dataframe(None, undone, app_id=app_id, app_version=APP_VERSION)
    hook = DeltaTableHook()
    assert hook.commit_files(str(kept.uri), app_id=app_id, txn_version=APP_VERSION) == 2
    with pytest.raises(PairUndoneByRestoreError):
        hook.commit_files(str(undone.uri), app_id=app_id, txn_version=APP_VERSION)
    assert (kept.latest_version(), undone.latest_version()) == (2, 3)


def _incremental_tables(tmp_path):
    """Source (change feed on) with versions 1 and 2; output: version 1 holds the changes up to source version
    1 with the position txn("dag:apply", 1), version 2 those up to version 2 with txn("dag:apply", 2)."""
    source = DeltaTable.create(str(tmp_path / "src"), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    source.write(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA))                   # source version 1
    source.write(pa.table({"id": [2], "name": ["b"]}, schema=SCHEMA))                   # source version 2
    out = DeltaTable.create(str(tmp_path / "out"), SCHEMA)
    out.write(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA), app_id="dag:apply", app_version=1)
    out.write(pa.table({"id": [2], "name": ["b"]}, schema=SCHEMA), app_id="dag:apply", app_version=2)
    return source, out


def _incremental_operator(tmp_path, source, out, which="application", **kwargs):
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator, DeltaSparkSubmitOperator
    common = dict(task_id="apply", conn_id="spark_not_defined", input_table_uri=str(source.uri),
                  input_changes=True, output_table_uri=str(out.uri), spark_binary=_recording_spark_submit(tmp_path))
    if which == "application":
        return DeltaSparkApplicationOperator(application="app.py", **{**common, **kwargs})
    return DeltaSparkSubmitOperator(transform="identity", **{**common, **kwargs})


def test_an_incremental_position_undone_by_a_restore_is_not_taken_as_processed(tmp_path):
    """#27 (decided): the consumer's position (txn("dag:apply", 1)) is recorded, but the RESTORE to version 0
    undid its commit: the run does not take it (it found nothing new and succeeded, the restored-away changes
    never processed again); it fails typed, no retry, nothing submitted, and names the way out."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_delta.log import PositionUndoneByRestoreError
    from airflow_provider_delta.hooks.undone_by_restore import DeltaPositionUndoneByRestoreError
    source = DeltaTable.create(str(tmp_path / "src"), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    source.write(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA))                   # source version 1
    out = DeltaTable.create(str(tmp_path / "out"), SCHEMA)
    out.write(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA), app_id="dag:apply", app_version=1)
    out.restore(version=0)                                                               # the changes are gone
    op = _incremental_operator(tmp_path, source, out, initial_version=1)
    with pytest.raises(DeltaPositionUndoneByRestoreError) as raised:
        op.execute(task_context(task_id="apply"))
    e = raised.value
    assert isinstance(e, PositionUndoneByRestoreError) and isinstance(e, AirflowFailException)
    assert (e.app_id, e.position, e.version, e.restore_version, e.restored_version, e.restart_from) == (
        "dag:apply", 1, 1, 2, 0, 1)
    assert "another app_id with initial_version=1" in str(e) and "none of this consumer's output" in str(e)
    assert not (tmp_path / "spark-submit-was-called").exists() and out.latest_version() == 2


@pytest.mark.parametrize("which", ["application", "submit"])
def test_a_position_partly_undone_names_the_version_the_restored_data_holds(tmp_path, which):
    """A RESTORE to output version 1 undid the commit of position 2: the restored data holds the changes up to
    source version 1, so the way out starts again at 2 under another app_id; doing just that processes them."""
    from airflow_provider_delta.hooks.undone_by_restore import DeltaPositionUndoneByRestoreError
    source, out = _incremental_tables(tmp_path)
    out.restore(version=1)                                                               # version 3
    with pytest.raises(DeltaPositionUndoneByRestoreError) as raised:
        _incremental_operator(tmp_path, source, out, which).execute(task_context(task_id="apply"))
    assert (raised.value.position, raised.value.restart_from) == (2, 2)
    assert "up to version 1 only" in str(raised.value) and "initial_version=2" in str(raised.value)
    assert not (tmp_path / "spark-submit-was-called").exists() and out.latest_version() == 3
    with pytest.raises(Exception):      # the message's way out is taken: submitted (the recording binary fails)
        _incremental_operator(tmp_path, source, out, which, app_id="dag:apply#2",
                              initial_version=2).execute(task_context(task_id="apply"))
    assert (tmp_path / "spark-submit-was-called").exists()


@pytest.mark.parametrize("after", ["nothing", "restore-after-pair", "restore-forward-again", "overwrite"])
def test_a_position_not_undone_is_still_taken(tmp_path, after):
    """The opposite sides: no RESTORE; a RESTORE to the position's version or later; one that undid it followed by
    one forward again to a version holding it; an ordinary overwrite (the table's life): the position counts,
    nothing new (source version 2 pinned) -> the run succeeds without submitting."""
    source, out = _incremental_tables(tmp_path)
    _live_on(out, after, undo_to=1)
    assert _incremental_operator(tmp_path, source, out).execute(task_context(task_id="apply")) == 2
    assert not (tmp_path / "spark-submit-was-called").exists()


# ------------------------------------------------------------------ with Spark (the entry in this process)
@pytest.mark.spark
@pytest.mark.parametrize("after", ["", "sys.exit(0)\n", "sys.exit(2)\n"], ids=["finishes", "exit-0", "exit-2"])
def test_a_refused_second_write_the_application_catches_still_exits_with_the_entry_code(
        monkeypatch, spark, tmp_path, after):
    """The application catches Delta's refusal of its second write and goes on: it finished 0 and the
    operator announced the output, green, without the refused write's rows (or, exit 2, a retry did).
    The entry saw the refusal on its way into Python: exit 87, SecondDeltaWriteError."""
    from test_break_s10_spark import HEAD, WRITE, _output, _run_entry

    from airflow_provider_delta.spark.delta_job import EXIT_SECOND_WRITE_REFUSED
    app = (HEAD + WRITE.format(lo=0, hi=2) + "\ntry:\n    " + WRITE.format(lo=2, hi=4)
           + "\nexcept Exception as e:\n    print('ignored:', type(e).__name__)\n" + after)
    assert _run_entry(monkeypatch, spark, tmp_path, app) == EXIT_SECOND_WRITE_REFUSED   # was: None / 0 / 2
    assert _output(tmp_path) == ([0, 1], [(0, True)])


@pytest.mark.spark
def test_a_refusal_caught_before_the_pair_was_used_is_not_the_entry_code(monkeypatch, spark, tmp_path):
    """A write from a new session refused before the one write (nothing used the pair yet), caught, then
    the one write: a success (the application handled it, nothing of it is lost from the pair's write)."""
    from test_break_s10_spark import HEAD, WRITE, _output, _run_entry
    new = WRITE.replace("SparkSession.builder.getOrCreate()", "SparkSession.builder.getOrCreate().newSession()")
    app = (HEAD + "SparkSession.builder.getOrCreate()\ntry:\n    " + new.format(lo=5, hi=6)
           + "\nexcept Exception:\n    pass\n" + WRITE.format(lo=0, hi=2) + "\n")
    assert _run_entry(monkeypatch, spark, tmp_path, app) is None
    assert _output(tmp_path) == ([0, 1], [(0, True)])
