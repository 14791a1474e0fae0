"""Integration DAG: a rollback whose first try commits its RESTORE and then fails (as a worker lost after
the commit), under dag.test() with a retry. Between the two tries another DAG's streaming append lands.

The retry must find its first try's RESTORE (the real task context: ``dag_run.run_after`` bounds the
search) and report it instead of restoring again, so the append stays. The table path comes from
``DELTA_TEST_TABLE``; it holds versions 0..3 before the run, the rollback restores version 1.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_delta.operators import DeltaRestoreOperator

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")


class RestoreThenLoseTheWorker(DeltaRestoreOperator):
    """Try 1 commits the RESTORE, then another DAG appends and the try fails before reporting."""

    def execute(self, context):
        result = super().execute(context)
        if context["ti"].try_number == 1:
            import pyarrow as pa

            from airflow_provider_delta.log import DeltaTable
            DeltaTable(TABLE).write(pa.table({"id": [500], "day": ["2026-01-09"]}),
                                    job={"dag_id": "streaming", "task_id": "append", "run_id": "r", "try_number": 1})
            raise RuntimeError("the worker was lost after the RESTORE committed")
        return result


with DAG("delta_rollback_retry", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    RestoreThenLoseTheWorker(task_id="rollback", table_uri=TABLE, version=1, retries=1,
                             retry_delay=timedelta(seconds=0))
