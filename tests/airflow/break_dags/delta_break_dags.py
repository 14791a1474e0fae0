"""DAGs of the airflow-prod break review, run with dag.test() by tests/airflow/test_break_airflow_prod.py.

``DELTA_TEST_TABLE``: a table with files a zero-retention vacuum would delete.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG, task

from airflow_provider_delta.operators import DeltaVacuumOperator

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")
START = datetime(2026, 1, 1)
NO_RETRY_SOON = {"retries": 3, "retry_delay": timedelta(hours=1)}

# dynamic task mapping: the flag reaches the operator's constructor only when the task runs
with DAG("delta_break_mapped_dry_run", schedule=None, start_date=START, catchup=False):
    @task
    def dry_runs() -> list:
        return ["None"]                               # what an upstream task computed from a missing conf key

    DeltaVacuumOperator.partial(task_id="vacuum", table_uri=TABLE, retention_hours=0, enforce_retention=False,
                                **NO_RETRY_SOON).expand(dry_run=dry_runs())

# a storage that does not answer (a transient fault): the task must stay retryable
with DAG("delta_break_transient_storage", schedule=None, start_date=START, catchup=False):
    DeltaVacuumOperator(task_id="vacuum", table_uri="s3://bucket/orders", delta_conn_id="dead_s3",
                        retries=1, retry_delay=timedelta(seconds=1))

# a table property misspelt in a rendered value: refused before spark-submit, without retry
with DAG("delta_break_spark_bad_property", schedule=None, start_date=START, catchup=False):
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    DeltaSparkSubmitOperator(task_id="write", output_table_uri=TABLE, transform="identity",
                             input_table_uri=TABLE + "-input", app_id="break.props", app_version=1,
                             table_properties={"delta.appendOnly": "{{ 'ture' }}"}, **NO_RETRY_SOON)
