"""Review (session 12, s12-rv-restore) of the RESTORE rollback / idempotency logic: the restore operator's retry
search, the #27 pair rule (log/write/pair_undone_by_restore.py) as the hook and the consumers use it. Findings
as strict xfails; real tables, the hook and operators as a task runs them."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, PairRestoreUndecidedError, PairUndoneByRestoreError

SCHEMA = pa.schema([("id", pa.int64())])


def _ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


def _write(table: DeltaTable, ids: list[int], **kwargs) -> int:
    return table.write(pa.table({"id": pa.array(ids, pa.int64())}), **kwargs)


def _pair_compacted_undone_then_timestamp_restored(tmp_path) -> str:
    """0 create; 1 id 0; 2 the pair (load, 1000): id 1; 3 OPTIMIZE (the pair's file compacted into another);
    4 RESTORE version 1 (undoes the pair); 5 RESTORE TIMESTAMP AS OF version 3's time: the pair's row is back."""
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, SCHEMA)
    _write(table, [0])
    _write(table, [1], app_id="load", app_version=1000)
    time.sleep(0.05)
    table.optimize()
    ts3 = DeltaTable(uri).history(limit=1)[0]["timestamp"]
    time.sleep(0.05)
    table.restore(version=1)
    time.sleep(0.05)
    table.restore(timestamp=ts3)
    assert DeltaTable(uri).latest_version() == 5
    return uri


def test_a_timestamp_restore_back_past_an_undo_brings_the_pairs_rows_back(tmp_path):
    from airflow_provider_delta.hooks import DeltaTableHook
    uri = _pair_compacted_undone_then_timestamp_restored(tmp_path)
    assert _ids(uri) == [0, 1]                                   # the pair's row (1) is in the table
    try:
        version = DeltaTableHook().commit_files(uri, app_id="load", txn_version=1000)
    except PairRestoreUndecidedError:
        version = "undecided"                                    # acceptable: it says it cannot tell
    except PairUndoneByRestoreError as e:
        version = f"undone: {e}"                                 # wrong: 'the table holds none of its rows'
    assert version in (5, "undecided"), version
    assert DeltaTable(uri).latest_version() == 5 and _ids(uri) == [0, 1]


def test_the_same_restore_by_version_is_judged_live(tmp_path):
    """The other side: the same history with version=3 recorded skips (rows there)."""
    from airflow_provider_delta.hooks import DeltaTableHook
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, SCHEMA)
    _write(table, [0])
    _write(table, [1], app_id="load", app_version=1000)
    table.optimize()
    table.restore(version=1)
    table.restore(version=3)
    assert DeltaTableHook().commit_files(uri, app_id="load", txn_version=1000) == 5
    assert _ids(uri) == [0, 1]


def _try(make_context, task_id: str, try_number: int, run_id: str | None = None) -> dict:
    ctx = make_context(task_id)
    ctx["ti"].try_number = try_number
    if run_id is not None:
        ctx["ti"].run_id = ctx["run_id"] = run_id
    return ctx


@pytest.mark.parametrize("guard", [pytest.param({"expected_version": 2}, id="guarded"),
                                   pytest.param({}, id="unguarded-holds")])
def test_a_rollback_retry_after_another_dags_append_reports_its_restore(make_table, make_context, guard):
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=2)                                   # versions 0..2; 2 is the run's load
    uri = table.storage.root
    rollback = DeltaRestoreOperator(task_id="rollback", table_uri=uri, version=1, **guard)
    first = rollback.execute(_try(make_context, "rollback", 1))           # version 3, then the worker dies
    assert first["committed"] and first["version"] == 3
    other = {"dag_id": "ingest", "task_id": "append", "run_id": "scheduled__x", "try_number": 1}
    DeltaTableHook().write_table(uri, pa.table({"id": [777], "day": ["2026-01-09"]}), job=other)   # version 4
    try:
        out = rollback.execute(_try(make_context, "rollback", 2))
    except Exception as e:  # noqa: BLE001 - DeltaRollbackRefusedError
        out = f"{type(e).__name__}: {e}"
    assert isinstance(out, dict) and out["version"] == 3 and out["restored_version"] == 1, out
    assert DeltaTable(uri).latest_version() == 4 and 777 in _ids(uri)


def test_a_timestamp_rollback_after_the_latest_commit_names_a_parameter_the_operator_has(make_table, make_context):
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=1)
    uri = table.storage.root
    latest_ts = DeltaTable(uri).history(limit=1)[0]["timestamp"]
    rollback = DeltaRestoreOperator(task_id="rollback", table_uri=uri, timestamp=latest_ts + 60_000)
    try:
        out = rollback.execute(_try(make_context, "rollback", 1))
    except Exception as e:  # noqa: BLE001
        out = str(e)
    assert DeltaTable(uri).latest_version() == 1
    assert isinstance(out, dict) and not out["committed"] or "allow_after_latest" not in out, out


def test_a_guarded_retry_whose_try_restored_nothing_still_refuses_over_another_dags_append(make_table, make_context):
    """The other side: try 1 restored nothing (it failed before committing), another DAG appended: the guard
    refuses try 2 (DeltaRollbackRefusedError, nothing written); the other DAG's append is not undone."""
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators import DeltaRestoreOperator
    from airflow_provider_delta.operators.restore import DeltaRollbackRefusedError
    table = make_table("a", commits=2)
    uri = table.storage.root
    other = {"dag_id": "ingest", "task_id": "append", "run_id": "scheduled__x", "try_number": 1}
    DeltaTableHook().write_table(uri, pa.table({"id": [777], "day": ["2026-01-09"]}), job=other)   # version 3
    rollback = DeltaRestoreOperator(task_id="rollback", table_uri=uri, version=1, expected_version=2)
    with pytest.raises(DeltaRollbackRefusedError):
        rollback.execute(_try(make_context, "rollback", 2))
    assert DeltaTable(uri).latest_version() == 3 and 777 in _ids(uri)


def test_a_timestamp_rollback_after_the_latest_commit_says_what_to_pass(make_table, make_context):
    """The message names what the operator takes (a time at or before the latest commit, or the latest version);
    nothing written."""
    from airflow_provider_delta.log import TimestampOutOfRangeError
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=1)
    uri = table.storage.root
    latest_ts = DeltaTable(uri).history(limit=1)[0]["timestamp"]
    rollback = DeltaRestoreOperator(task_id="rollback", table_uri=uri, timestamp=latest_ts + 60_000)
    with pytest.raises(TimestampOutOfRangeError) as raised:
        rollback.execute(_try(make_context, "rollback", 1))
    assert "version=1" in str(raised.value) and "Nothing was written" in str(raised.value)
    assert "allow_after_latest" not in str(raised.value) and DeltaTable(uri).latest_version() == 1


