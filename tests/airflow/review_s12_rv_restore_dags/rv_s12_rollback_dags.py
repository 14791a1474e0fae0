"""Review DAGs (s12-rv-restore): a rollback whose first try commits its RESTORE, then another DAG's streaming append
lands and the try fails (a worker lost), under dag.test() with one retry: guarded (``expected_version``) and mapped.
The table (``DELTA_TEST_TABLE``) holds versions 0..3 before the run; the rollback restores version 1."""
from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_delta.operators import DeltaRestoreOperator

TABLE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")


class RestoreThenLoseTheWorker(DeltaRestoreOperator):
    def execute(self, context):
        result = super().execute(context)
        if context["ti"].try_number == 1:
            import pyarrow as pa

            from airflow_provider_delta.log import DeltaTable
            DeltaTable(TABLE).write(pa.table({"id": [500], "day": ["2026-01-09"]}),
                                    job={"dag_id": "streaming", "task_id": "append", "run_id": "r", "try_number": 1})
            raise RuntimeError("the worker was lost after the RESTORE committed")
        return result


with DAG("rv_s12_guarded_rollback_retry", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    RestoreThenLoseTheWorker(task_id="rollback", table_uri=TABLE, version=1, expected_version=3, retries=1,
                             retry_delay=timedelta(seconds=0))

with DAG("rv_s12_mapped_rollback_retry", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    RestoreThenLoseTheWorker.partial(task_id="rollback", table_uri=TABLE, retries=1,
                                     retry_delay=timedelta(seconds=0)).expand(version=[1])
