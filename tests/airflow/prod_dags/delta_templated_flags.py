"""DAGs a data engineer writes with templated flags and a sensor right after the writer.

``DELTA_TEST_TABLE`` is a table with files vacuum could delete. Each DAG is run with
``dag.test()`` by tests/airflow/test_production_arguments.py.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta

import pyarrow as pa
from airflow.sdk import DAG, task

from airflow_provider_delta.operators import DeltaCheckpointOperator, DeltaVacuumOperator
from airflow_provider_delta.sensors import DeltaCommitSensor

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")
START = datetime(2026, 1, 1)

# dry_run from the run's conf: without conf it renders "None", which must fail, not delete
for native in (False, True):
    with DAG(f"delta_vacuum_conf_dry_run{'_native' if native else ''}", schedule=None, start_date=START,
             catchup=False, render_template_as_native_obj=native):
        DeltaVacuumOperator(task_id="vacuum", table_uri=TABLE, retention_hours=0, enforce_retention=False,
                            dry_run="{{ dag_run.conf.get('dry_run') }}", retries=3, retry_delay=timedelta(hours=1))

# a flag from params: enforce=False must reach vacuum as False (a short retention is then allowed)
with DAG("delta_vacuum_params_enforce", schedule=None, start_date=START, catchup=False,
         params={"enforce": False, "dry_run": "false"}):
    DeltaVacuumOperator(task_id="vacuum", table_uri=TABLE, retention_hours=0,
                        enforce_retention="{{ params.enforce }}", dry_run="{{ params.dry_run }}")

# the checkpoint's flags are templated too
with DAG("delta_checkpoint_templated_flags", schedule=None, start_date=START, catchup=False,
         params={"cleanup": "yes", "engine": "LOCAL"}):
    DeltaCheckpointOperator(task_id="checkpoint", table_uri=TABLE, cleanup="{{ params.cleanup }}",
                            cleanup_dry_run="{{ params.get('cleanup_dry_run', True) }}",
                            engine="{{ params.engine }}")

# a sensor right after the task that commits, in the same run: it must see that commit
for deferrable in (False, True):
    with DAG(f"delta_write_then_wait{'_deferred' if deferrable else ''}", schedule=None, start_date=START,
             catchup=False):
        @task
        def write() -> int:
            from airflow_provider_delta.hooks import DeltaTableHook
            return DeltaTableHook().write_table(TABLE, pa.table({"id": [99], "day": ["2026-02-01"]}))

        write() >> DeltaCommitSensor(task_id="wait", table_uri=TABLE, operation="write", poke_interval=0.2,
                                     timeout=60, deferrable=deferrable)
