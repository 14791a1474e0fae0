"""Break review s10: retried clone/restore tasks (42554e0, 3d2e883) and the task identity 'dag:task[i]'
(run_identity). Real tables; the operators' execute with the suite's recording task instance, and real
DAG runs (dag.test) for the identities."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, TableAlreadyExistsError


def _retry(make_context, task_id: str, try_number: int = 2) -> dict:
    ctx = make_context(task_id)
    ctx["ti"].try_number = try_number
    return ctx


# ------------------------------------------------------------------ clone
@pytest.mark.parametrize("spelling", ["file-uri", "trailing-slash", "dot-segment"])
def test_a_retried_clone_recognises_its_clone_of_the_source_spelled_otherwise(make_table, make_context, tmp_path,
                                                                               spelling):
    """The retry renders source_uri in another spelling of the same location (a connection's base URI
    plus a relative path, a file: URI): still this task run's clone of this source, reported, not refused."""
    from airflow_provider_delta.operators import DeltaCloneOperator
    src = make_table("a", commits=2)
    root = src.storage.root
    other = {"file-uri": f"file://{root}", "trailing-slash": root + "/",
             "dot-segment": f"{tmp_path}/./a"}[spelling]
    target = str(tmp_path / "clone")
    first = DeltaCloneOperator(task_id="clone", source_uri=root, table_uri=target, version=1) \
        .execute(make_context("clone"))
    out = DeltaCloneOperator(task_id="clone", source_uri=other, table_uri=target, version="1") \
        .execute(_retry(make_context, "clone"))
    assert (out["version"], out["source_version"]) == (first["version"], first["source_version"]) == (0, 1)
    assert DeltaTable(target).latest_version() == 0


def test_a_retried_clone_into_a_target_someone_else_cloned_is_refused(make_table, make_context, tmp_path):
    """The target exists as another task's (or another run's) clone of the same source and version: not ours."""
    from airflow_provider_delta.operators import DeltaCloneOperator
    src = make_table("a", commits=1)
    target = str(tmp_path / "clone")
    DeltaCloneOperator(task_id="other_clone", source_uri=src.storage.root, table_uri=target) \
        .execute(make_context("other_clone"))
    with pytest.raises(TableAlreadyExistsError):
        DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target) \
            .execute(_retry(make_context, "clone"))
    assert DeltaTable(target).latest_version() == 0


def test_a_retried_clone_of_the_latest_after_the_source_moved_on_reports_its_clone(make_table, make_context,
                                                                                   tmp_path):
    """No version given: the first try cloned the then-latest version 2; the source has moved on to 3
    since. The retry's clone is still the one the task run made (reported, nothing cloned again)."""
    from airflow_provider_delta.operators import DeltaCloneOperator
    src = make_table("a", commits=2)
    target = str(tmp_path / "clone")
    DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target).execute(make_context("clone"))
    src.write(pa.table({"id": [99], "day": ["2026-01-09"]}))
    out = DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target) \
        .execute(_retry(make_context, "clone"))
    assert out["source_version"] == 2 and DeltaTable(target).latest_version() == 0


# ------------------------------------------------------------------ restore
def test_a_retried_unguarded_rollback_restores_once(make_table, make_context):
    """Without a guard the retry did not look for its earlier RESTORE: it restored again, and when another
    DAG appended in between, the second RESTORE undid that append (the first did not). The retry now
    reports its earlier try's RESTORE (found among the newest commits) and commits nothing."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=3)
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version=1) \
        .execute(make_context("rollback"))
    assert DeltaTable(table.uri).latest_version() == 4
    DeltaTable(table.uri).write(pa.table({"id": [77], "day": ["2026-01-09"]}))   # another DAG, version 5
    out = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version=1) \
        .execute(_retry(make_context, "rollback"))
    assert (out["version"], out["restored_version"], out["committed"]) == (4, 1, True)
    assert DeltaTable(table.uri).latest_version() == 5
    assert 77 in DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist()


def test_a_retried_unguarded_rollback_to_another_target_restores(make_table, make_context):
    """The earlier try restored version 1; this try asks for version 2 (its argument rendered otherwise):
    not the same rollback, so it restores."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=3)
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version=1) \
        .execute(make_context("rollback"))
    out = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version=2) \
        .execute(_retry(make_context, "rollback"))
    assert (out["version"], out["restored_version"], out["committed"]) == (5, 2, True)


