"""The Delta operators through execute(context) on real tables."""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest
from airflow.sdk import Asset

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.hooks.manifest import read_manifest
from airflow_provider_delta.log import DeltaTable, SqlCommitOwner
from airflow_provider_delta.log.base.errors import InvalidArgumentError, VersionNotFoundError
from airflow_provider_delta.log.base.names import commit_path
from airflow_provider_delta.operators import (DeltaBackfillOperator, DeltaCheckpointOperator,
                                              DeltaMetadataCleanupOperator, DeltaTimeTravelSnapshotOperator,
                                              DeltaVacuumOperator)
from airflow_provider_delta.operators.base import job_info

ROW = pa.table({"id": [1], "day": ["2026-01-01"]})


def log_files(table: DeltaTable) -> list[str]:
    return sorted(os.listdir(table.storage.path("_delta_log")))


# ----------------------------------------------------------------- snapshot
def test_snapshot_by_version_writes_manifest_and_emits_event(make_table, make_context):
    table = make_table(commits=3)
    asset = to_asset(table_uri=table.storage.root)
    ctx = make_context("pin")
    op = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root, version="2", outlets=[asset])
    out = op.execute(ctx)
    assert out["version"] == 2 and out["num_files"] == 4
    assert out["timestamp"] == table.snapshot(version=2).timestamp
    doc = read_manifest(out["manifest_uri"])
    assert doc["version"] == 2 and doc["job"] == job_info(ctx) and doc["job"]["task_id"] == "pin"
    assert "/_delta_manifests/test_dag/manual__2026-01-01T00_00_00_00_00/v2.json" in out["manifest_uri"]
    assert ctx["outlet_events"][asset].extra == {"version": 2, "timestamp": out["timestamp"],
                                                 "manifest_uri": out["manifest_uri"]}
    json.dumps(out)


def test_snapshot_by_rendered_timestamp(make_table, make_context):
    table = make_table(commits=2)
    time.sleep(0.01)
    between = time.time()
    time.sleep(0.01)
    table.write(ROW)
    from datetime import datetime, timezone
    rendered = str(datetime.fromtimestamp(between, tz=timezone.utc))  # like "{{ data_interval_end }}"
    out = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root, timestamp=rendered,
                                          manifest_uri="pins/as_of.json").execute(make_context())
    assert out["version"] == 2
    assert out["manifest_uri"] == f"file://{table.storage.root}/pins/as_of.json"
    assert read_manifest(out["manifest_uri"])["requested"]["timestamp"] == rendered
    # empty rendered values mean "not given": the latest version
    out = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root, version="None",
                                          timestamp="").execute(make_context())
    assert out["version"] == 3


def test_snapshot_rejects_bad_input_without_writing(make_table, make_context):
    table = make_table(commits=1)
    before = sorted(os.listdir(table.storage.root))
    with pytest.raises(InvalidArgumentError, match="either version or timestamp"):
        DeltaTimeTravelSnapshotOperator(task_id="p", table_uri=table.storage.root, version=1,
                                        timestamp="2026-01-01T00:00:00Z").execute(make_context())
    with pytest.raises(VersionNotFoundError):
        DeltaTimeTravelSnapshotOperator(task_id="p", table_uri=table.storage.root, version=9).execute(make_context())
    with pytest.raises(InvalidArgumentError, match="table version"):
        DeltaTimeTravelSnapshotOperator(task_id="p", table_uri=table.storage.root, version="v1").execute(make_context())
    assert sorted(os.listdir(table.storage.root)) == before


# --------------------------------------------------------------- checkpoint
def test_checkpoint_single_and_multi_part_then_cleanup(make_table, make_context):
    table = make_table(commits=3)
    asset = to_asset(table_uri=table.storage.root)
    ctx = make_context()
    out = DeltaCheckpointOperator(task_id="cp", table_uri=table.storage.root, version=1,
                                  outlets=[asset]).execute(ctx)
    assert out == {"table_uri": table.uri, "version": 1, "parts": 1, "cleanup": None}
    assert "00000000000000000001.checkpoint.parquet" in log_files(table)
    assert ctx["outlet_events"][asset].extra == {"version": 1, "checkpoint_version": 1, "committed": False}

    before = log_files(table)
    report = DeltaCheckpointOperator(task_id="cp", table_uri=table.storage.root, version=2,
                                     cleanup=True).execute(make_context())["cleanup"]
    assert report["dry_run"] is True                   # the default: nothing deleted unless asked
    assert set(before) <= set(log_files(table))
    out = DeltaCheckpointOperator(task_id="cp", table_uri=table.storage.root, parts="2",
                                  cleanup=True, cleanup_dry_run=False).execute(make_context())
    assert out["version"] == 3 and out["parts"] == 2
    assert {f for f in log_files(table) if ".checkpoint." in f and f.startswith("00000000000000000003")} == {
        "00000000000000000003.checkpoint.0000000001.0000000002.parquet",
        "00000000000000000003.checkpoint.0000000002.0000000002.parquet"}
    assert out["cleanup"]["dry_run"] is False and "deleted" in out["cleanup"]
    # readers agree on the checkpointed state
    assert table.snapshot().num_files() == DeltaTable(table.storage.root).snapshot(version=3).num_files()


