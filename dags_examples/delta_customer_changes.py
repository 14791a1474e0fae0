"""Example DAG 5, ``delta_customer_changes``: process only what changed in ``customers``, exactly once.

``<base>/customers`` has the change data feed on (``delta.enableChangeDataFeed``);
whoever writes it (an application, a notebook, another DAG) updates the
``example_customers`` asset, which schedules this DAG. A run

1. waits for a commit with the commit sensor and pins the version it saw, then
2. appends the changes between the last version it processed and the pinned one
   (inserts, deletes, update pre- and post-images, with ``_commit_version`` and
   ``_commit_timestamp``) to ``<base>/customer_changes``.

The last processed version is not kept in Airflow: every append records
``txn(appId="delta_customer_changes.apply", version=<pinned>)`` in the output, in the
same commit as the rows. A retry after a crash therefore reprocesses nothing twice
and skips nothing, and a run that finds nothing new commits nothing.

The same pattern with Spark: ``DeltaSparkApplicationOperator(input_changes=True, ...)``
hands a Delta Spark application ``startingVersion`` / ``endingVersion`` for
``readChangeFeed`` (``ctx.read_options``), and ``DeltaSparkSubmitOperator(input_changes=True,
...)`` hands the driver-side transform a DataFrame of the changes (docs/guides/change-data-feed.md).
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, task

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.sensors import DeltaCommitSensor
from example_settings import BASE

CUSTOMERS = os.path.join(BASE, "customers")
CUSTOMER_CHANGES = os.path.join(BASE, "customer_changes")
CUSTOMERS_ASSET = to_asset(table_uri=CUSTOMERS, name="example_customers")
#: the consumer's id: the output's txn record under it is the last processed version of customers
APP_ID = "delta_customer_changes.apply"

with DAG("delta_customer_changes", schedule=[CUSTOMERS_ASSET], start_date=datetime(2026, 1, 1), catchup=False,
         tags=["delta", "example"], doc_md=__doc__):

    # [START howto_delta_process_changes]
    wait = DeltaCommitSensor(
        task_id="wait_for_customers",
        table_uri=CUSTOMERS,
        after_version=-1,          # any commit counts; its XCom "version" is the newest version seen
        poke_interval=5,
        timeout=600,
    )

    @task
    def apply_changes(pinned: str) -> dict:
        """Append the changes after the processed version up to ``pinned`` (nothing if none)."""
        from airflow_provider_delta.hooks import DeltaTableHook
        step = DeltaTableHook().process_changes(CUSTOMERS, CUSTOMER_CHANGES, APP_ID, end_version=int(pinned))
        return {"start": step.range.start, "end": step.range.end, "output_version": step.version,
                "rows": step.rows}

    wait >> apply_changes("{{ ti.xcom_pull(task_ids='wait_for_customers', key='version') }}")
    # [END howto_delta_process_changes]
