"""Example DAG ``delta_load_with_rollback``: load a batch, check the table, roll back if the check fails.

::

    remember_version >> load >> check >> publish
                        [load, check] >> rollback      (trigger_rule="one_failed")

``remember_version`` records the table's version before the load (creating the
``payments`` table on the first run). ``load`` appends the landed batch
(``<base>/landing/payments.json``, a JSON list of ``{"id", "amount"}``) and returns the
version it committed. ``check`` reads that version and fails on a negative amount or a
duplicate id. When the load or the check fails, ``rollback`` (``DeltaRestoreOperator``)
undoes the run's own load: it restores the version just before the load's commit, so every
reader sees the table as it was; the bad version stays in the history for inspection.

The rollback is guarded: ``expected_version`` is the load's version, and the restore happens
only while that is still the table's latest commit. If anything committed after the load (a
writer outside this DAG; runs of this DAG never overlap, ``max_active_runs=1``), restoring
would undo that commit too, so the task fails with ``UnexpectedVersionError`` instead, without
retrying and with nothing written: the bad rows are left for a person to remove. If the load
failed before committing, the expected version is the one remembered before it, and the
rollback commits nothing (or, if the table moved on meanwhile, refuses as above). The
rollback's asset event (``operation: "RESTORE"``) tells DAGs scheduled on the table that it
changed.
"""
from __future__ import annotations

import json
import os
from datetime import datetime

import pyarrow as pa
from airflow.sdk import DAG, task

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.hooks import DeltaTableHook
from airflow_provider_delta.log import TableNotFoundError
from airflow_provider_delta.operators import DeltaRestoreOperator
from example_settings import BASE

PAYMENTS = os.path.join(BASE, "payments")
PAYMENTS_ASSET = to_asset(table_uri=PAYMENTS, name="example_payments")
LANDING = os.path.join(BASE, "landing", "payments.json")
SCHEMA = pa.schema([("id", pa.int64()), ("amount", pa.float64())])


@task
def remember_version() -> int:
    """The version to roll back to: the table's latest before this run's load."""
    hook = DeltaTableHook()
    try:
        return hook.latest_version(PAYMENTS)
    except TableNotFoundError:
        hook.write_table(PAYMENTS, SCHEMA.empty_table())          # first run: an empty table, version 0
        return 0


@task
def load() -> int:
    """Append the landed batch; returns the version it committed."""
    try:
        with open(LANDING) as f:
            rows = json.load(f)
    except FileNotFoundError:
        raise FileNotFoundError(
            f"no batch has landed at {LANDING}: put the batch to load there, a JSON list of "
            '{"id": <int>, "amount": <number>} objects such as [{"id": 1, "amount": 9.5}], then trigger '
            "the DAG again (nothing was loaded; the rollback has nothing to undo)") from None
    return DeltaTableHook().write_table(PAYMENTS, pa.Table.from_pylist(rows, schema=SCHEMA))


@task
def check(version: int) -> int:
    """Fail on bad data in the loaded version: negative amounts or duplicate ids."""
    rows = DeltaTableHook().snapshot(PAYMENTS, version=version).to_pyarrow().to_pylist()
    negative = [r["id"] for r in rows if r["amount"] < 0]
    ids = [r["id"] for r in rows]
    if negative or len(ids) != len(set(ids)):
        raise ValueError(f"version {version} of {PAYMENTS} fails the check: negative amounts for ids "
                         f"{negative}, {len(ids) - len(set(ids))} duplicate ids")
    return version


@task(outlets=[PAYMENTS_ASSET])
def publish(version: int) -> int:
    """The checked version, announced to the DAGs scheduled on the table."""
    return version


# [START howto_operator_delta_restore_rollback]
#: the run's own load commit; when the load committed nothing, the version remembered before it
OWN_LOAD = ("{{ ti.xcom_pull(task_ids='load') if ti.xcom_pull(task_ids='load') is not none "
            "else ti.xcom_pull(task_ids='remember_version') }}")
#: the version just before the run's own load commit (the remembered one when it committed nothing)
BEFORE_OWN_LOAD = ("{{ ti.xcom_pull(task_ids='load') - 1 if ti.xcom_pull(task_ids='load') is not none "
                   "else ti.xcom_pull(task_ids='remember_version') }}")

with DAG("delta_load_with_rollback", schedule=None, start_date=datetime(2026, 1, 1), catchup=False,
         max_active_runs=1, tags=["delta", "example"], doc_md=__doc__):
    before = remember_version()
    loaded = load()
    checked = check(loaded)
    before >> loaded
    publish(checked)
    rollback = DeltaRestoreOperator(task_id="rollback", table_uri=PAYMENTS, version=BEFORE_OWN_LOAD,
                                    expected_version=OWN_LOAD,   # only while the load is the latest commit
                                    trigger_rule="one_failed", outlets=[PAYMENTS_ASSET])
    [loaded, checked] >> rollback
# [END howto_operator_delta_restore_rollback]
