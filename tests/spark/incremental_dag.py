"""DAG ``incremental_dag`` of tests/spark/test_incremental_spark.py: three incremental consumers of one
change-feed table with the default ``app_id``, as after an upgrade from 0.1.0.

``apply`` (one task), ``apply_mapped`` (a mapped task, index 0) and ``apply_both`` (whose output holds
a position under both its new and its former id) append the source's pending changes with
``DeltaSparkSubmitOperator(input_changes=True)``. The tables' URIs come from ``INCREMENTAL_SOURCE`` and
``INCREMENTAL_OUT_APPLY`` / ``_APPLY_MAPPED`` / ``_APPLY_BOTH``.
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_delta.operators import DeltaSparkSubmitOperator

SOURCE = os.environ.get("INCREMENTAL_SOURCE", "/nonexistent/source")


def out(task_id: str) -> str:
    return os.environ.get(f"INCREMENTAL_OUT_{task_id.upper()}", f"/nonexistent/{task_id}")


with DAG("incremental_dag", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
    for task_id in ("apply", "apply_both"):
        DeltaSparkSubmitOperator(task_id=task_id, input_table_uri=SOURCE, input_changes=True,
                                 output_table_uri=out(task_id), transform="identity", conn_id="spark_not_defined")
    DeltaSparkSubmitOperator.partial(task_id="apply_mapped", input_table_uri=SOURCE, input_changes=True,
                                     transform="identity", conn_id="spark_not_defined").expand(
        output_table_uri=[out("apply_mapped")])
