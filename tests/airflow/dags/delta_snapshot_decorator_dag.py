"""Integration DAG: ``@task.delta_snapshot`` (the provider's task decorator) pins a table for a function.

The function writes to the table itself, then counts its snapshot again: the pinned
snapshot does not move. The table path comes from ``DELTA_TEST_TABLE``.
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, task

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")

with DAG("delta_snapshot_decorator", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):

    @task.delta_snapshot(table_uri=TABLE)
    def count_rows(snapshot) -> dict:
        import pyarrow as pa

        from airflow_provider_delta.log import DeltaTable
        rows = snapshot.to_pyarrow().num_rows
        DeltaTable(TABLE).write(pa.table({"id": [3]}))
        return {"version": snapshot.version, "rows": rows, "after_write": snapshot.to_pyarrow().num_rows}

    count_rows()
