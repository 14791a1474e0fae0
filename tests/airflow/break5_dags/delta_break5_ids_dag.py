"""A dotted DAG id, a task group and a mapped writer that loses its worker after staging, for
tests/airflow/test_break_s9_ids_airflow.py: the retry of each mapped instance must find the member its
first try staged under its 'dag:group.task[i]' writer key and stage nothing."""
from __future__ import annotations

import os
from datetime import datetime, timedelta

import pyarrow as pa
from airflow.sdk import DAG, TaskGroup, task
from airflow.sdk.exceptions import AirflowException

from airflow_provider_delta.operators import DeltaBeginTransactionOperator, DeltaPublishTransactionOperator

TABLES = os.environ.get("DELTA_BREAK5_TABLES", "/nonexistent/a,/nonexistent/b").split(",")
CONN = "delta_wap_test"
BEGUN = "{{ ti.xcom_pull(task_ids='begin') }}"


@task(retries=1, retry_delay=timedelta(0))
def load(table: str, tx_id: str = BEGUN) -> int:
    from airflow.sdk import get_current_context

    from airflow_provider_delta.hooks import DeltaTableHook
    version = DeltaTableHook(CONN).stage_write(tx_id, table, pa.table({"id": [7], "day": ["2026-02-01"]}))
    if get_current_context()["ti"].try_number == 1:
        raise AirflowException(f"worker lost after staging {table}")
    return version


with DAG("sales.daily", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    begin = DeltaBeginTransactionOperator(task_id="begin", delta_conn_id=CONN)
    with TaskGroup("grp"):
        staged = load.partial(tx_id=begin.output).expand(table=TABLES)
    staged >> DeltaPublishTransactionOperator(task_id="publish", transaction_id=BEGUN, delta_conn_id=CONN)
