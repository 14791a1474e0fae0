"""A dotted DAG id, a task group and a mapped writer committing under the default exactly-once identity
('sales.daily:grp.load[i]@<run key>'), and sensors filtering by task id in both spellings, for
tests/airflow/test_break_s10_ids.py. Deferrable sensors go through the trigger's filter (serialized)."""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, TaskGroup, task

from airflow_provider_delta.sensors import DeltaCommitSensor

TABLE = os.environ.get("DELTA_S10_TABLE", "/nonexistent/t")


@task
def load(index: int) -> str:
    from airflow.sdk import get_current_context

    from airflow_provider_delta.hooks.run_identity import run_app_id, run_app_version, task_key
    from airflow_provider_delta.log import DeltaTable
    context = get_current_context()
    app_id = run_app_id(task_key(context), context)         # the default identity of the Spark operators
    with DeltaTable(TABLE).transaction(operation="WRITE") as txn:
        txn.set_txn(app_id, run_app_version(context))
    return app_id


def _sensor(task_id: str, app_id: str, deferrable: bool = False, timeout: float = 20, **kwargs) -> DeltaCommitSensor:
    return DeltaCommitSensor(task_id=task_id, table_uri=TABLE, after_version=0, app_id=app_id, poke_interval=1,
                             timeout=timeout, mode="poke", deferrable=deferrable, **kwargs)


with DAG("sales.daily", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
    with TaskGroup("grp"):
        written = load.expand(index=[0, 1])
    written >> [
        _sensor("new_spelling", "sales.daily:grp.load"),
        _sensor("old_spelling", "sales.daily.grp.load"),
        _sensor("one_instance", "sales.daily:grp.load[1]"),
        _sensor("deferred_old_spelling", "sales.daily.grp.load", deferrable=True),
        _sensor("group_prefix", "sales.daily:grp", soft_fail=True, timeout=3),
        _sensor("other_task", "sales.daily:grp.loa", soft_fail=True, timeout=3),
    ]
