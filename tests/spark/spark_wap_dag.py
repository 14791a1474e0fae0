"""DAG ``spark_wap`` of tests/spark/test_spark_wap.py: write-audit-publish with two Spark writers.

Two DeltaSparkSubmitOperator tasks stage their catalog-managed tables into the group that
``begin`` opened (its id by XCom), the audit checks the staged view (the totals add up to the
orders; ``{"fail_audit": true}`` in the run's conf fails it), then publish, or abort on a failure.
The tables' URIs come from ``SPARK_WAP_SOURCE`` / ``SPARK_WAP_ORDERS`` / ``SPARK_WAP_TOTALS``.
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, task

from airflow_provider_delta.hooks import DeltaTableHook
from airflow_provider_delta.operators import (DeltaAbortTransactionOperator, DeltaBeginTransactionOperator,
                                              DeltaPublishTransactionOperator, DeltaSparkSubmitOperator)

CONN = "delta_spark_wap"
TX = "{{ ti.xcom_pull(task_ids='begin') }}"
SOURCE, ORDERS, TOTALS = (os.environ.get(f"SPARK_WAP_{n}", f"/nonexistent/{n}") for n in ("SOURCE", "ORDERS", "TOTALS"))
TOTALS_SQL = "SELECT customer, SUM(amount) AS total FROM source GROUP BY customer"

with DAG("spark_wap", schedule=None, start_date=datetime(2026, 1, 1), catchup=False) as dag:
    begin = DeltaBeginTransactionOperator(task_id="begin", delta_conn_id=CONN)
    write_orders = DeltaSparkSubmitOperator(
        task_id="write_orders", input_table_uri=SOURCE, output_table_uri=ORDERS, transform="identity",
        transaction_id=TX, delta_conn_id=CONN, conn_id="spark_not_defined")
    write_totals = DeltaSparkSubmitOperator(
        task_id="write_totals", input_table_uri=SOURCE, output_table_uri=TOTALS, transform="sql",
        transform_params={"query": TOTALS_SQL}, transaction_id=TX, delta_conn_id=CONN, conn_id="spark_not_defined")

    @task
    def audit(**context) -> int:
        hook, tx = DeltaTableHook(CONN), context["ti"].xcom_pull(task_ids="begin")
        ordered = sum(hook.snapshot(ORDERS, transaction=tx).to_pyarrow().column("amount").to_pylist())
        counted = sum(hook.snapshot(TOTALS, transaction=tx).to_pyarrow().column("total").to_pylist())
        if (context["dag_run"].conf or {}).get("fail_audit") or ordered != counted:
            raise ValueError(f"audit failed: orders {ordered}, totals {counted}")
        return counted

    publish = DeltaPublishTransactionOperator(task_id="publish", transaction_id=TX, delta_conn_id=CONN)
    abort = DeltaAbortTransactionOperator(task_id="abort", transaction_id=TX, delta_conn_id=CONN,
                                          trigger_rule="one_failed")
    checked = audit()
    begin >> [write_orders, write_totals] >> checked >> publish
    [write_orders, write_totals, checked] >> abort
