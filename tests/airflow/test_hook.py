"""DeltaTableHook with real Airflow connections (from AIRFLOW_CONN_* variables) and real tables."""
from __future__ import annotations

import json
import logging
import os
import time

import fsspec
import pyarrow as pa
import pytest
from fsspec.implementations.memory import MemoryFileSystem

from airflow_provider_delta.hooks import DeltaTableHook
from airflow_provider_delta.hooks.manifest import MANIFEST_FORMAT, read_manifest
from airflow_provider_delta.log import DeltaTable, SqlCommitOwner
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.errors import InvalidArgumentError, TimestampOutOfRangeError
from airflow_provider_delta.log.base.names import commit_path

SECRET = "Sup3r-Secret-Value"


class CredentialCheckingFS(MemoryFileSystem):
    """An in-memory fsspec filesystem that insists on the credentials the hook must pass."""

    protocol = "credtest"
    seen: list[tuple[str | None, str | None]] = []

    @classmethod
    def _strip_protocol(cls, path):
        if isinstance(path, str) and path.startswith("credtest://"):
            path = path[len("credtest://"):]
        return MemoryFileSystem._strip_protocol(path)

    def __init__(self, *args, username=None, password=None, **kwargs):
        if password != SECRET:
            raise PermissionError("wrong or missing password")
        CredentialCheckingFS.seen.append((username, password))
        super().__init__(*args, **kwargs)


fsspec.register_implementation("credtest", CredentialCheckingFS, clobber=True)


def set_conn(monkeypatch, conn_id: str, **fields) -> None:
    monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(fields))


def test_hook_identity():
    assert (DeltaTableHook.conn_name_attr, DeltaTableHook.default_conn_name, DeltaTableHook.conn_type,
            DeltaTableHook.hook_name) == ("delta_conn_id", "delta_default", "delta", "Delta Lake")


def test_absolute_table_needs_no_connection(make_table):
    table = make_table(commits=2)
    hook = DeltaTableHook()
    for uri in (table.storage.root, "file://" + table.storage.root):
        assert hook.latest_version(uri) == 2
        assert hook.snapshot(uri, version=1).version == 1


def test_relative_table_uses_the_connection_base_uri(monkeypatch, make_table, tmp_path):
    make_table("orders", commits=1)
    set_conn(monkeypatch, "lake", conn_type="delta", host=str(tmp_path))
    hook = DeltaTableHook(delta_conn_id="lake")
    assert hook.resolve_uri("orders") == f"{tmp_path}/orders"
    assert hook.get_table("orders").uri == f"file://{tmp_path}/orders"
    assert hook.get_table("orders") is hook.get_table("orders")  # one object: incremental refresh
    # without a conn id, relative URIs use delta_default
    set_conn(monkeypatch, "delta_default", conn_type="delta", host=str(tmp_path))
    assert DeltaTableHook().latest_version("orders") == 1


