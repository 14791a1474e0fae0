"""Incremental refresh: ``Snapshot.update()`` and the table's cached latest snapshot.

A sensor polls the same table over and over, so refreshing a snapshot must read only
the commits that landed since, and give exactly what a fresh load gives: version,
protocol, metadata, live files, tombstones, app transactions and domain metadata.
Commits are written by delta-rs (``deltalake``, real data files) and by hand (for the
actions delta-rs does not write: metadata/protocol changes, domain metadata, txn with
removes). Reads are counted by wrapping ``table.storage.read_bytes`` and ``read_into`` (observation only).
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import CommitProperties, Transaction, write_deltalake

from airflow_provider_delta.log import CorruptLogError, DeltaTable, UnsupportedFeatureError
from corpus_expected import sorted_rows

NOW = 2_000_000_000_000  # fixed "now" for tombstone retention, so the comparison is stable


class Reads:
    """Paths passed to ``storage.read_bytes`` or ``read_into`` (commits read into one buffer)
    of one DeltaTable."""

    def __init__(self, table: DeltaTable, monkeypatch):
        self.paths: list[str] = []
        for name in ("read_bytes", "read_into"):
            monkeypatch.setattr(table.storage, name, self._counting(getattr(table.storage, name)))

    def _counting(self, orig):
        def counting(path, *a, **kw):
            self.paths.append(str(path))
            return orig(path, *a, **kw)
        return counting

    def commit_versions(self) -> list[int]:
        out = []
        for p in self.paths:
            name = p.rsplit("/", 1)[-1]
            if name.endswith(".json") and name[:20].isdigit() and len(name) == 25:
                out.append(int(name[:20]))
        return sorted(out)


def assert_same_state(a, b) -> None:
    """Two snapshots describe the same table state."""
    assert a.version == b.version
    assert a.protocol == b.protocol
    assert a.metadata == b.metadata
    assert a.schema == b.schema
    cols = ["path", "partition_values", "size", "modification_time", "data_change", "stats", "deletion_vector"]
    assert sorted_rows(a.files(), cols) == sorted_rows(b.files(), cols)
    tcols = ["path", "deletion_timestamp", "data_change"]
    assert sorted_rows(a.tombstones(now_ms=NOW - 10**9), tcols) == sorted_rows(b.tombstones(now_ms=NOW - 10**9), tcols)
    assert a.transactions(include_expired=True) == b.transactions(include_expired=True)
    assert a.domain_metadata() == b.domain_metadata()
    assert a.timestamp == b.timestamp


def _data(lo: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, lo + n), pa.int64()),
                     "part": pa.array([f"p{i % 3}" for i in range(lo, lo + n)])})


def _append_raw(root: Path, actions: list[dict]) -> int:
    """Hand-write the next commit (for actions delta-rs does not produce); returns its version."""
    log = root / "_delta_log"
    versions = [int(p.name[:20]) for p in log.iterdir() if p.name.endswith(".json") and len(p.name) == 25]
    v = max(versions) + 1
    (log / f"{v:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")
    return v


@pytest.fixture
def table_root(tmp_path) -> Path:
    root = tmp_path / "t"
    write_deltalake(str(root), _data(0, 10), partition_by=["part"])
    write_deltalake(str(root), _data(10, 5), mode="append", partition_by=["part"])
    return root


@pytest.mark.parametrize("state_loaded", [True, False])
def test_update_equals_fresh_snapshot_and_reads_only_new_commits(table_root, monkeypatch, state_loaded):
    t = DeltaTable(str(table_root))
    old = t.snapshot()
    if state_loaded:
        old.files()  # replayed state: update() overlays the new commits on it
    assert old.version == 1
    write_deltalake(str(table_root), _data(100, 4), mode="append", partition_by=["part"],
                    commit_properties=CommitProperties(app_transactions=[Transaction("app-1", 7, 1234)]))
    write_deltalake(str(table_root), _data(200, 3), mode="overwrite", partition_by=["part"])
    write_deltalake(str(table_root), _data(300, 2), mode="append", partition_by=["part"],
                    commit_properties=CommitProperties(app_transactions=[Transaction("app-1", 8, 1300)]))
    reads = Reads(t, monkeypatch)
    new = old.update()
    new.files()
    new.transactions()
    assert new.timestamp > 0
    assert reads.commit_versions() == [2, 3, 4]
    assert len(reads.paths) == 3, reads.paths  # nothing but the new commits
    assert new.version == 4 and old.version == 1
    fresh = DeltaTable(str(table_root)).snapshot()
    assert_same_state(new, fresh)
    assert new.transaction_version("app-1") == 8
    assert sorted_rows(new.to_pyarrow()) == sorted_rows(fresh.to_pyarrow())
    # the old snapshot is unchanged
    assert old.files().num_rows == DeltaTable(str(table_root)).snapshot(version=1).files().num_rows


def test_update_without_new_commits_reads_no_commit(table_root, monkeypatch):
    t = DeltaTable(str(table_root))
    snap = t.snapshot()
    snap.files()
    reads = Reads(t, monkeypatch)
    again = snap.update()
    assert again.version == snap.version
    assert reads.commit_versions() == []
    assert_same_state(again, DeltaTable(str(table_root)).snapshot())


def test_table_snapshot_refreshes_its_cache_incrementally(table_root, monkeypatch):
    t = DeltaTable(str(table_root))
    t.snapshot().files()
    reads = Reads(t, monkeypatch)
    for i in range(3):
        write_deltalake(str(table_root), _data(1000 + 10 * i, 2), mode="append", partition_by=["part"])
        before = len(reads.commit_versions())
        snap = t.snapshot()
        snap.files()
        assert reads.commit_versions()[before:] == [2 + i]
        assert_same_state(snap, DeltaTable(str(table_root)).snapshot())
    # an explicit version is never served from the cache
    assert t.snapshot(version=1).version == 1


def test_update_over_metadata_protocol_domain_and_removes(table_root, monkeypatch):
    """Hand-written commits: new configuration, a protocol upgrade, domain metadata set and
    removed, a txn, and removes of files that came from the base snapshot."""
    t = DeltaTable(str(table_root))
    old = t.snapshot()
    old.files()
    base_files = old.files().column("path").to_pylist()
    md = json.loads([line for line in (table_root / "_delta_log" / f"{0:020d}.json").read_text().splitlines()
                     if line.startswith('{"metaData"')][0])["metaData"]
    md["configuration"] = {"delta.appendOnly": "false", "custom.key": "v1"}
    _append_raw(table_root, [
        {"commitInfo": {"timestamp": 1, "operation": "SET TBLPROPERTIES"}},
        {"metaData": md},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                      "writerFeatures": ["domainMetadata", "appendOnly", "invariants"]}},
        {"domainMetadata": {"domain": "d1", "configuration": "{\"a\":1}", "removed": False}},
        {"domainMetadata": {"domain": "d2", "configuration": "{}", "removed": False}},
    ])
    _append_raw(table_root, [
        {"commitInfo": {"timestamp": 2, "operation": "DELETE"}},
        {"remove": {"path": base_files[0], "deletionTimestamp": NOW, "dataChange": True}},
        {"txn": {"appId": "raw-app", "version": 3}},
        {"domainMetadata": {"domain": "d2", "configuration": "{}", "removed": True}},
    ])
    reads = Reads(t, monkeypatch)
    new = old.update()
    assert reads.commit_versions() == [2, 3]
    fresh = DeltaTable(str(table_root)).snapshot()
    assert_same_state(new, fresh)
    assert new.metadata.configuration["custom.key"] == "v1"
    assert new.protocol.min_writer_version == 7
    assert new.domain_metadata() == {"d1": "{\"a\":1}"}
    assert base_files[0] not in new.files().column("path").to_pylist()
    assert new.transaction_version("raw-app") == 3
    assert [r["path"] for r in new.tombstones(now_ms=NOW).to_pylist()] == [base_files[0]]


def test_update_after_checkpoint_and_partition_change(table_root, monkeypatch):
    """A checkpoint written between refreshes does not need to be read; a new partitioning
    (overwrite with schema change) is picked up."""
    import deltalake
    t = DeltaTable(str(table_root))
    old = t.snapshot()
    old.files()
    deltalake.DeltaTable(str(table_root)).create_checkpoint()
    write_deltalake(str(table_root), pa.table({"id": pa.array([1, 2], pa.int64()), "k": ["a", "b"]}),
                    mode="overwrite", partition_by=["k"], schema_mode="overwrite")
    reads = Reads(t, monkeypatch)
    new = old.update()
    assert reads.commit_versions() == [2]
    assert new.partition_columns == ("k",)
    fresh = DeltaTable(str(table_root)).snapshot()
    assert fresh.segment.checkpoint_version == 1
    assert_same_state(new, fresh)
    assert sorted_rows(new.to_pyarrow()) == sorted_rows(fresh.to_pyarrow())


def test_update_with_gap_is_a_typed_error(table_root):
    t = DeltaTable(str(table_root))
    old = t.snapshot()
    old.files()
    write_deltalake(str(table_root), _data(50, 1), mode="append", partition_by=["part"])
    write_deltalake(str(table_root), _data(60, 1), mode="append", partition_by=["part"])
    (table_root / "_delta_log" / f"{2:020d}.json").unlink()
    with pytest.raises(CorruptLogError):
        old.update().files()


def test_update_from_an_older_version_goes_to_latest(table_root, monkeypatch):
    write_deltalake(str(table_root), _data(40, 2), mode="append", partition_by=["part"])
    t = DeltaTable(str(table_root))
    v0 = t.snapshot(version=0)
    v0.files()
    reads = Reads(t, monkeypatch)
    new = v0.update()
    assert reads.commit_versions() == [1, 2]
    assert_same_state(new, DeltaTable(str(table_root)).snapshot())


def test_update_refuses_a_protocol_needing_an_unknown_reader_feature(table_root):
    t = DeltaTable(str(table_root))
    old = t.snapshot()
    old.files()
    _append_raw(table_root, [
        {"commitInfo": {"timestamp": 1, "operation": "UPGRADE PROTOCOL"}},
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["futureFeatureX"],
                      "writerFeatures": ["futureFeatureX"]}},
    ])
    with pytest.raises(UnsupportedFeatureError) as ei:
        old.update()
    assert ei.value.feature == "futureFeatureX"
    with pytest.raises(UnsupportedFeatureError):
        t.snapshot()  # the cached path refuses too
    assert old.files().num_rows > 0  # the old snapshot is still usable


def test_update_on_in_commit_timestamp_table(tmp_path, monkeypatch):
    """ICT from creation: the refreshed snapshot's timestamp is the new commit's ICT."""
    root = tmp_path / "ict"
    log = root / "_delta_log"
    log.mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]})
    (log / f"{0:020d}.json").write_text("\n".join(json.dumps(a) for a in [
        {"commitInfo": {"timestamp": 1000, "inCommitTimestamp": 1000, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["inCommitTimestamp"]}},
        {"metaData": {"id": "i", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                      "partitionColumns": [], "configuration": {"delta.enableInCommitTimestamps": "true"}}},
    ]) + "\n")
    t = DeltaTable(str(root))
    old = t.snapshot()
    assert old.timestamp == 1000
    for v, ict in ((1, 2000), (2, 2500)):
        _append_raw(root, [{"commitInfo": {"timestamp": 1, "inCommitTimestamp": ict, "operation": "WRITE"}},
                           {"txn": {"appId": "x", "version": v}}])
    reads = Reads(t, monkeypatch)
    new = old.update()
    assert new.timestamp == 2500
    assert new.transaction_version("x") == 2
    assert reads.commit_versions() == [1, 2]
    assert_same_state(new, DeltaTable(str(root)).snapshot())


def test_snapshots_while_a_writer_commits(table_root):
    """A reader refreshing while delta-rs commits in another thread always sees a complete
    version (atomic commit files): each refreshed snapshot equals a fresh load of the same
    version, and versions never go backwards."""
    import threading

    done = threading.Event()
    errors: list[BaseException] = []

    def writer():
        try:
            for i in range(12):
                write_deltalake(str(table_root), _data(500 + 10 * i, 2), mode="append", partition_by=["part"])
        except BaseException as e:  # surfaced below
            errors.append(e)
        finally:
            done.set()

    t = DeltaTable(str(table_root))
    seen: list[int] = []
    th = threading.Thread(target=writer)
    th.start()
    try:
        while True:
            finished = done.is_set()  # read before the snapshot: a later one sees every commit
            snap = t.snapshot()
            seen.append(snap.version)
            fresh = DeltaTable(str(table_root)).snapshot(version=snap.version)
            assert sorted(snap.files().column("path").to_pylist()) == sorted(fresh.files().column("path").to_pylist())
            if finished:
                break
    finally:
        th.join()
    assert not errors, errors
    assert seen == sorted(seen)
    assert seen[-1] == 13
    assert_same_state(t.snapshot(), DeltaTable(str(table_root)).snapshot())
