"""Real Airflow: dag.test() runs in a temporary AIRFLOW_HOME with SQLite, and the provider CLI.

Each DAG lives in ``tests/airflow/dags`` and runs in a subprocess (``dag_runner.py``)
that reports the run's state, task states, XComs and asset events.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from airflow_provider_delta.hooks.manifest import read_manifest
from airflow_provider_delta.log import DeltaTable, SqlCommitOwner
from airflow_provider_delta.log.base.names import commit_path

from airflow_test_support import AIRFLOW_BIN, HERE, airflow_env

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


def commit_info(table: DeltaTable, version: int) -> dict:
    return next(a["commitInfo"] for a in table.read_commit(version) if "commitInfo" in a)


def test_deferrable_sensor_waits_for_commits_of_another_process(run_dag, tmp_path):
    table = DeltaTable.create(str(tmp_path / "orders"), SCHEMA, partition_by=["day"])
    table.write(pa.table({"id": [1], "day": ["2026-01-01"]}))  # version 1: before the sensor starts
    marker = tmp_path / "sensor-started"
    writer = subprocess.Popen([sys.executable, str(HERE / "commit_writer.py"), table.storage.root, str(marker), "2"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        report = run_dag("delta_sensor_deferrable", env={
            "DELTA_TEST_TABLE": table.storage.root, "DELTA_TEST_MARKER": str(marker),
            "DELTA_TEST_AFTER": "1", "DELTA_TEST_TARGET": "4",
            "AIRFLOW_CONN_LAKE": json.dumps({"conn_type": "delta", "host": str(tmp_path)})})
        out, err = writer.communicate(timeout=120)
    finally:
        writer.kill()
    assert writer.returncode == 0, err
    assert json.loads(out) == [2, 3, 4]  # plain append, then two commits of app "external-writer"
    assert report.state == "success", report.output[-5000:]
    assert "[DAG TEST] running trigger in line" in report.output  # it really deferred
    result = report.xcoms["wait_for_writer"]["return_value"]
    commits = result["commits"]
    assert [c["version"] for c in commits] == [3, 4] and result["count"] == 2
    assert [c["txnVersion"] for c in commits] == [1, 2] and {c["appId"] for c in commits} == {"external-writer"}
    history = {h["version"]: h["timestamp"] for h in table.history()}
    assert [c["timestamp"] for c in commits] == [history[3], history[4]]
    assert report.xcoms["wait_for_writer"]["version"] == 4
    events = [e for e in report.asset_events if e["source_task_id"] == "wait_for_writer"]
    assert len(events) == 1 and events[0]["uri"] == f"delta://{table.storage.root}"
    assert events[0]["extra"] == result


def test_snapshot_checkpoint_and_maintenance_dag(run_dag, tmp_path):
    table = DeltaTable.create(str(tmp_path / "orders"), SCHEMA, partition_by=["day"])
    table.write(pa.table({"id": [1, 2], "day": ["2026-01-01", "2026-01-02"]}))  # version 1
    report = run_dag("delta_maintenance", env={"DELTA_TEST_TABLE": table.storage.root})
    assert report.state == "success", report.output[-5000:]
    assert set(report.tasks.values()) == {"success"}

    # the task's commit carries the job that made it
    appended = report.xcoms["append"]["return_value"]
    assert appended == 2
    job = commit_info(table, 2)["job"]
    assert job["dag_id"] == "delta_maintenance" and job["task_id"] == "append" and job["try_number"] == 1
    run_id = job["run_id"]

    # "as of data_interval_end": the run started before the append, so version 1 is pinned
    as_of = report.xcoms["snapshot_as_of_interval_end"]["return_value"]
    assert as_of["version"] == 1 and as_of["num_files"] == 2
    doc = read_manifest(as_of["manifest_uri"])
    assert doc["version"] == 1 and doc["job"]["run_id"] == run_id
    assert "/_delta_manifests/delta_maintenance/" in as_of["manifest_uri"]
    pinned = report.xcoms["snapshot_appended"]["return_value"]
    assert pinned["version"] == 2 and pinned["num_files"] == 3
    assert pinned["manifest_uri"] == f"file://{table.storage.root}/manifests/appended.json"

    cp = report.xcoms["checkpoint"]["return_value"]
    assert cp["version"] == 2 and cp["parts"] == 2 and cp["cleanup"]["dry_run"] is False
    log = os.listdir(table.storage.path("_delta_log"))
    assert "00000000000000000002.checkpoint.0000000001.0000000002.parquet" in log
    assert report.xcoms["cleanup"]["return_value"]["dry_run"] is True
    assert report.xcoms["vacuum"]["return_value"]["dry_run"] is True
    assert read_manifest(pinned["manifest_uri"])["version"] == 2  # vacuum kept the manifests

    by_task = {e["source_task_id"]: e for e in report.asset_events}
    assert by_task["snapshot_as_of_interval_end"]["extra"]["version"] == 1
    assert by_task["snapshot_as_of_interval_end"]["extra"]["manifest_uri"] == as_of["manifest_uri"]
    assert by_task["checkpoint"]["extra"]["version"] == 2
    assert {e["uri"] for e in report.asset_events} == {f"delta://{table.storage.root}"}


def test_backfill_on_a_managed_table_and_no_op_on_a_filesystem_table(run_dag, tmp_path):
    owner_db = tmp_path / "owner.db"
    lake = tmp_path / "lake"
    owner = SqlCommitOwner(f"sqlite:///{owner_db}", backfill_batch_size=100)
    managed = DeltaTable.create(str(lake / "orders"), SCHEMA, partition_by=["day"], commit_owner=owner)
    for i in range(3):
        managed.write(pa.table({"id": [i], "day": ["2026-01-01"]}))
    assert not managed.storage.exists(commit_path(1))  # ratified by the owner, not backfilled yet
    fs_table = DeltaTable.create(str(tmp_path / "plain"), SCHEMA)
    report = run_dag("delta_managed", env={
        "DELTA_TEST_FS_TABLE": fs_table.storage.root,
        "DELTA_TEST_ASSET": f"delta://{managed.storage.root}",
        "AIRFLOW_CONN_DELTA_MANAGED": json.dumps({
            "conn_type": "delta", "host": str(lake),
            "extra": {"commit_owner": {"type": "sql", "conn_id": "owner_db", "backfill_batch_size": 100}}}),
        "AIRFLOW_CONN_OWNER_DB": json.dumps({"conn_type": "sqlite", "host": str(owner_db)}),
    })
    assert report.state == "success", report.output[-5000:]
    bf = report.xcoms["backfill"]["return_value"]
    assert bf["managed"] is True and bf["backfilled"] == [1, 2, 3] and bf["version"] == 3
    for v in range(4):
        assert managed.storage.exists(commit_path(v))
    assert DeltaTable(managed.storage.root).latest_version() == 3  # visible without the owner now
    cp = report.xcoms["checkpoint"]["return_value"]
    assert cp["version"] == 3
    assert managed.storage.exists("_delta_log/00000000000000000003.checkpoint.parquet")
    noop = report.xcoms["backfill_filesystem_table"]["return_value"]
    assert noop["managed"] is False and noop["backfilled"] == [] and noop["version"] == 0
    extras = {e["source_task_id"]: e["extra"] for e in report.asset_events}
    assert extras["backfill"] == {"version": 3, "backfilled": [1, 2, 3]}
    assert extras["checkpoint"]["version"] == 3


def test_cli_lists_the_provider_and_the_delta_connection_type(tmp_path):
    env = airflow_env(tmp_path)
    providers = subprocess.run([AIRFLOW_BIN, "providers", "list"], env=env, capture_output=True, text=True,
                               timeout=300)
    assert providers.returncode == 0, providers.stderr
    assert "airflow-provider-delta" in providers.stdout
    hooks = subprocess.run([AIRFLOW_BIN, "providers", "hooks"], env=env, capture_output=True, text=True,
                           timeout=300)
    assert hooks.returncode == 0, hooks.stderr
    row = next((ln for ln in hooks.stdout.splitlines() if ln.split("|")[0].strip() == "delta"), None)
    assert row is not None, hooks.stdout
    assert "airflow_provider_delta.hooks.delta_table.DeltaTableHook" in row and "delta_conn_id" in row
    assert "Delta Lake" in row
