"""Integration DAG: many small appends, then OPTIMIZE (compaction, then Z-order) before vacuum.

The table path comes from ``DELTA_TEST_TABLE`` (set by the test that runs this DAG).
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.operators import DeltaOptimizeOperator, DeltaVacuumOperator

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")
ASSET = to_asset(table_uri=TABLE)

with DAG("delta_optimize", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    compact = DeltaOptimizeOperator(task_id="compact", table_uri=TABLE, target_size="{{ '64mb' }}", outlets=[ASSET])
    zorder = DeltaOptimizeOperator(task_id="zorder", table_uri=TABLE, z_order_by="id", target_size="64mb")
    vacuum = DeltaVacuumOperator(task_id="vacuum", table_uri=TABLE)
    compact >> zorder >> vacuum
