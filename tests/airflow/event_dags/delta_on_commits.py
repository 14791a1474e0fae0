"""A DAG scheduled on the commits of one Delta table (DELTA_WATCH_TABLE), through an AssetWatcher."""
from __future__ import annotations

import os
from datetime import datetime

from airflow.providers.standard.operators.empty import EmptyOperator
from airflow.sdk import DAG, Asset, AssetWatcher

from airflow_provider_delta.assets import asset_uri_for_table
from airflow_provider_delta.triggers import DeltaCommitEventTrigger

TABLE = os.environ["DELTA_WATCH_TABLE"]

orders = Asset(name="watched_orders", uri=asset_uri_for_table(TABLE), watchers=[AssetWatcher(
    name="orders_commits",
    trigger=DeltaCommitEventTrigger(table_uri=TABLE, after_version=-1, poke_interval=1.0))])

with DAG("delta_on_commits", schedule=[orders], start_date=datetime(2026, 1, 1), catchup=False):
    EmptyOperator(task_id="noop")
