"""Example DAG 4, ``delta_orders_audit``: a DAG run for every batch of new commits to ``orders``.

Airflow 3 schedules it from the table itself: ``DeltaCommitEventTrigger`` watches the
orders log in the triggerer (through the ``delta_example`` connection, so it sees the
commit owner's commits too) and emits an asset event per batch of new ``WRITE``
commits, whoever made them: the ingest DAG, a notebook, another tool.

The watcher's asset, ``example_orders_commits``, is the stream of commits the trigger
reads, not the table: it has a name and no table URI (Airflow then uses the name as
its URI). Airflow activates one asset per URI and one per name, so a watcher asset
with the table's URI would collide with ``example_orders``, the asset the ingest task
updates as its outlet (an "asset conflict" DAG warning, and the watcher never runs).
Keeping them apart also keeps each event single: ``delta_downstream`` runs on the
ingest task's events, this DAG on the trigger's.

``after_version=-1``: the watcher announces every ``WRITE`` commit the table has, the
ones made before it first ran included, so no ingest commit goes unaudited whatever
the order the processes start in. The audit itself is a small step without Spark:
``@task.delta_snapshot`` pins the newest version the event reports and counts its
rows per day.
"""
from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG, Asset, AssetWatcher, task

from airflow_provider_delta.triggers import DeltaCommitEventTrigger
from example_settings import ORDERS, ORDERS_CONN_ID

# [START howto_trigger_delta_commit_event_watcher]
ORDERS_COMMITS = Asset(name="example_orders_commits", watchers=[AssetWatcher(
    name="example_orders_writes",
    trigger=DeltaCommitEventTrigger(table_uri=ORDERS, delta_conn_id=ORDERS_CONN_ID, operation="WRITE",
                                    after_version=-1, poke_interval=10))])
# [END howto_trigger_delta_commit_event_watcher]

with DAG("delta_orders_audit", schedule=[ORDERS_COMMITS], start_date=datetime(2026, 1, 1), catchup=False,
         tags=["delta", "example"], doc_md=__doc__):

    # [START howto_decorator_delta_snapshot]
    @task.delta_snapshot(
        table_uri=ORDERS, delta_conn_id=ORDERS_CONN_ID,
        # the newest version the triggering events announced (the latest when run by hand)
        version="{{ (triggering_asset_events.values() | list | last | last).extra['payload']['version'] "
                "if triggering_asset_events else '' }}")
    def audit_orders(snapshot) -> dict:
        import pyarrow.compute as pc
        days = snapshot.to_pyarrow(columns=["order_date"]).column("order_date")
        counts = pc.value_counts(days).to_pylist()
        return {"version": snapshot.version, "rows_per_day": {str(c["values"]): c["counts"] for c in counts}}
    # [END howto_decorator_delta_snapshot]

    audit_orders()