def test_checkpoint_of_a_missing_version_fails_cleanly(make_table, make_context):
    table = make_table(commits=1)
    before = log_files(table)
    with pytest.raises(VersionNotFoundError):
        DeltaCheckpointOperator(task_id="cp", table_uri=table.storage.root, version=5).execute(make_context())
    assert log_files(table) == before


# ----------------------------------------------------------------- backfill
def test_backfill_is_a_clear_no_op_on_filesystem_tables(make_table, make_context):
    table = make_table(commits=2)
    before = log_files(table)
    out = DeltaBackfillOperator(task_id="bf", table_uri=table.storage.root).execute(make_context())
    assert out["managed"] is False and out["backfilled"] == [] and out["version"] == 2
    assert "not a managed-commit table" in out["message"]
    assert log_files(table) == before


def test_backfill_managed_table_up_to_a_version_then_all(tmp_path, make_context, monkeypatch):
    owner_db = tmp_path / "owner.db"
    monkeypatch.setenv("AIRFLOW_CONN_MANAGED", json.dumps({
        "conn_type": "delta", "host": str(tmp_path / "lake"),
        "extra": {"commit_owner": {"type": "sql", "url": f"sqlite:///{owner_db}", "backfill_batch_size": 100}}}))
    owner = SqlCommitOwner(f"sqlite:///{owner_db}", backfill_batch_size=100)
    table = DeltaTable.create(str(tmp_path / "lake" / "orders"), pa.schema([("id", pa.int64())]),
                              commit_owner=owner)
    for i in range(3):
        table.write(pa.table({"id": [i]}))
    assert not table.storage.exists(commit_path(1))
    asset = Asset(f"delta://{table.storage.root}")
    ctx = make_context()
    out = DeltaBackfillOperator(task_id="bf", table_uri="orders", delta_conn_id="managed", version="2",
                                outlets=[asset]).execute(ctx)
    assert out["managed"] is True and out["backfilled"] == [1, 2] and out["version"] == 3
    assert table.storage.exists(commit_path(2)) and not table.storage.exists(commit_path(3))
    assert ctx["outlet_events"][asset].extra == {"version": 3, "backfilled": [1, 2]}
    out = DeltaBackfillOperator(task_id="bf", table_uri="orders", delta_conn_id="managed").execute(make_context())
    assert out["backfilled"] == [3] and table.storage.exists(commit_path(3))
    # now the checkpoint operator's default (latest backfilled) is the latest version
    cp = DeltaCheckpointOperator(task_id="cp", table_uri="orders", delta_conn_id="managed").execute(make_context())
    assert cp["version"] == 3


def test_checkpoint_default_is_the_latest_backfilled_version(tmp_path, make_context, monkeypatch):
    owner_db = tmp_path / "owner.db"
    monkeypatch.setenv("AIRFLOW_CONN_MANAGED", json.dumps({
        "conn_type": "delta", "host": str(tmp_path),
        "extra": {"commit_owner": {"type": "sql", "url": f"sqlite:///{owner_db}", "backfill_batch_size": 100}}}))
    owner = SqlCommitOwner(f"sqlite:///{owner_db}", backfill_batch_size=100)
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), commit_owner=owner)
    table.write(pa.table({"id": [1]}))  # version 1: not backfilled
    out = DeltaCheckpointOperator(task_id="cp", table_uri="t", delta_conn_id="managed").execute(make_context())
    assert out["version"] == 0


# -------------------------------------------------------------- maintenance
def _orphan(table: DeltaTable) -> str:
    path = os.path.join(table.storage.root, "day=2026-01-01", "orphan.parquet")
    with open(path, "wb") as f:
        f.write(b"not referenced by any version")
    old = time.time() - 10 * 24 * 3600
    os.utime(path, (old, old))
    return path


def test_vacuum_is_a_dry_run_unless_told_otherwise(make_table, make_context):
    table = make_table(commits=1)
    orphan = _orphan(table)
    out = DeltaVacuumOperator(task_id="vac", table_uri=table.storage.root).execute(make_context())
    assert out["dry_run"] is True and out["files_deleted"] == ["day=2026-01-01/orphan.parquet"]
    assert os.path.exists(orphan)
    out = DeltaVacuumOperator(task_id="vac", table_uri=table.storage.root, dry_run=False).execute(make_context())
    assert out["num_files_deleted"] == 1 and not os.path.exists(orphan)
    assert table.snapshot().to_pyarrow().num_rows == 2  # live data untouched


