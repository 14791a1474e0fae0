"""Breaking the rollback pattern of dags_examples/delta_load_with_rollback.py (break-restore review)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.operators import DeltaRestoreOperator


def ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


@pytest.mark.xfail(strict=True, reason="the example's rollback restores the version remembered before its load: a "
                   "load another DAG run (the DAG has no max_active_runs=1) committed and published meanwhile is "
                   "rolled back with it")
def test_rollback_of_one_run_keeps_the_load_another_run_published(make_table, make_context):
    table = make_table(commits=1)                      # v0 create, v1 ids [0, 1]
    uri = table.storage.root
    remembered_by_a = DeltaTable(uri).latest_version()                              # run A: remember_version
    DeltaTable(uri).write(pa.table({"id": [-1], "day": ["2026-01-01"]}))             # run A: load (bad)
    DeltaTable(uri).write(pa.table({"id": [7], "day": ["2026-01-01"]}))              # run B: load, check ok, publish
    DeltaRestoreOperator(task_id="rollback", table_uri=uri,                          # run A: check fails, rollback
                         version=str(remembered_by_a)).execute(make_context("rollback"))
    assert ids(uri) == [0, 1, 7]                       # only run A's bad load is gone
