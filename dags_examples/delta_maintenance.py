"""Example DAG 3, ``delta_maintenance``: backfill, OPTIMIZE, checkpoint, metadata cleanup and a vacuum dry run.

For each example table: backfill the commits a commit owner still holds (only the managed
``orders`` table has any), compact small files (OPTIMIZE), write a checkpoint (so readers stop replaying the whole
log), report which expired log files cleanup would delete, and list the data
files vacuum would delete. Cleanup and vacuum run as dry runs here; set
``dry_run=False`` to delete.
"""
from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_delta.operators import (DeltaBackfillOperator, DeltaCheckpointOperator,
                                              DeltaMetadataCleanupOperator, DeltaOptimizeOperator,
                                              DeltaVacuumOperator)
from example_settings import CUSTOMER_TOTALS, DAILY_TOTALS, ORDERS, ORDERS_CONN_ID

with DAG("delta_maintenance", schedule="@weekly", start_date=datetime(2026, 1, 1), catchup=False,
         tags=["delta", "example"], doc_md=__doc__):
    for name, uri, conn_id in (("orders", ORDERS, ORDERS_CONN_ID), ("daily_totals", DAILY_TOTALS, None),
                               ("customer_totals", CUSTOMER_TOTALS, None)):
        # [START howto_operator_delta_backfill]
        # a managed-commit table (orders): copy ratified commits a writer left un-backfilled into _delta_log,
        # for readers without the commit owner; a no-op that reports so on the plain tables
        backfill = DeltaBackfillOperator(task_id=f"backfill_{name}", table_uri=uri, delta_conn_id=conn_id)
        # [END howto_operator_delta_backfill]
        # [START howto_operator_delta_optimize]
        # compact small files; the checkpoint after it covers its commit, and vacuum (past the retention)
        # deletes the files it replaced
        optimize = DeltaOptimizeOperator(task_id=f"optimize_{name}", table_uri=uri, delta_conn_id=conn_id)
        # [END howto_operator_delta_optimize]
        # [START howto_operator_delta_maintenance]
        checkpoint = DeltaCheckpointOperator(task_id=f"checkpoint_{name}", table_uri=uri, delta_conn_id=conn_id)
        cleanup = DeltaMetadataCleanupOperator(task_id=f"cleanup_{name}", table_uri=uri, delta_conn_id=conn_id,
                                               dry_run=True)
        vacuum = DeltaVacuumOperator(task_id=f"vacuum_{name}", table_uri=uri, delta_conn_id=conn_id, dry_run=True)
        backfill >> optimize >> checkpoint >> [cleanup, vacuum]
        # [END howto_operator_delta_maintenance]
