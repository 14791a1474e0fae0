"""Review DAGs (s12-rv-restore): a rollback whose first try commits its RESTORE, then another DAG's streaming append
lands and the try fails (a worker lost), under dag.test() with one retry: guarded (``expected_version``) and mapped.
The table (``DELTA_TEST_TABLE``) holds versions 0..3 before the run; the rollback restores version 1."""
from __future__ import annotations

import importlib.util
from datetime import datetime, timedelta
from pathlib import Path

from airflow.sdk import DAG

# the suite's rollback-retry DAG's operator (try 1 commits its RESTORE, another DAG appends, the worker is lost)
_spec = importlib.util.spec_from_file_location(
    "rv_s12_delta_rollback_retry_dag", Path(__file__).parents[1] / "dags" / "delta_rollback_retry_dag.py")
_module = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_module)
RestoreThenLoseTheWorker = _module.RestoreThenLoseTheWorker
TABLE = _module.TABLE

with DAG("rv_s12_guarded_rollback_retry", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    RestoreThenLoseTheWorker(task_id="rollback", table_uri=TABLE, version=1, expected_version=3, retries=1,
                             retry_delay=timedelta(seconds=0))

with DAG("rv_s12_mapped_rollback_retry", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    RestoreThenLoseTheWorker.partial(task_id="rollback", table_uri=TABLE, retries=1,
                                     retry_delay=timedelta(seconds=0)).expand(version=[1])
