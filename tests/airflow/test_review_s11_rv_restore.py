"""Review (session 11, s11-rv-restore) of the restore retry search (9bd0420) and of the #27 pair rule on the
hook path. Findings as strict xfails. Real tables; the operator's execute with the suite's recording task
instance (as tests/airflow/test_final_s10_maint_airflow.py): dag.test cannot clear a run with a new try
(a second dag.test of the same run starts at try 1 again)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, PairUndoneByRestoreError

SCHEMA = pa.schema([("id", pa.int64())])


def _ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


def test_the_hook_with_a_users_app_id_following_the_message_writes(tmp_path):
    from airflow_provider_delta.hooks import DeltaTableHook
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, SCHEMA)                                                     # version 0
    table.write(pa.table({"id": pa.array([1], pa.int64())}), app_id="orders_load", app_version=1000)  # 1
    table.write(pa.table({"id": pa.array([2], pa.int64())}), app_id="orders_load", app_version=2000)  # 2
    table.restore(version=0)                                                                   # 3: both undone
    hook = DeltaTableHook()
    with pytest.raises(PairUndoneByRestoreError) as raised:
        hook.commit_files(uri, app_id="orders_load", txn_version=1000)
    text = str(raised.value)
    assert "RESTORE at version 3" in text and DeltaTable(uri).latest_version() == 3
    retry = 1001                                                  # "a higher app_version (more than 1000)"
    try:
        version = hook.commit_files(uri, app_id="orders_load", txn_version=retry)
    except PairUndoneByRestoreError:
        version = None
    assert "2000" in text or version == 4, (text, version)       # it names 2000, or the told re-run commits


def _try(make_context, task_id: str, try_number: int) -> dict:
    ctx = make_context(task_id)
    ctx["ti"].try_number = try_number
    return ctx


@pytest.mark.parametrize("committer, restores_again", [("load", True), ("after", False)])
def test_a_run_cleared_from_a_hook_load_down_rolls_the_reload_back(make_table, make_context, committer,
                                                                   restores_again):
    """A @task's DeltaTableHook write records its running task: the upstream load's reload makes the retried
    rollback restore again; a downstream task's write (built on the RESTORE) does not: restoring would undo it."""
    from airflow.providers.standard.operators.empty import EmptyOperator
    from airflow.sdk import DAG
    from airflow.sdk.execution_time.context import set_current_context

    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=3)
    uri = table.storage.root
    with DAG("test_dag", schedule=None):
        rollback = DeltaRestoreOperator(task_id="rollback", table_uri=uri, version=1)
        EmptyOperator(task_id="load") >> rollback >> EmptyOperator(task_id="after")
    rollback.execute(_try(make_context, "rollback", 1))                                # version 4
    # the run cleared from the load down: the load's @task body runs again (as a user writes it), inside its
    # running task (the task runner sets its context, as here); or a downstream @task writes after the rollback
    with set_current_context(_try(make_context, committer, 2)):
        DeltaTableHook().write_table(uri, pa.table({"id": [666], "day": ["2026-01-09"]}))   # version 5
    assert DeltaTable(uri).history(limit=1)[0]["job"]["task_id"] == committer
    out = rollback.execute(_try(make_context, "rollback", 2))
    if restores_again:
        assert out["committed"] and out["version"] == 6 and 666 not in _ids(uri)
    else:
        assert out["version"] == 4 and DeltaTable(uri).latest_version() == 5 and 666 in _ids(uri)


# ---------------------------------------------------------------- the other side of the fixes above

def _two_runs(tmp_path) -> str:
    """Version 1: orders_load 1000 (id 1); 2: orders_load 2000 (id 2)."""
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, SCHEMA)
    table.write(pa.table({"id": pa.array([1], pa.int64())}), app_id="orders_load", app_version=1000)
    table.write(pa.table({"id": pa.array([2], pa.int64())}), app_id="orders_load", app_version=2000)
    return uri


def test_the_hook_skips_when_the_commit_it_rests_on_is_live(tmp_path):
    """No RESTORE, or one that undid only the later run: a lower version's skip stands (nothing written, no
    error); one that no commit holds rests on the recorded 2000, live: skipped too."""
    from airflow_provider_delta.hooks import DeltaTableHook
    uri = _two_runs(tmp_path)
    hook = DeltaTableHook()
    assert hook.commit_files(uri, app_id="orders_load", txn_version=1500) == 2
    DeltaTable(uri).restore(version=1)                                  # 3: undoes 2000 only
    assert hook.commit_files(uri, app_id="orders_load", txn_version=1000) == 3    # its own commit is live
    assert DeltaTable(uri).latest_version() == 3 and _ids(uri) == [1]


def test_the_hook_refuses_a_skip_resting_on_an_undone_higher_version(tmp_path):
    """A version no commit holds, below the recorded 2000 whose commit a RESTORE undid: typed error naming 2000,
    nothing written."""
    from airflow_provider_delta.hooks import DeltaTableHook
    uri = _two_runs(tmp_path)
    DeltaTable(uri).restore(version=1)                                  # 3: undoes 2000
    with pytest.raises(PairUndoneByRestoreError) as raised:
        DeltaTableHook().commit_files(uri, app_id="orders_load", txn_version=1500)
    text = str(raised.value)
    assert "more than 2000" in text and "no commit holds txnVersion=1500" in text and raised.value.version == 2
    assert DeltaTable(uri).latest_version() == 3 and _ids(uri) == [1]
    assert DeltaTableHook().commit_files(uri, app_id="orders_load", txn_version=2001) == 4   # as the message says


def test_the_hook_outside_a_task_records_no_job(tmp_path):
    """Called from a script (no running task): the write works and names no run."""
    from airflow_provider_delta.hooks import DeltaTableHook
    uri = _two_runs(tmp_path)
    DeltaTableHook().write_table(uri, pa.table({"id": pa.array([5], pa.int64())}))
    assert DeltaTable(uri).history(limit=1)[0].get("job") is None and 5 in _ids(uri)

