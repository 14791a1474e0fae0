"""Integration DAG: run semantics and ``@task.delta_snapshot`` under dag.test() (one run, to save time).

``mark_interval_committed`` records, as an earlier try would have, the default exactly-once
pair of ``ingest`` for this run's data interval; ``ingest`` then submits nothing and must
leave its outlet without an event. ``pin`` emits one, so the run does record events.
``count_rows`` (the provider's task decorator) gets the pinned version as a snapshot, writes
to the table itself and counts its snapshot again: the snapshot does not move.
The table path comes from ``DELTA_TEST_TABLE``; with ``DELTA_TEST_FORMER_ID=1`` the pair is recorded
under the id releases before 0.2.0 gave the task (``delta_recommit.ingest@<run key>``), as a run
committed before an upgrade and cleared after it.
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, get_current_context, task

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.hooks.run_identity import run_app_id, run_app_version
from airflow_provider_delta.operators import DeltaTimeTravelSnapshotOperator
from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")
TASK_KEY = "delta_recommit.ingest" if os.environ.get("DELTA_TEST_FORMER_ID") == "1" else "delta_recommit:ingest"
ASSET = to_asset(table_uri=TABLE)

with DAG("delta_recommit", schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False):

    @task
    def mark_interval_committed() -> str:
        from airflow_provider_delta.log import DeltaTable
        context = get_current_context()
        app_id = run_app_id(TASK_KEY, context)
        with DeltaTable(TABLE).transaction(operation="WRITE") as txn:
            txn.set_txn(app_id, run_app_version(context))
        return app_id

    ingest = DeltaSparkSubmitOperator(task_id="ingest", output_table_uri=TABLE, transform="identity",
                                      outlets=[ASSET])
    pin = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=TABLE, outlets=[ASSET])

    @task.delta_snapshot(table_uri=TABLE, version="{{ ti.xcom_pull(task_ids='pin')['version'] }}")
    def count_rows(snapshot) -> dict:
        import pyarrow as pa

        from airflow_provider_delta.log import DeltaTable
        rows = snapshot.to_pyarrow().num_rows
        DeltaTable(TABLE).write(pa.table({"id": [3]}))
        return {"version": snapshot.version, "rows": rows, "after_write": snapshot.to_pyarrow().num_rows}

    mark_interval_committed() >> ingest >> pin >> count_rows()
