"""Integration DAG: backfill a managed-commit table, then checkpoint it.

The table is ``orders`` below the base URI of connection ``delta_managed``, whose
``commit_owner`` extra names the SQLite connection ``owner_db`` (both defined by the
test through ``AIRFLOW_CONN_*`` variables). ``DELTA_TEST_FS_TABLE`` is a filesystem
table on which backfill must be a no-op.
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, Asset

from airflow_provider_delta.operators import DeltaBackfillOperator, DeltaCheckpointOperator

FS_TABLE = os.environ.get("DELTA_TEST_FS_TABLE", "/nonexistent/delta-test-table")
ASSET = Asset(os.environ.get("DELTA_TEST_ASSET", "delta:///nonexistent/orders"))

with DAG("delta_managed", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    backfill = DeltaBackfillOperator(task_id="backfill", table_uri="orders", delta_conn_id="delta_managed",
                                     outlets=[ASSET])
    checkpoint = DeltaCheckpointOperator(task_id="checkpoint", table_uri="orders",
                                         delta_conn_id="delta_managed", outlets=[ASSET])
    noop = DeltaBackfillOperator(task_id="backfill_filesystem_table", table_uri=FS_TABLE)
    backfill >> checkpoint
