"""Integration DAG: a Spark commit task whose interval is already in the table emits no asset event.

``mark_interval_committed`` records, as an earlier try would have, the default exactly-once
pair of ``ingest`` for this run's data interval; ``ingest`` then submits nothing and must
leave its outlet without an event. ``pin`` emits one, so the run does record events.
The table path comes from ``DELTA_TEST_TABLE``.
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
ASSET = to_asset(table_uri=TABLE)

with DAG("delta_recommit", schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False):

    @task
    def mark_interval_committed() -> str:
        from airflow_provider_delta.log import DeltaTable
        context = get_current_context()
        app_id = run_app_id("delta_recommit.ingest", context)
        with DeltaTable(TABLE).transaction(operation="WRITE") as txn:
            txn.set_txn(app_id, run_app_version(context))
        return app_id

    ingest = DeltaSparkSubmitOperator(task_id="ingest", output_table_uri=TABLE, transform="identity",
                                      outlets=[ASSET])
    pin = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=TABLE, outlets=[ASSET])
    mark_interval_committed() >> ingest >> pin
