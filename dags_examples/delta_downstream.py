"""Example DAG 2, ``delta_downstream``: wait for the ingest commit, pin it, aggregate it with Spark twice.

Runs when the orders asset is updated. The sensor confirms that the ingest
application has committed (deferring to the triggerer while it waits); the
snapshot operator pins the version it saw in a manifest. Then two Spark jobs read
exactly that version, so orders committed meanwhile do not leak into this run:

* ``daily_totals`` (``DeltaSparkSubmitOperator``, driver-side commit): reads the
  manifest's files and overwrites ``<base>/daily_totals`` once per run;
* ``customer_totals`` (``DeltaSparkApplicationOperator``): a plain PySpark
  application with Delta Spark (``jobs/customer_totals.py``) reads orders with
  ``versionAsOf`` and appends to ``<base>/customer_totals`` with ``txnAppId`` /
  ``txnVersion`` keyed by the pinned version (one set of rows per orders version,
  however many runs pin it; an older version after a newer one is skipped);
  Delta Spark commits, the operator checks the commit.

Two runs at once are ordinary (two ingest runs, two asset events): on a first
deployment both create the output tables, and the one that loses that race to an
identical create goes on as a write to the created table (the log's write path;
``jobs/customer_totals.py`` retries Delta Spark's append once for the same race, and
for the race of two runs appending the same pinned version, where the retry finds it
written and Delta Spark skips it).

The Delta Spark jars are looked up when ``customer_totals`` runs (the
``delta_spark_jars`` macro), so a scheduler or dag-processor host without them
parses this DAG fine.
"""
from __future__ import annotations

from datetime import datetime

from airflow.sdk import DAG

from airflow_provider_delta.operators import DeltaTimeTravelSnapshotOperator
from airflow_provider_delta.operators.delta_spark import DeltaSparkApplicationOperator
from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
from airflow_provider_delta.sensors import DeltaCommitSensor
from example_settings import (CUSTOMER_TOTALS, CUSTOMER_TOTALS_ASSET, CUSTOMER_TOTALS_JOB, DAILY_TOTALS,
                              DAILY_TOTALS_ASSET, DELTA_SPARK_CONF, INGEST_APP_ID, JOBS_FILE, ORDERS, ORDERS_ASSET,
                              ORDERS_CONN_ID, SPARK_CONF, SPARK_ENV, delta_spark_jars)

with DAG("delta_downstream", schedule=[ORDERS_ASSET], start_date=datetime(2026, 1, 1), catchup=False,
         tags=["delta", "example"], doc_md=__doc__,
         # resolved on the worker when a task renders its templates, not when the DAG is parsed
         user_defined_macros={"delta_spark_jars": delta_spark_jars}):

    # [START howto_sensor_delta_commit_deferrable]
    wait = DeltaCommitSensor(
        task_id="wait_for_orders",
        table_uri=ORDERS,
        delta_conn_id=ORDERS_CONN_ID,
        app_id=INGEST_APP_ID,
        after_version=-1,            # any ingest commit counts (the asset event already says one landed)
        deferrable=True,
        poke_interval=5,
        timeout=600,
    )
    # [END howto_sensor_delta_commit_deferrable]

    # [START howto_operator_delta_time_travel_snapshot]
    pin = DeltaTimeTravelSnapshotOperator(
        task_id="pin_orders",
        table_uri=ORDERS,
        delta_conn_id=ORDERS_CONN_ID,
        version="{{ ti.xcom_pull(task_ids='wait_for_orders', key='version') }}",
    )
    # [END howto_operator_delta_time_travel_snapshot]

    # [START howto_operator_delta_spark_submit_manifest]
    totals = DeltaSparkSubmitOperator(
        task_id="daily_totals",
        input_manifest_uri="{{ ti.xcom_pull(task_ids='pin_orders')['manifest_uri'] }}",
        output_table_uri=DAILY_TOTALS,
        transform="orders_jobs:daily_totals",
        mode="overwrite",
        py_files=JOBS_FILE,
        conf=SPARK_CONF,
        env_vars=SPARK_ENV,
        outlets=[DAILY_TOTALS_ASSET],
    )
    # [END howto_operator_delta_spark_submit_manifest]

    # [START howto_operator_delta_spark_application]
    customers = DeltaSparkApplicationOperator(
        task_id="customer_totals",
        application=CUSTOMER_TOTALS_JOB,
        input_manifest_uri="{{ ti.xcom_pull(task_ids='pin_orders')['manifest_uri'] }}",   # its table and version
        output_table_uri=CUSTOMER_TOTALS,
        delta_conn_id=ORDERS_CONN_ID,      # to check that the pinned version of orders is backfilled
        # exactly once per pinned orders version, whichever run gets there: two runs that pinned the same
        # version append its totals once (the default pair is per run)
        app_id="delta_downstream.customer_totals",
        app_version="{{ ti.xcom_pull(task_ids='pin_orders')['version'] }}",
        jars="{{ delta_spark_jars() }}",   # Delta Spark for the application (or packages=..., or the cluster's)
        conf=DELTA_SPARK_CONF,
        env_vars=SPARK_ENV,
        outlets=[CUSTOMER_TOTALS_ASSET],
    )
    # [END howto_operator_delta_spark_application]

    wait >> pin >> [totals, customers]
