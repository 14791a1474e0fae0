"""Settings shared by the example DAGs: where the tables live and how Spark runs.

``DELTA_EXAMPLE_BASE`` (default ``./example_output``) is the base directory of
the example tables; ``scripts/run_example.py`` sets it. Spark runs in local mode
(no ``spark_default`` connection is needed) with small settings for a laptop.
"""
from __future__ import annotations

import os

from airflow_provider_delta.assets import to_asset

BASE = os.path.abspath(os.environ.get("DELTA_EXAMPLE_BASE", "./example_output"))
ORDERS = os.path.join(BASE, "orders")
DAILY_TOTALS = os.path.join(BASE, "daily_totals")
ORDERS_ASSET = to_asset(table_uri=ORDERS, name="example_orders")
DAILY_TOTALS_ASSET = to_asset(table_uri=DAILY_TOTALS, name="example_daily_totals")

#: the transforms the Spark jobs run, shipped to the driver with --py-files
JOBS_FILE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs", "orders_jobs.py")
#: the ingest task's exactly-once id (DeltaSparkSubmitOperator's default: "<dag_id>.<task_id>")
INGEST_APP_ID = "delta_ingest.ingest_orders"

SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.log.level": "WARN",
    "spark.sql.session.timeZone": "UTC",
}
SPARK_ENV = {"SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
