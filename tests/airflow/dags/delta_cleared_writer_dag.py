"""Integration DAG: a writer task run again in the same DAG run, after it succeeded (a clear) or after a
try that committed and then failed before reporting (a worker lost), under dag.test().

``clone`` shallow-clones ``DELTA_TEST_TABLE`` to ``DELTA_TEST_CLONE`` (its outlet asset). With
``DELTA_TEST_LOSE_WORKER=1`` its first try commits the clone and then fails; the retry finds the
clone is this task run's. Run twice with the same ``DELTA_DAG_RUN_LOGICAL_DATE`` it is cleared: the
second run finds the first run's clone and its asset event.
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import DAG

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.operators import DeltaCloneOperator

SOURCE = os.environ.get("DELTA_TEST_TABLE", "/nonexistent/delta-test-table")
CLONE = os.environ.get("DELTA_TEST_CLONE", "/nonexistent/delta-test-clone")


class CloneThenMaybeLoseTheWorker(DeltaCloneOperator):
    """With DELTA_TEST_LOSE_WORKER=1, try 1 commits the clone and then fails before reporting."""

    def execute(self, context):
        result = super().execute(context)
        if os.environ.get("DELTA_TEST_LOSE_WORKER") == "1" and context["ti"].try_number == 1:
            raise RuntimeError("the worker was lost after the clone committed")
        return result


with DAG("delta_cleared_writer", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    CloneThenMaybeLoseTheWorker(task_id="clone", source_uri=SOURCE, table_uri=CLONE, retries=1,
                                retry_delay=timedelta(seconds=0), outlets=[to_asset(table_uri=CLONE)])


# ``delta_cleared_ingest``: ``ingest`` (DeltaSparkSubmitOperator) on ``DELTA_TEST_TABLE``, whose first try
# committed the run's pair and died before reporting (``try_1_committed`` makes that commit as the Spark job
# does: the txn pair and ``commitInfo.job`` naming ``ingest`` in this run; no Spark needed, as nothing is
# submitted once the pair is there). The run's ``ingest`` announces it; the run cleared (run again with the
# same ``DELTA_DAG_RUN_LOGICAL_DATE``) finds the commit and the event, and stays silent.
INGEST_TABLE = SOURCE


with DAG("delta_cleared_ingest", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    from airflow.sdk import get_current_context, task

    from airflow_provider_delta.hooks.run_identity import run_app_id, run_app_version
    from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator

    @task
    def try_1_committed() -> None:
        from airflow_provider_delta.log import DeltaTable
        context = get_current_context()
        app_id, app_version = run_app_id("delta_cleared_ingest:ingest", context), run_app_version(context)
        table = DeltaTable(INGEST_TABLE)
        if table.snapshot().transaction_version(app_id) is None:      # once: a cleared run finds it there
            job = {"dag_id": "delta_cleared_ingest", "task_id": "ingest", "run_id": context["run_id"],
                   "try_number": 1}
            with table.transaction(operation="WRITE", job=job) as txn:
                txn.set_txn(app_id, app_version)

    try_1_committed() >> DeltaSparkSubmitOperator(task_id="ingest", output_table_uri=INGEST_TABLE,
                                                   transform="identity", outlets=[to_asset(table_uri=INGEST_TABLE)])
