"""Integration DAG: a deferrable commit sensor waiting for another process's commits.

The sensor names the table relative to connection ``lake`` (so the trigger resolves
the connection asynchronously); ``DELTA_TEST_TABLE`` is its absolute location (for the
asset), ``DELTA_TEST_AFTER``/``DELTA_TEST_TARGET`` the range and ``DELTA_TEST_MARKER`` a
file the sensor creates when it starts, so the writer process knows when to commit.
"""
from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from airflow.sdk import DAG

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.sensors import DeltaCommitSensor

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")
MARKER = os.environ.get("DELTA_TEST_MARKER", "/nonexistent/marker")


def _signal_started(context) -> None:
    Path(MARKER).touch()


with DAG("delta_sensor_deferrable", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    DeltaCommitSensor(
        task_id="wait_for_writer", table_uri=os.path.basename(TABLE), delta_conn_id="lake",
        after_version=os.environ.get("DELTA_TEST_AFTER"), target_version=os.environ.get("DELTA_TEST_TARGET"),
        app_id="external-writer", deferrable=True, poke_interval=0.5, timeout=300,
        on_execute_callback=_signal_started, outlets=[to_asset(table_uri=TABLE)])