def test_maintenance_emits_an_asset_event_only_when_it_deleted_something(make_table, make_context):
    """Vacuum and cleanup add no table version: a dry run or a run that deleted nothing must not
    start the DAGs scheduled on the table; a run that deleted files says so, with committed false."""
    table = make_table(commits=1)
    _orphan(table)
    asset = to_asset(table_uri=table.storage.root)

    def run(cls, **kwargs):
        ctx = make_context()
        op = cls(task_id="m", table_uri=table.storage.root, outlets=[asset], **kwargs)
        op.execute(ctx)
        return op.outlets, ctx["outlet_events"][asset].extra

    assert run(DeltaVacuumOperator) == ([], {})                                   # dry run
    outlets, extra = run(DeltaVacuumOperator, dry_run=False)                      # deletes the orphan
    assert outlets == [asset]
    assert extra == {"version": 1, "committed": False, "maintenance": "vacuum", "deleted_files": 1}
    assert run(DeltaVacuumOperator, dry_run=False) == ([], {})                    # nothing left to delete
    assert run(DeltaMetadataCleanupOperator, dry_run=False) == ([], {})           # nothing expired
    ctx = make_context()
    op = DeltaBackfillOperator(task_id="bf", table_uri=table.storage.root, outlets=[asset])
    op.execute(ctx)                                                              # a filesystem table
    assert op.outlets == [] and ctx["outlet_events"][asset].extra == {}


def test_vacuum_refuses_a_short_retention(make_table, make_context):
    table = make_table(commits=1)
    orphan = _orphan(table)
    with pytest.raises(InvalidArgumentError, match="retention"):
        DeltaVacuumOperator(task_id="vac", table_uri=table.storage.root, retention_hours="1",
                            dry_run=False).execute(make_context())
    assert os.path.exists(orphan)


def test_metadata_cleanup_is_a_dry_run_unless_told_otherwise(make_table, make_context):
    table = make_table(commits=3)
    table.checkpoint(2)
    day = 24 * 3600
    for v in (0, 1, 2, 3):  # a log written two months ago, a day per commit
        old = time.time() - (60 - v) * day
        os.utime(table.storage.path(commit_path(v)), (old, old))
    before = log_files(table)
    out = DeltaMetadataCleanupOperator(task_id="clean", table_uri=table.storage.root).execute(make_context())
    assert out["dry_run"] is True and out["commits"] and log_files(table) == before
    out = DeltaMetadataCleanupOperator(task_id="clean", table_uri=table.storage.root, dry_run="False",
                                       retention_hours="24").execute(make_context())
    assert out["dry_run"] is False and out["retention_ms"] == 24 * 3_600_000
    assert sorted(os.path.basename(p) for p in out["commits"]) == [
        "00000000000000000000.json", "00000000000000000001.json"]
    assert "00000000000000000000.json" not in log_files(table)
    assert "00000000000000000002.json" in log_files(table)
    assert DeltaTable(table.storage.root).snapshot().version == 3 and out["version"] == 3


def test_every_operator_templates_its_arguments():
    assert set(DeltaTimeTravelSnapshotOperator.template_fields) >= {"table_uri", "version", "timestamp", "manifest_uri"}
    assert set(DeltaCheckpointOperator.template_fields) >= {"table_uri", "version", "parts"}
    assert set(DeltaBackfillOperator.template_fields) >= {"table_uri", "version", "delta_conn_id"}
    assert set(DeltaVacuumOperator.template_fields) >= {"table_uri", "retention_hours", "dry_run"}
    assert set(DeltaMetadataCleanupOperator.template_fields) >= {"table_uri", "retention_hours", "dry_run"}


def test_templates_render_with_jinja(make_table, make_context):
    table = make_table(commits=2)
    op = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri="{{ params.root }}", version="{{ params.v }}",
                                         params={"root": table.storage.root, "v": 1})
    ctx = make_context("pin")
    ctx["params"] = {"root": table.storage.root, "v": 1}
    op.render_template_fields(ctx)
    assert op.table_uri == table.storage.root and op.version == "1"
    assert op.execute(ctx)["version"] == 1


def test_maintenance_tasks_fail_on_a_writer_feature_the_package_does_not_know(make_table, make_context):
    from airflow_provider_delta.log import UnsupportedFeatureError
    table = make_table(commits=1)
    proto = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "futureFeatureX"]}
    with open(os.path.join(table.storage.root, commit_path(2)), "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "UPGRADE"}}) + "\n"
                + json.dumps({"protocol": proto}) + "\n")
    before = log_files(table)
    for op in (DeltaVacuumOperator(task_id="vac", table_uri=table.storage.root, dry_run=False),
               DeltaMetadataCleanupOperator(task_id="clean", table_uri=table.storage.root, dry_run=False),
               DeltaCheckpointOperator(task_id="cp", table_uri=table.storage.root)):
        with pytest.raises(UnsupportedFeatureError, match="cannot .*futureFeatureX"):
            op.execute(make_context())
    assert log_files(table) == before
