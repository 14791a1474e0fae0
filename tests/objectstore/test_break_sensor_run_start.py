"""Break review of airflow-prod: the sensor's ``run_start`` baseline on an object store.

The baseline is "the version as of the DAG run's start, from commit timestamps". Without
in-commit timestamps a commit's timestamp is its object's Last-Modified, which S3 (and
moto) give in whole seconds. A writer task that commits in the same second as the run
started, but after it, gets a timestamp before the run's start: the sensor right after it
takes that commit as part of the baseline and never counts it (it waits until its timeout).
"""
from __future__ import annotations

import json
import time
from datetime import datetime, timezone
from types import SimpleNamespace

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


@pytest.fixture
def s3(object_stores):
    return object_stores("s3")


@pytest.fixture
def lake(s3, monkeypatch):
    extra = {"storage_options": {k: v for k, v in s3.options.items() if k not in ("key", "secret")}}
    if not s3.conditional_create:
        extra["single_writer"] = True
    conn = {"conn_type": "delta", "host": "s3://delta-tests", "login": s3.options["key"],
            "password": s3.options["secret"], "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_RUN_START", json.dumps(conn))
    return "lake_run_start"


def test_sensor_run_start_counts_a_commit_in_the_same_second_on_s3(s3, lake):
    from airflow_provider_delta.hooks.delta_table import DeltaTableHook
    from airflow_provider_delta.sensors import DeltaCommitSensor

    name = s3.uri("runstart").split("/", 3)[3]
    table = DeltaTableHook(lake).get_table(name)
    DeltaTable.create(table.uri, SCHEMA, **s3.table_kwargs)
    for _ in range(20):                                  # a run that starts early in a second, a quick writer
        while (time.time() % 1) > 0.2:
            time.sleep(0.01)
        run = SimpleNamespace(start_date=datetime.now(timezone.utc))
        time.sleep(0.02)
        version = table.write(pa.table({"id": [1], "day": ["2026-01-01"]}))   # the upstream writer task
        committed = table.history(1)[0]["timestamp"]
        start_ms = int(run.start_date.timestamp() * 1000)
        if committed < start_ms:                         # the situation: commit after the start, dated before
            break
    else:
        pytest.skip("the store kept sub-second commit times: the situation did not arise")
    sensor = DeltaCommitSensor(task_id="wait", table_uri=name, delta_conn_id=lake, poke_interval=0.05, timeout=5)
    assert sensor.poke({"dag_run": run}) is True, f"version {version} committed after the run started"


def _deferred_after_version(sensor, run) -> int:
    from airflow.sdk.exceptions import TaskDeferred
    with pytest.raises(TaskDeferred) as deferred:
        sensor.execute({"dag_run": run})
    return deferred.value.trigger.serialize()[1]["after_version"]


def test_sensor_run_start_on_s3_leaves_out_commits_of_earlier_seconds(s3, lake):
    """The whole-second rule counts only the start's own second: a commit of an earlier second is the baseline."""
    from airflow_provider_delta.hooks.delta_table import DeltaTableHook
    from airflow_provider_delta.sensors import DeltaCommitSensor

    name = s3.uri("runstart-earlier").split("/", 3)[3]
    table = DeltaTableHook(lake).get_table(name)
    DeltaTable.create(table.uri, SCHEMA, **s3.table_kwargs)
    version = table.write(pa.table({"id": [1], "day": ["2026-01-01"]}))
    time.sleep(1.05 - time.time() % 1)                   # the next second has begun
    run = SimpleNamespace(start_date=datetime.now(timezone.utc))
    sensor = DeltaCommitSensor(task_id="wait", table_uri=name, delta_conn_id=lake, deferrable=True, timeout=5)
    assert _deferred_after_version(sensor, run) == version


def test_sensor_run_start_on_s3_with_in_commit_timestamps_compares_milliseconds(s3, lake):
    """In-commit timestamps have milliseconds: a commit just before the start, in its second, is not counted."""
    from airflow_provider_delta.hooks.delta_table import DeltaTableHook
    from airflow_provider_delta.sensors import DeltaCommitSensor

    name = s3.uri("runstart-ict").split("/", 3)[3]
    table = DeltaTableHook(lake).get_table(name)
    DeltaTable.create(table.uri, SCHEMA, properties={"delta.enableInCommitTimestamps": "true"}, **s3.table_kwargs)
    version = table.write(pa.table({"id": [1], "day": ["2026-01-01"]}))
    time.sleep(0.05)
    run = SimpleNamespace(start_date=datetime.now(timezone.utc))
    sensor = DeltaCommitSensor(task_id="wait", table_uri=name, delta_conn_id=lake, deferrable=True, timeout=5)
    assert _deferred_after_version(sensor, run) == version