def test_relative_table_without_any_connection_is_a_clear_error(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_DELTA_DEFAULT", raising=False)
    with pytest.raises(InvalidArgumentError, match="'delta_default' is not defined"):
        DeltaTableHook().get_table("orders")
    with pytest.raises(InvalidArgumentError, match="'nope' is not defined"):
        DeltaTableHook("nope").get_table("/abs/t")


@pytest.mark.parametrize("value, parse_error", [
    ("delta://host:notaport/base", "Port could not be cast"),
    ('{"conn_type": "delta", "host": ', "JSONDecodeError"),
])
def test_a_connection_variable_that_does_not_parse_is_named_as_such(monkeypatch, value, parse_error):
    monkeypatch.setenv("AIRFLOW_CONN_BROKEN_LAKE", value)
    with pytest.raises(InvalidArgumentError) as info:
        DeltaTableHook("broken_lake").get_table("orders")
    msg = str(info.value)
    assert "AIRFLOW_CONN_BROKEN_LAKE" in msg and "does not parse" in msg and parse_error in msg
    assert "not defined" not in msg


def test_a_base_uri_of_only_a_scheme_takes_the_bucket_from_the_table_path(monkeypatch):
    set_conn(monkeypatch, "lake_root", conn_type="delta", host="s3://")
    assert DeltaTableHook("lake_root").resolve_uri("bucket/tbl") == "s3://bucket/tbl"


def test_login_and_password_reach_the_filesystem_and_are_never_logged(monkeypatch, caplog):
    set_conn(monkeypatch, "cred", conn_type="delta", host="credtest://bucket/base", login="reader",
             password=SECRET, extra={"single_writer": True})
    CredentialCheckingFS.seen.clear()
    fs = fsspec.filesystem("credtest", username="reader", password=SECRET)
    fs.pipe_file("/bucket/base/a.txt", b"x")
    caplog.set_level(logging.DEBUG)
    hook = DeltaTableHook("cred")
    ok, message = hook.test_connection()
    assert ok, message
    assert "listed 1 entries under credtest://bucket/base" in message
    table = hook.get_table("t1")
    assert table.storage.storage_options == {"username": "reader", "password": SECRET}
    assert ("reader", SECRET) in CredentialCheckingFS.seen
    assert SECRET not in caplog.text and SECRET not in message and SECRET not in repr(hook.get_config("t1"))


def test_test_connection_reports_failures(monkeypatch, tmp_path):
    set_conn(monkeypatch, "nohost", conn_type="delta")
    ok, message = DeltaTableHook("nohost").test_connection()
    assert not ok and "no base URI" in message
    set_conn(monkeypatch, "missing", conn_type="delta", host=str(tmp_path / "does-not-exist"))
    ok, message = DeltaTableHook("missing").test_connection()
    assert not ok and "FileNotFoundError" in message
    set_conn(monkeypatch, "badpw", conn_type="delta", host="credtest://b/x", password="wrong")
    ok, message = DeltaTableHook("badpw").test_connection()
    assert not ok and "PermissionError" in message


def test_commit_owner_from_another_connection(monkeypatch, tmp_path):
    owner_db = tmp_path / "owner.db"
    set_conn(monkeypatch, "owner_db", conn_type="sqlite", host=str(owner_db))
    set_conn(monkeypatch, "managed", conn_type="delta", host=str(tmp_path / "lake"),
             extra={"commit_owner": {"type": "sql", "conn_id": "owner_db", "backfill_batch_size": 50}})
    owner = SqlCommitOwner(f"sqlite:///{owner_db}", backfill_batch_size=50)
    created = DeltaTable.create(str(tmp_path / "lake" / "orders"), pa.schema([("id", pa.int64())]),
                                commit_owner=owner)
    created.write(pa.table({"id": [1]}))
    hook = DeltaTableHook("managed")
    assert isinstance(hook.get_commit_owner("orders"), SqlCommitOwner)
    assert hook.is_managed("orders")
    # the un-backfilled commit is only visible through the owner
    assert not (tmp_path / "lake" / "orders" / commit_path(1)).exists()
    assert hook.latest_version("orders") == 1
    assert DeltaTable(str(tmp_path / "lake" / "orders")).latest_version() == 0


def test_commit_files_records_job_and_txn(make_table):
    table = make_table(commits=1)
    hook = DeltaTableHook()
    job = {"dag_id": "d", "task_id": "t", "run_id": "r", "try_number": 2}
    import pyarrow.parquet as pq
    path = f"{table.storage.root}/part-extra.parquet"
    pq.write_table(pa.table({"id": [7]}), path)
    add = AddFile("part-extra.parquet", os.path.getsize(path), {"day": "x"}, int(time.time() * 1000))
    v = hook.commit_files(table.storage.root, add=[add], operation="WRITE", app_id="spark-job",
                          txn_version=3, job=job)
    actions = table.read_commit(v)
    info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
    assert info["job"] == job
    assert {"appId": "spark-job", "version": 3} == {k: a["txn"][k] for a in actions if "txn" in a
                                                    for k in ("appId", "version")}
    assert table.snapshot().transaction_version("spark-job") == 3
    v2 = hook.write_table(table.storage.root, pa.table({"id": [8], "day": ["y"]}), job=job)
    assert next(a["commitInfo"] for a in table.read_commit(v2) if "commitInfo" in a)["job"] == job


def test_resolve_version_by_timestamp(make_table):
    table = make_table(commits=2)
    history = {h["version"]: h["timestamp"] for h in table.history()}
    hook = DeltaTableHook()
    uri = table.storage.root
    assert hook.resolve_version(uri, timestamp=history[1]) == 1
    assert hook.resolve_version(uri, timestamp=history[2] - 0) == 2
    # after the latest commit but in the past: the latest version
    assert hook.resolve_version(uri, timestamp=history[2] + 1) == 2
    with pytest.raises(TimestampOutOfRangeError):
        hook.resolve_version(uri, timestamp=history[2] + 1, allow_after_latest=False)
    with pytest.raises(TimestampOutOfRangeError, match="before the earliest"):
        hook.resolve_version(uri, timestamp=history[0] - 1000)
    with pytest.raises(InvalidArgumentError, match="in the future"):
        hook.resolve_version(uri, timestamp=int(time.time() * 1000) + 3_600_000)
    with pytest.raises(InvalidArgumentError, match="either version or timestamp"):
        hook.resolve_version(uri, version=1, timestamp=history[1])


def test_snapshot_manifest_lists_exactly_the_files_of_the_version(make_table, tmp_path):
    from deltalake import DeltaTable as RustDeltaTable

    table = make_table(commits=3)
    hook = DeltaTableHook()
    job = {"dag_id": "dag", "task_id": "snap", "run_id": "manual__2026-01-01T00:00:00+00:00", "try_number": 1}
    out = hook.write_snapshot_manifest(table.storage.root, version=2, job=job)
    assert out["manifest_uri"] == (f"file://{table.storage.root}/_delta_manifests/dag/"
                                   "manual__2026-01-01T00_00_00_00_00/v2.json")
    doc = read_manifest(out["manifest_uri"])
    assert doc["format"] == MANIFEST_FORMAT and doc["version"] == 2 == out["version"]
    rust = RustDeltaTable(table.storage.root, version=2)  # an independent implementation
    rust_paths = sorted(u[len(table.storage.root) + 1:] for u in rust.file_uris())
    assert sorted(f["path"] for f in doc["files"]) == rust_paths
    assert out["num_files"] == doc["num_files"] == len(rust_paths)
    assert doc["partition_columns"] == ["day"] == rust.metadata().partition_columns
    assert [f["name"] for f in doc["schema"]["fields"]] == ["id", "day"]
    assert doc["timestamp"] == out["timestamp"] == table.snapshot(version=2).timestamp
    assert doc["num_records"] == 4 and doc["job"] == job
    for f in doc["files"]:
        assert f["uri"] == f"file://{table.storage.root}/{f['path']}"
        assert f["partition_values"]["day"] in f["path"]
        assert f["stats"]["numRecords"] >= 1 and f["size"] > 0
    # an explicit manifest location: relative below the table, or any URL
    rel = hook.write_snapshot_manifest(table.storage.root, manifest_uri="pins/latest.json")
    assert rel["manifest_uri"] == f"file://{table.storage.root}/pins/latest.json" and rel["version"] == 3
    mem = hook.write_snapshot_manifest(table.storage.root, version=1, manifest_uri="memory://pins/v1.json")
    assert read_manifest("memory://pins/v1.json")["version"] == 1 == mem["version"]


def test_vacuum_skips_manifests(make_table):
    table = make_table(commits=1)
    hook = DeltaTableHook()
    out = hook.write_snapshot_manifest(table.storage.root)
    report = hook.vacuum(table.storage.root, retention_hours=0, enforce_retention=False, dry_run=True)
    assert not any("_delta_manifests" in p for p in report["files_deleted"])
    assert read_manifest(out["manifest_uri"])["version"] == 1


def test_manifest_write_failure_is_a_storage_error_and_leaves_nothing(make_table, tmp_path):
    from airflow_provider_delta.log.base.errors import StorageError
    table = make_table(commits=1)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the manifest's folder should be")
    with pytest.raises(StorageError, match="cannot write the snapshot manifest"):
        DeltaTableHook().write_snapshot_manifest(table.storage.root, manifest_uri=str(blocker / "m.json"))
    assert blocker.read_text().startswith("a file")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["orders", "not-a-dir"])


