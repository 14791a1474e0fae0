"""Example DAG ``delta_test_copy``: try a change on a zero-copy clone of ``orders``; orders never changes.

``clone_orders`` (``DeltaCloneOperator``) creates a shallow clone of orders, at its latest
version, in a new folder per run under ``<base>/test_copies/``: a table whose files are
orders' own, referenced where they are, so it costs one commit whatever the size of orders.
The source is read through the ``delta_example`` connection (the managed table's commit
owner); the clone is a plain filesystem table. ``try_change`` appends to the clone (the
change under test) and reports both tables' versions: writes to a clone never touch its
source. A vacuum of orders may delete files a clone still reads: drop test copies when done.
Not scheduled: ``airflow dags trigger delta_test_copy``.
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, task

from airflow_provider_delta.operators import DeltaCloneOperator
from example_settings import BASE, ORDERS, ORDERS_CONN_ID

#: one folder per run (a clone is created in a new or empty location)
TEST_COPY = os.path.join(BASE, "test_copies", "orders_{{ run_id | replace(':', '-') | replace('+', '-') }}")


@task
def try_change(copy: dict) -> dict:
    """Append the clone's first rows to it again (a stand-in for the change under test)."""
    from airflow_provider_delta.hooks import DeltaTableHook

    hook = DeltaTableHook()
    rows = hook.snapshot(copy["table_uri"]).to_pyarrow().slice(0, 10)
    copy_version = hook.write_table(copy["table_uri"], rows)
    return {"copy_version": copy_version, "rows_added": rows.num_rows,
            "orders_version": DeltaTableHook(ORDERS_CONN_ID).latest_version(ORDERS)}


with DAG("delta_test_copy", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         tags=["delta", "example"], doc_md=__doc__):
    # [START howto_operator_delta_clone]
    clone = DeltaCloneOperator(
        task_id="clone_orders",
        source_uri=ORDERS,
        source_conn_id=ORDERS_CONN_ID,     # the source's connection (its commit owner); the clone needs none
        table_uri=TEST_COPY,               # version= or timestamp= clone an earlier version
    )
    # [END howto_operator_delta_clone]
    try_change(clone.output)
