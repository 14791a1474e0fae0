"""Example DAG ``delta_write_audit_publish``: two tables written, audited, published together.

The ``delta_wap`` connection names a ``SqlCatalog`` (its ``catalog`` extra; defined in
``example_settings.py``). One task begins a multi-table transaction and hands its id to the
others through XCom; two writer tasks stage the day's orders and the per-customer totals
into it (nothing is visible yet); the audit reads both tables as the staged group leaves
them and checks that the totals add up to the orders; then the group is published: both
tables change at once, or, when the audit fails, the group is aborted and neither changes.
Trigger with ``{"fail_audit": true}`` in the run's conf to see the second path.
"""
from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, task

from airflow_provider_delta.hooks import DeltaTableHook
from airflow_provider_delta.hooks.arguments import flag
from airflow_provider_delta.operators import (DeltaAbortTransactionOperator, DeltaBeginTransactionOperator,
                                              DeltaPublishTransactionOperator)
from example_settings import WAP_CONN_ID, WAP_ORDERS, WAP_TOTALS, ensure_wap_tables

TX_ID = "{{ ti.xcom_pull(task_ids='begin') }}"


def run_day(context) -> str:
    """The run's day: a run triggered by hand (CLI, UI) has no logical date in Airflow 3, so no ``ds``."""
    run = context["dag_run"]
    return (run.logical_date or run.run_after).strftime("%Y-%m-%d")

# [START howto_operator_delta_write_audit_publish]
with DAG("delta_write_audit_publish", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         tags=["delta", "example"], doc_md=__doc__):

    begin = DeltaBeginTransactionOperator(task_id="begin", delta_conn_id=WAP_CONN_ID)

    @task
    def write_orders(transaction_id: str, **context) -> int:
        import pyarrow as pa
        ensure_wap_tables()
        day = run_day(context)
        orders = pa.table({"day": [day] * 3, "customer": ["ann", "bob", "ann"], "amount": [10, 20, 5]})
        return DeltaTableHook(WAP_CONN_ID).stage_write(transaction_id, WAP_ORDERS, orders)

    @task
    def write_totals(transaction_id: str, **context) -> int:
        import pyarrow as pa
        ensure_wap_tables()
        day = run_day(context)
        totals = pa.table({"day": [day, day], "customer": ["ann", "bob"], "total": [15, 20]})
        # "false" from the UI's conf form is no: the conf value is parsed, not read by truthiness
        if flag((context["dag_run"].conf or {}).get("fail_audit", False), "fail_audit"):
            totals = pa.table({"day": [day], "customer": ["ann"], "total": [999]})   # wrong on purpose
        return DeltaTableHook(WAP_CONN_ID).stage_write(transaction_id, WAP_TOTALS, totals)

    @task.delta_snapshot(table_uri=WAP_TOTALS, delta_conn_id=WAP_CONN_ID, transaction=TX_ID)
    def audit(snapshot, **context) -> dict:
        import pyarrow.compute as pc
        day = run_day(context)
        orders = DeltaTableHook(WAP_CONN_ID).snapshot(WAP_ORDERS, transaction=context["ti"].xcom_pull(
            task_ids="begin"))
        o = orders.to_pyarrow(filter=None)
        t = snapshot.to_pyarrow()
        expected = pc.sum(o.filter(pc.equal(o["day"], day))["amount"]).as_py()
        got = pc.sum(t.filter(pc.equal(t["day"], day))["total"]).as_py()
        if expected != got:
            raise ValueError(f"audit failed: totals for {day} add up to {got}, the orders to {expected}")
        return {"orders_version": orders.version, "totals_version": snapshot.version, "amount": got}

    publish = DeltaPublishTransactionOperator(task_id="publish", transaction_id=TX_ID, delta_conn_id=WAP_CONN_ID)
    abort = DeltaAbortTransactionOperator(task_id="abort", transaction_id=TX_ID, delta_conn_id=WAP_CONN_ID,
                                          trigger_rule="one_failed")

    staged = [write_orders(begin.output), write_totals(begin.output)]
    checked = audit()
    staged >> checked >> publish
    [*staged, checked] >> abort
# [END howto_operator_delta_write_audit_publish]
