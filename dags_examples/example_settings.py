"""Settings shared by the example DAGs: where the tables live, their connection, and how Spark runs.

``DELTA_EXAMPLE_BASE`` (default: ``example_output/`` in this repository, an absolute
path whatever the working directory) is the base directory of the example tables; ``scripts/run_example.py`` sets it. Spark runs in local mode
(no ``spark_default`` connection is needed) with small settings for a laptop.

``orders`` is a managed-commit table: a SQLite commit owner (a file next to the
tables) ratifies its commits. The tasks and the watcher reach that owner through the
Airflow connection ``delta_example``, which the deployment defines, never a DAG file
(the triggerer and the workers do not parse DAG files the way the dag-processor does):
``scripts/airflow_deploy.py`` adds it with ``airflow connections add``, ``make run``
sets ``AIRFLOW_CONN_DELTA_EXAMPLE`` (docs/examples.md, "Run the examples under a real Airflow").
A real deployment would name a PostgreSQL owner for writers on many machines.
``daily_totals`` and ``customer_totals`` are plain tables.
"""
from __future__ import annotations

import importlib.util
import os

from airflow_provider_delta.assets import to_asset

#: the repository's example_output/ by default: never relative to the working directory of the process
#: that parses the DAGs, so the scheduler, the dag-processor and the workers name the same tables (and
#: the same asset URIs)
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BASE = os.path.abspath(os.environ.get("DELTA_EXAMPLE_BASE") or os.path.join(REPO, "example_output"))
ORDERS = os.path.join(BASE, "orders")
DAILY_TOTALS = os.path.join(BASE, "daily_totals")
CUSTOMER_TOTALS = os.path.join(BASE, "customer_totals")
ORDERS_ASSET = to_asset(table_uri=ORDERS, name="example_orders")
DAILY_TOTALS_ASSET = to_asset(table_uri=DAILY_TOTALS, name="example_daily_totals")
CUSTOMER_TOTALS_ASSET = to_asset(table_uri=CUSTOMER_TOTALS, name="example_customer_totals")

#: the delta connection of the managed orders table: its commit owner (backfilling after every commit,
#: so that readers without the owner, Delta Spark among them, see every commit at once). Defined by the
#: deployment (scripts/airflow_deploy.py, ``example_connection``), never here.
ORDERS_CONN_ID = "delta_example"

JOBS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "jobs")
#: the transforms the driver-side Spark jobs run, shipped to the driver with --py-files
JOBS_FILE = os.path.join(JOBS_DIR, "orders_jobs.py")
#: the Delta Spark application of the customer_totals task
CUSTOMER_TOTALS_JOB = os.path.join(JOBS_DIR, "customer_totals.py")
#: the ingest task's exactly-once id. DeltaSparkSubmitOperator's default appId is
#: "<dag_id>:<task_id>@<data interval>" (one per interval); commit filters given the task part,
#: "<dag_id>:<task_id>", match them all (see airflow_provider_delta/hooks/run_identity.py)
INGEST_APP_ID = "delta_ingest:ingest_orders"

SPARK_CONF = {
    "spark.sql.shuffle.partitions": "2",
    "spark.default.parallelism": "2",
    "spark.ui.enabled": "false",
    "spark.log.level": "WARN",
    "spark.sql.session.timeZone": "UTC",
    # a short-lived driver on a small machine and tiny data: C2 compilation and generated code cost
    # more CPU than they save
    "spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC",
    "spark.sql.codegen.wholeStage": "false",
}
SPARK_ENV = {"SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
#: Delta Spark on a small local table: replay its log in 2 partitions (default 50)
DELTA_SPARK_CONF = {**SPARK_CONF, "spark.databricks.delta.snapshotPartitions": "2"}


def delta_spark_jars() -> str:
    """The Delta Spark jars for ``jars=`` (fetched by ``make jars`` into .jars/; scripts/delta_spark.py).

    Called when a task renders its templates (``jars="{{ delta_spark_jars() }}"``, a DAG
    macro), on the worker that runs it: parsing the DAG needs no jars, so a scheduler or
    dag-processor host without them still loads the DAG. On a cluster that has Delta
    Spark installed, leave ``jars`` out; or pass
    ``packages="io.delta:delta-spark_4.2_2.13:4.4.0"`` (the pair pinned in
    scripts/delta-spark/pom.xml) to let spark-submit fetch it.
    """
    path = os.path.join(REPO, "scripts", "delta_spark.py")
    spec = importlib.util.spec_from_file_location("delta_spark", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return ",".join(str(p) for p in module.jar_paths())

#: write-audit-publish (delta_write_audit_publish): two catalog-managed tables of a SqlCatalog in a
#: SQLite file next to them, reached through the ``delta_wap`` connection's ``catalog`` extra
WAP_CONN_ID = "delta_wap"
WAP_ORDERS = os.path.join(BASE, "wap_orders")
WAP_TOTALS = os.path.join(BASE, "wap_customer_totals")
WAP_CATALOG_DB = os.path.join(BASE, "catalog.db")   # the deployment's ``delta_wap`` connection names it


def ensure_wap_tables() -> None:
    """Create the two write-audit-publish tables in the catalog if they are not there yet."""
    import pyarrow as pa

    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.log import DeltaTable, TableAlreadyExistsError

    catalog = DeltaTableHook(WAP_CONN_ID).require_catalog()
    schemas = {WAP_ORDERS: pa.schema([("day", pa.string()), ("customer", pa.string()), ("amount", pa.int64())]),
               WAP_TOTALS: pa.schema([("day", pa.string()), ("customer", pa.string()), ("total", pa.int64())])}
    for uri, schema in schemas.items():
        if not catalog.manages(uri):
            try:
                DeltaTable.create(uri, schema, catalog=catalog)
            except TableAlreadyExistsError:
                pass      # the other writer task created it a moment ago