def test_rewriting_a_manifest_replaces_it_atomically(make_table):
    table = make_table(commits=2)
    hook = DeltaTableHook()
    first = hook.write_snapshot_manifest(table.storage.root, version=1, manifest_uri="pin.json")
    second = hook.write_snapshot_manifest(table.storage.root, version=2, manifest_uri="pin.json")
    assert first["manifest_uri"] == second["manifest_uri"]
    assert read_manifest(second["manifest_uri"])["version"] == 2
    assert [p for p in os.listdir(table.storage.root) if p.endswith(".tmp")] == []


def test_vacuum_job_reaches_the_log_and_the_report(make_table, caplog):
    # the hook used to drop `job` for vacuum: it probed the function's signature and found no such argument
    table = make_table()
    job = {"dag_id": "maint", "task_id": "vacuum", "run_id": "r1", "try_number": 1}
    with caplog.at_level(logging.INFO, logger="airflow_provider_delta.log.maintenance.vacuum"):
        report = DeltaTableHook().vacuum(table.storage.root, job=job)
    assert report["job"] == job and report["dry_run"] is True
    assert any("maint" in r.getMessage() and "vacuum" in r.getMessage() for r in caplog.records)
    with pytest.raises(InvalidArgumentError, match="job must be a dict"):
        DeltaTableHook().vacuum(table.storage.root, job="maint")
