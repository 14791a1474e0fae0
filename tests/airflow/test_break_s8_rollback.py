"""s8-break-sm review of the guarded rollback (#24, merge e28acab): a retry of the rollback task."""
from __future__ import annotations

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.operators import DeltaRestoreOperator


def ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


def test_retry_of_a_guarded_rollback_whose_restore_landed_succeeds_and_announces_it(make_table, make_context):
    table = make_table(commits=1)
    uri = table.storage.root
    own_load = DeltaTable(uri).write(pa.table({"id": [-1], "day": ["2026-01-01"]}))   # the run's bad load, v2

    def rollback() -> DeltaRestoreOperator:
        return DeltaRestoreOperator(task_id="rollback", table_uri=uri, version=str(own_load - 1),
                                    expected_version=str(own_load))
    rollback().execute(make_context("rollback"))     # try 1 commits the RESTORE (v3), then its worker dies
    assert ids(uri) == [0, 1]
    ctx = make_context("rollback")
    ctx["ti"].try_number = 2
    out = rollback().execute(ctx)                    # try 2 (Airflow retries a task whose worker was lost)
    assert out["version"] == own_load + 1 and ids(uri) == [0, 1]
    assert DeltaTable(uri).latest_version() == own_load + 1


def test_retry_of_a_clone_whose_commit_landed_succeeds(make_table, make_context, tmp_path):
    from airflow_provider_delta.operators import DeltaCloneOperator
    source = make_table(commits=1)
    target = str(tmp_path / "clone")

    def clone() -> DeltaCloneOperator:
        return DeltaCloneOperator(task_id="clone", source_uri=source.storage.root, table_uri=target)
    clone().execute(make_context("clone"))           # try 1 commits the clone, then its worker dies
    ctx = make_context("clone")
    ctx["ti"].try_number = 2
    out = clone().execute(ctx)
    assert out["version"] == 0 and DeltaTable(target).latest_version() == 0
