"""Write-audit-publish DAGs with a begin that is retried and a transaction id that renders to nothing.

``DELTA_TEST_TABLE`` is a catalog-managed table of the catalog that the ``delta_wap_test``
connection names. Run with ``dag.test()`` by tests/airflow/test_wap_arguments.py.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta

import pyarrow as pa
from airflow.sdk import DAG, task
from airflow.sdk.exceptions import AirflowException

from airflow_provider_delta.operators import (DeltaAbortTransactionOperator, DeltaBeginTransactionOperator,
                                              DeltaPublishTransactionOperator)

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")
CONN = "delta_wap_test"
START = datetime(2026, 1, 1)
BEGUN = "{{ ti.xcom_pull(task_ids='begin') }}"
#: what a DAG author gets from a wrong task id: the template renders "None"
NO_SUCH_XCOM = "{{ ti.xcom_pull(task_ids='no_such_task') }}"


class BeginThenLoseTheWorker(DeltaBeginTransactionOperator):
    """A begin whose first try records the transaction, then dies before Airflow hears of it."""

    def execute(self, context):
        tx_id = super().execute(context)
        if context["ti"].try_number == 1:
            raise AirflowException(f"worker lost after beginning {tx_id}")
        return tx_id


@task
def write(tx_id: str) -> int:
    from airflow_provider_delta.hooks import DeltaTableHook
    return DeltaTableHook(CONN).stage_write(tx_id, TABLE, pa.table({"id": [7], "day": ["2026-02-01"]}))


@task.delta_snapshot(table_uri=TABLE, delta_conn_id=CONN, transaction=BEGUN)
def audit(snapshot) -> int:
    return snapshot.to_pyarrow().num_rows


with DAG("delta_wap_retried_begin", schedule=None, start_date=START, catchup=False):
    begin = BeginThenLoseTheWorker(task_id="begin", delta_conn_id=CONN, retries=1, retry_delay=timedelta(0))
    staged = write(begin.output)
    staged >> audit() >> DeltaPublishTransactionOperator(task_id="publish", transaction_id=BEGUN,
                                                         delta_conn_id=CONN)


# a wrong task id in the templates: the audit reads the latest table, publish and abort must fail at once
for native in (False, True):
    with DAG(f"delta_wap_missing_transaction{'_native' if native else ''}", schedule=None, start_date=START,
             catchup=False, render_template_as_native_obj=native):
        begin = DeltaBeginTransactionOperator(task_id="begin", delta_conn_id=CONN)
        staged = write(begin.output)

        @task.delta_snapshot(table_uri=TABLE, delta_conn_id=CONN, transaction=NO_SUCH_XCOM)
        def audit_latest(snapshot) -> int:
            return snapshot.to_pyarrow().num_rows

        checked = audit_latest()
        staged >> checked
        checked >> DeltaPublishTransactionOperator(task_id="publish", transaction_id=NO_SUCH_XCOM, delta_conn_id=CONN,
                                                   retries=3, retry_delay=timedelta(hours=1))
        checked >> DeltaAbortTransactionOperator(task_id="abort", transaction_id=NO_SUCH_XCOM, delta_conn_id=CONN,
                                                 retries=3, retry_delay=timedelta(hours=1))
