"""Final review (session 10) of the task-id upgrade paths: findings as strict xfails.

A dot-joined id of releases before 0.2.0 (``<dag>.<task>``) is shared by every DAG/task pair that joins
to it (DAG ``sales.daily`` task ``load`` and DAG ``sales`` task ``daily.load``, both legal, a task group
makes the second). 0.2.0 separated them with a colon, but the upgrade fallbacks
(:func:`~airflow_provider_delta.operators.spark_base.committed_pair_id`,
:func:`~airflow_provider_delta.operators.spark_base.incremental_range`) take whatever the table holds
under that shared id as this task's, although the commit that recorded it names the task that made it
(``commitInfo.job``: dag_id, task_id). A task that never ran before the upgrade then skips intervals or
change-feed versions another task committed.

The operators are real; the contexts carry what Airflow's carry (ti ids, data interval); nothing of ours
is mocked. Nothing here submits a Spark job.
"""
from __future__ import annotations

import datetime as dt
import json
from typing import Any

import pyarrow as pa
import pytest
from airflow.sdk.execution_time.context import OutletEventAccessors

from airflow_provider_delta.hooks.run_identity import run_app_id, run_app_version
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.operators.delta_spark import DeltaSparkApplicationOperator
from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
from airflow_provider_delta.operators.spark_base import committed_pair_id, incremental_range, resolve_app

START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
END = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)


class TaskInstance:
    """The slice of a task instance the operators use (ids, try, xcom_push), as Airflow's has it."""

    def __init__(self, dag_id: str, task_id: str, run_id: str = "scheduled__2026-01-01T00:00:00+00:00"):
        self.dag_id, self.task_id, self.run_id, self.map_index, self.try_number = dag_id, task_id, run_id, -1, 1
        self.xcoms: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        json.dumps(value)
        self.xcoms[key] = value


def context(dag_id: str, task_id: str) -> dict[str, Any]:
    ti = TaskInstance(dag_id, task_id)
    return {"ti": ti, "task_instance": ti, "run_id": ti.run_id, "outlet_events": OutletEventAccessors(),
            "data_interval_start": START, "data_interval_end": END}


def job_of(ctx: dict[str, Any]) -> dict[str, Any]:
    ti = ctx["ti"]
    return {"dag_id": ti.dag_id, "task_id": ti.task_id, "run_id": ti.run_id, "try_number": 1}


@pytest.mark.parametrize("operator", ["submit", "application"])
def test_another_dags_pre_upgrade_commit_is_not_taken_for_this_tasks_interval(tmp_path, operator):
    out = DeltaTable.create(str(tmp_path / "orders"), pa.schema([("id", pa.int64())]))
    old = context("sales.daily", "load")           # a pre-0.2.0 build of DAG sales.daily, task load
    out.write(pa.table({"id": [1]}), app_id=run_app_id("sales.daily.load", old),
              app_version=run_app_version(old), job=job_of(old))
    new = context("sales", "daily.load")           # DAG sales, task group daily, task load: same interval
    if operator == "submit":
        task = DeltaSparkSubmitOperator(task_id="daily.load", output_table_uri=out.uri, transform="identity")
    else:
        task = DeltaSparkApplicationOperator(task_id="daily.load", output_table_uri=out.uri, application="/x/app.py")
    app_id, version = resolve_app(None, None, new, task)
    assert app_id == "sales:daily.load@20260101T000000Z-20260102T000000Z"
    assert committed_pair_id(out, app_id, version, new, task) == app_id


def test_a_new_consumer_does_not_resume_from_another_tasks_former_position(tmp_path):
    schema = pa.schema([("id", pa.int64())])
    cdf = {"delta.enableChangeDataFeed": "true"}
    source = DeltaTable.create(str(tmp_path / "eu"), schema, properties=cdf)
    for i in range(7):
        source.write(pa.table({"id": [i]}))            # versions 1..7
    out = DeltaTable.create(str(tmp_path / "all"), schema)
    old = context("sales.daily", "load")               # another consumer (another source) before 0.2.0
    out.write(pa.table({"id": [100]}), app_id="sales.daily.load", app_version=5, job=job_of(old))
    new = context("sales", "daily.load")
    task = DeltaSparkSubmitOperator(task_id="daily.load", output_table_uri=out.uri, transform="identity",
                                    input_table_uri=source.uri, input_changes=True)
    rng = incremental_range(task, new, source.uri, 7)
    assert rng.app_id == "sales:daily.load"
    assert (rng.resumed_from, rng.start) == (None, 0)


@pytest.mark.parametrize("operator", ["submit", "application"])
def test_a_resumed_consumer_with_nothing_to_do_reports_the_commit_holding_its_position(tmp_path, operator):
    schema = pa.schema([("id", pa.int64())])
    source = DeltaTable.create(str(tmp_path / "src"), schema, properties={"delta.enableChangeDataFeed": "true"})
    source.write(pa.table({"id": [1]}))
    source.write(pa.table({"id": [2]}))                # version 2: all of it processed before the upgrade
    out = DeltaTable.create(str(tmp_path / "out"), schema)
    ctx = context("shop", "enrich")
    held = out.write(pa.table({"id": [1, 2]}), app_id="shop.enrich", app_version=2,
                     job={**job_of(ctx), "run_id": "scheduled__2025-12-31T00:00:00+00:00"})
    if operator == "submit":
        task = DeltaSparkSubmitOperator(task_id="enrich", output_table_uri=out.uri, transform="identity",
                                        input_table_uri=source.uri, input_changes=True)
    else:
        task = DeltaSparkApplicationOperator(task_id="enrich", output_table_uri=out.uri, application="/x/app.py",
                                             input_table_uri=source.uri, input_changes=True)
    returned = task.execute(ctx)
    assert out.latest_version() == held                 # nothing submitted, nothing written (holds now)
    commit = ctx["ti"].xcoms["commit"]
    assert (returned, commit["version"], commit["committed"]) == (held, held, False)