def test_a_first_unguarded_rollback_after_another_runs_restore_restores(make_table, make_context):
    """Another DAG run of the same task restored version 1: this run's first try restores on its own."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=3)
    other = make_context("rollback")
    other["ti"].run_id = other["run_id"] = "scheduled__other"
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version=1).execute(other)
    DeltaTable(table.uri).write(pa.table({"id": [77], "day": ["2026-01-09"]}))
    out = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version=1) \
        .execute(_retry(make_context, "rollback"))
    assert (out["version"], out["committed"]) == (6, True)


def test_a_retried_rollback_does_not_take_another_dags_restore_for_its_own(make_table, make_context):
    """Another DAG run restored the same version right after our guard's version: its RESTORE is not ours."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    from airflow_provider_delta.operators.restore import DeltaRollbackRefusedError
    table = make_table("a", commits=3)
    other = make_context("rollback")
    other["ti"].dag_id = "another_dag"
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version=1,
                         expected_version=3).execute(other)
    with pytest.raises(DeltaRollbackRefusedError):
        DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version="1",
                             expected_version="3").execute(_retry(make_context, "rollback"))
    assert DeltaTable(table.uri).latest_version() == 4


def test_a_retried_rollback_with_string_versions_recognises_its_restore(make_table, make_context):
    """Templated arguments render to strings: version '1', expected_version '3'."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=3)
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version="1",
                         expected_version="3").execute(make_context("rollback"))
    out = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version="1",
                               expected_version="3").execute(_retry(make_context, "rollback"))
    assert (out["version"], out["restored_version"], out["committed"]) == (4, 1, True)
    assert DeltaTable(table.uri).latest_version() == 4


# ------------------------------------------------------------------ task identity in real DAG runs
@pytest.mark.airflow
@pytest.mark.parametrize("manual", [False, True], ids=["logical-date", "manual-run-id"])
def test_sensors_filter_a_mapped_writer_in_a_group_of_a_dotted_dag_in_both_spellings(run_dag, tmp_path, manual):
    """Real Airflow (dag.test): DAG 'sales.daily', group 'grp', mapped 'load' committing txn ids
    'sales.daily:grp.load[i]@<run key>' (with no logical date the run key is the manual run id, colons
    and all). Sensors (one deferred, through the trigger) filtering by 'sales.daily:grp.load', the old
    spelling 'sales.daily.grp.load' and one instance '...[1]' see the commits; a group prefix and a
    task id that is a prefix of the task's match nothing (soft-failed: skipped)."""
    from pathlib import Path

    from airflow_provider_delta.log import DeltaTable
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    env = {"DELTA_S10_TABLE": table.uri}
    if manual:
        env["DELTA_DAG_RUN_NO_LOGICAL_DATE"] = "1"
    report = run_dag("sales.daily", env=env, dags_folder=Path(__file__).resolve().parent / "break_s10_dags")
    assert report.state == "success", (report.tasks, report.output[-4000:])
    assert report.xcoms["grp.load"]["return_value"].startswith("sales.daily:grp.load[")
    counts = {k: report.xcoms.get(k, {}).get("return_value", {}).get("count")
              for k in ("new_spelling", "old_spelling", "one_instance", "deferred_old_spelling")}
    assert counts == {"new_spelling": 2, "old_spelling": 2, "one_instance": 1, "deferred_old_spelling": 2}, counts
    assert report.tasks["group_prefix"] == report.tasks["other_task"] == "skipped", report.tasks