def test_a_cleaned_up_pair_commit_undone_by_a_restore_still_in_the_log_is_not_skipped_silently(tmp_path):
    from airflow_provider_delta.hooks import DeltaTableHook
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, SCHEMA)                                        # 0
    _write(table, [1], app_id="load", app_version=1000)                           # 1: the pair
    table.restore(version=0)                                                      # 2: undoes it
    table.checkpoint(2)
    _write(table, [5])                                                            # 3
    deleted = table.cleanup_metadata(retention_ms=0, now_ms=int(time.time() * 1000) + 3 * 86_400_000)["deleted"]
    assert sorted(deleted) == ["_delta_log/00000000000000000000.json", "_delta_log/00000000000000000001.json"]
    assert DeltaTable(uri).snapshot().transaction_version("load") == 1000 and _ids(uri) == [5]
    try:
        out = DeltaTableHook().commit_files(uri, app_id="load", txn_version=1000)
    except PairUndoneByRestoreError as e:                                         # undecided is one too
        out = type(e).__name__
    assert out != 3, "skipped: the run reports success for rows that are not in the table"
    assert DeltaTable(uri).latest_version() == 3 and _ids(uri) == [5]


DAGS = __import__("pathlib").Path(__file__).parent / "review_s12_rv_restore_dags"


def test_under_dag_test_a_guarded_rollback_retry_reports_its_restore(make_table, run_dag):
    table = make_table("a", commits=3)
    uri = table.storage.root
    report = run_dag("rv_s12_guarded_rollback_retry", env={"DELTA_TEST_TABLE": uri}, dags_folder=DAGS)
    assert DeltaTable(uri).latest_version() == 5 and 500 in _ids(uri)
    assert report.tasks["rollback"] == "success", report.output[-3000:]


def test_under_dag_test_a_mapped_rollback_retry_reports_its_restore(make_table, run_dag):
    """Held: a mapped rollback (map index 0) under dag.test finds its try 1's RESTORE under the append."""
    table = make_table("a", commits=3)
    uri = table.storage.root
    report = run_dag("rv_s12_mapped_rollback_retry", env={"DELTA_TEST_TABLE": uri}, dags_folder=DAGS)
    assert DeltaTable(uri).latest_version() == 5 and 500 in _ids(uri), report.output[-3000:]
    assert set(report.tasks.values()) == {"success"}, (report.tasks, report.output[-3000:])
