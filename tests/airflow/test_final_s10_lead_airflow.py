"""Final review (session 10) of c828048 (a former-id commit counts only when its commitInfo.job does not
name another DAG/task): findings as strict xfails. Real operators and log; the contexts carry what
Airflow's carry; nothing submits a Spark job."""
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
from airflow_provider_delta.operators.spark_base import committed_pair_id, resolve_app
from airflow_provider_delta.spark.delta_job import RUN_MARKER_KEY

START = dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)
END = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)


class TaskInstance:
    def __init__(self, dag_id: str, task_id: str, map_index: int = -1):
        self.dag_id, self.task_id, self.map_index, self.try_number = dag_id, task_id, map_index, 1
        self.run_id = "scheduled__2026-01-01T00:00:00+00:00"
        self.xcoms: dict[str, Any] = {}

    def xcom_push(self, key: str, value: Any) -> None:
        json.dumps(value)
        self.xcoms[key] = value


def context(dag_id: str, task_id: str, map_index: int = -1) -> dict[str, Any]:
    ti = TaskInstance(dag_id, task_id, map_index)
    return {"ti": ti, "task_instance": ti, "run_id": ti.run_id, "outlet_events": OutletEventAccessors(),
            "data_interval_start": START, "data_interval_end": END}


@pytest.mark.parametrize("operator", ["submit", "application"])
def test_a_mapped_tasks_own_0_1_0_commit_without_map_index_is_taken(tmp_path, operator):
    out = DeltaTable.create(str(tmp_path / "orders"), pa.schema([("id", pa.int64())]))
    ctx = context("shop", "load", map_index=2)
    old_job = {"dag_id": "shop", "task_id": "load", "run_id": ctx["run_id"], "try_number": 1}   # 0.1.0's job
    former = run_app_id("shop.load.2", ctx)                                                    # 0.1.0's id
    if operator == "submit":
        out.write(pa.table({"id": [1]}), app_id=former, app_version=run_app_version(ctx), job=old_job)
        task = DeltaSparkSubmitOperator(task_id="load", output_table_uri=out.uri, transform="identity")
    else:   # Delta Spark's commit: the run marker in userMetadata, no map_index in 0.1.0
        marker = json.dumps({RUN_MARKER_KEY: {**old_job, "input_table_uri": None,
                                                            "input_version": None}})
        out.write(pa.table({"id": [1]}), app_id=former, app_version=run_app_version(ctx),
                  user_metadata=marker)
        task = DeltaSparkApplicationOperator(task_id="load", output_table_uri=out.uri, application="/x/app.py")
    app_id, version = resolve_app(None, None, ctx, task)
    assert app_id == "shop:load[2]@20260101T000000Z-20260102T000000Z"
    assert committed_pair_id(out, app_id, version, ctx, task) == former


def test_held_a_mapped_commit_naming_its_map_index_is_taken_and_a_siblings_is_not(tmp_path):
    """The control of the xfail above: with map_index in the job (builds from 64128e8) the former id is
    taken for the same index and refused for a sibling's (c828048 holds there)."""
    out = DeltaTable.create(str(tmp_path / "orders"), pa.schema([("id", pa.int64())]))
    ctx = context("shop", "load", map_index=2)
    former = run_app_id("shop.load[2]", ctx)
    task = DeltaSparkSubmitOperator(task_id="load", output_table_uri=out.uri, transform="identity")
    app_id, version = resolve_app(None, None, ctx, task)
    job = {"dag_id": "shop", "task_id": "load", "run_id": ctx["run_id"], "try_number": 1, "map_index": 3}
    out.write(pa.table({"id": [1]}), app_id=former, app_version=version, job=job)
    assert committed_pair_id(out, app_id, version, ctx, task) == app_id        # index 3's commit: not ours
    other = DeltaTable.create(str(tmp_path / "o2"), pa.schema([("id", pa.int64())]))
    other.write(pa.table({"id": [1]}), app_id=former, app_version=version, job={**job, "map_index": 2})
    assert committed_pair_id(other, app_id, version, ctx, task) == former
