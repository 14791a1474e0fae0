"""Integration DAG: commit with job info, pin snapshots, checkpoint, clean up, vacuum.

The table path comes from ``DELTA_TEST_TABLE`` (set by the test that runs this DAG).
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, get_current_context, task

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.hooks import DeltaTableHook
from airflow_provider_delta.operators import (DeltaCheckpointOperator, DeltaMetadataCleanupOperator,
                                              DeltaTimeTravelSnapshotOperator, DeltaVacuumOperator)
from airflow_provider_delta.operators.base import job_info

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")
ASSET = to_asset(table_uri=TABLE)

with DAG("delta_maintenance", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):

    @task
    def append() -> int:
        import pyarrow as pa
        data = pa.table({"id": [100, 101], "day": ["2026-02-01", "2026-02-01"]})
        return DeltaTableHook().write_table(TABLE, data, job=job_info(get_current_context()))

    appended = append()
    as_of_interval = DeltaTimeTravelSnapshotOperator(
        task_id="snapshot_as_of_interval_end", table_uri=TABLE, timestamp="{{ data_interval_end }}",
        outlets=[ASSET])
    pinned = DeltaTimeTravelSnapshotOperator(
        task_id="snapshot_appended", table_uri=TABLE,
        version="{{ ti.xcom_pull(task_ids='append') }}", manifest_uri="manifests/appended.json")
    checkpoint = DeltaCheckpointOperator(task_id="checkpoint", table_uri=TABLE, parts=2, cleanup=True,
                                         cleanup_dry_run=False,
                                         outlets=[ASSET])
    cleanup = DeltaMetadataCleanupOperator(task_id="cleanup", table_uri=TABLE)
    vacuum = DeltaVacuumOperator(task_id="vacuum", table_uri=TABLE)
    appended >> [as_of_interval, pinned] >> checkpoint >> [cleanup, vacuum]
