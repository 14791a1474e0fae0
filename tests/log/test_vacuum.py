"""Vacuum on real tables: what goes, what must never go, and the retention safety check."""
from __future__ import annotations

import hashlib
import json
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import write_deltalake

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import InvalidArgumentError
from airflow_provider_delta.log.maintenance.vacuum import is_hidden_name, vacuum

LOG = "_delta_log"
HOUR = 3_600_000
DAY = 24 * HOUR


def _touch(path: Path, ms: int) -> None:
    os.utime(path, (ms / 1000, ms / 1000))




def tree(root: Path) -> dict[str, str]:
    """Every file under root with a digest of its bytes (what 'untouched' means)."""
    out = {}
    for d, _dirs, files in os.walk(root):
        for f in files:
            p = Path(d) / f
            out[str(p.relative_to(root))] = hashlib.sha1(p.read_bytes()).hexdigest()
    return out


def rows(path: Path) -> list:
    t = RsTable(str(path)).to_pyarrow_table()
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in t.to_pylist())


def data_files(path: Path) -> list[Path]:
    return [p for p in path.rglob("*.parquet") if LOG not in p.parts]


@pytest.fixture
def table_path(tmp_path) -> Path:
    """Two appends and an overwrite (tombstones), data files 30 days old, plus stray files."""
    path = tmp_path / "t"
    for i, mode in enumerate(["error", "append", "overwrite"]):
        write_deltalake(str(path), pa.table({"id": [i, i + 10], "p": ["a", "b"]}), partition_by=["p"], mode=mode)
    old = int(time.time() * 1000) - 30 * DAY
    for f in data_files(path):
        _touch(f, old)
    stray = {
        "p=a/untracked-old.parquet": old, "untracked-root.parquet": old,
        "_change_data/cdc-00000.parquet": old,             # change data expires by age
        "_tmp/staging.parquet": old, ".hidden.parquet": old,  # hidden: never touched
        "p=a/.part-hidden.parquet.crc": old, "_x=1/data.parquet": old,
        f"{LOG}/not-a-log-file.txt": old, f"{LOG}/_sidecars/x.parquet": old,
    }
    for rel, ms in stray.items():
        p = path / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(b"x" * 10)
        _touch(p, ms)
    return path


def live_and_removed(path: Path) -> tuple[set[str], set[str]]:
    snap = DeltaTable(str(path)).snapshot()
    live = set(snap.files().column("path").to_pylist())
    removed = set(snap.tombstones(now_ms=snap.timestamp).column("path").to_pylist())
    return live, removed


# ------------------------------------------------------------------ hidden rule
@pytest.mark.parametrize("name, pcols, hidden", [
    ("_delta_log", (), True), (".git", (), True), ("_tmp", (), True), ("part-0.parquet", (), False),
    ("_change_data", (), False), ("_delta_index", (), False), ("_p=1", ("_p",), False),
    ("_p=1", ("q",), True), (".crc", ("p",), True), ("metadata", (), False),
])
def test_hidden_names_follow_delta_spark(name, pcols, hidden):
    assert is_hidden_name(name, pcols) is hidden


def test_iceberg_metadata_dir_is_hidden_with_uniform():
    assert is_hidden_name("metadata", (), iceberg_metadata_hidden=True)


# ----------------------------------------------------------------- behaviour
def test_unexpired_tombstones_are_kept_and_strays_go(table_path):
    live, removed = live_and_removed(table_path)
    assert removed
    before = tree(table_path)
    now = int(time.time() * 1000)
    r = vacuum(DeltaTable(str(table_path)), dry_run=False, now_ms=now)
    assert sorted(r["files_deleted"]) == sorted(["p=a/untracked-old.parquet", "untracked-root.parquet",
                                                  "_change_data/cdc-00000.parquet"])
    after = tree(table_path)
    assert set(before) - set(after) == set(r["files_deleted"])
    assert live | removed <= set(after)  # removed files are kept while their tombstone is young
    assert r["dry_run"] is False and r["num_files_deleted"] == 3 and r["bytes_deleted"] == 30


def test_expired_tombstones_files_are_deleted_and_table_still_reads(table_path):
    live, removed = live_and_removed(table_path)
    before_rows = rows(table_path)
    before = tree(table_path)
    log_before = {k: v for k, v in before.items() if k.startswith(LOG)}
    now = int(time.time() * 1000) + 8 * DAY   # a week and a day later: tombstones expired
    r = vacuum(DeltaTable(str(table_path)), dry_run=False, now_ms=now)
    assert removed <= set(r["files_deleted"])
    assert not (live & set(r["files_deleted"]))
    after = tree(table_path)
    assert {k: v for k, v in after.items() if k.startswith(LOG)} == log_before
    for kept in ("_tmp/staging.parquet", ".hidden.parquet", "p=a/.part-hidden.parquet.crc", "_x=1/data.parquet"):
        assert after[kept] == before[kept]
    assert rows(table_path) == before_rows
    assert DeltaTable(str(table_path)).snapshot().files().num_rows == len(live)


def test_dry_run_is_the_default_and_matches_the_real_run(table_path):
    before = tree(table_path)
    now = int(time.time() * 1000) + 8 * DAY
    dry = DeltaTable(str(table_path)).vacuum(now_ms=now)
    assert dry["dry_run"] is True and dry["files_deleted"]
    assert tree(table_path) == before
    real = vacuum(DeltaTable(str(table_path)), dry_run=False, now_ms=now)
    assert real["files_deleted"] == dry["files_deleted"]


def test_young_unreferenced_files_are_kept(table_path):
    now = int(time.time() * 1000)
    young = table_path / "p=b" / "just-written.parquet"
    young.write_bytes(b"new")
    _touch(young, now - 7 * DAY + 1)          # one ms younger than the retention
    edge = table_path / "p=b" / "exactly-at-cutoff.parquet"
    edge.write_bytes(b"edge")
    _touch(edge, now - 7 * DAY)               # not older than the cutoff: kept (Spark: mtime < cutoff)
    r = vacuum(DeltaTable(str(table_path)), dry_run=False, now_ms=now)
    assert young.exists() and edge.exists()
    assert "p=b/just-written.parquet" not in r["files_deleted"]


def test_empty_directories_are_removed(table_path):
    now = int(time.time() * 1000) + 8 * DAY
    r = vacuum(DeltaTable(str(table_path)), dry_run=False, now_ms=now)
    assert r["dirs_deleted"] >= 1
    assert not (table_path / "_change_data").exists()
    assert (table_path / "_tmp").exists() and (table_path / LOG).exists()


# ------------------------------------------------------------ retention check
def test_short_retention_is_refused_and_changes_nothing(table_path):
    before = tree(table_path)
    with pytest.raises(InvalidArgumentError, match="deletedFileRetentionDuration"):
        vacuum(DeltaTable(str(table_path)), retention_hours=1, dry_run=False)
    assert tree(table_path) == before


def test_short_retention_allowed_when_check_disabled(table_path):
    live, removed = live_and_removed(table_path)
    r = vacuum(DeltaTable(str(table_path)), retention_hours=0, dry_run=False, enforce_retention=False,
               now_ms=int(time.time() * 1000) + 1000)
    assert removed <= set(r["files_deleted"]) and not (live & set(r["files_deleted"]))


def test_table_retention_property_sets_the_minimum(tmp_path):
    path = tmp_path / "short"
    write_deltalake(str(path), pa.table({"x": [1]}),
                    configuration={"delta.deletedFileRetentionDuration": "interval 2 hours"})
    stray = path / "stray.parquet"
    stray.write_bytes(b"s")
    now = int(time.time() * 1000)
    _touch(stray, now - 3 * HOUR)
    with pytest.raises(InvalidArgumentError):
        vacuum(DeltaTable(str(path)), retention_hours=1.5, dry_run=False, now_ms=now)
    r = vacuum(DeltaTable(str(path)), retention_hours=2.5, dry_run=False, now_ms=now)
    assert r["files_deleted"] == ["stray.parquet"] and not stray.exists()
    assert r["retention_hours"] == 2.5


@pytest.mark.parametrize("bad", [-1, float("nan"), float("inf"), "24", True])
def test_bad_retention_values(table_path, bad):
    before = tree(table_path)
    with pytest.raises(InvalidArgumentError):
        vacuum(DeltaTable(str(table_path)), retention_hours=bad, dry_run=False, enforce_retention=False)
    assert tree(table_path) == before


# ------------------------------------------------- what the log may point at
def test_absolute_paths_inside_the_root_are_protected(tmp_path):
    path = tmp_path / "abs"
    write_deltalake(str(path), pa.table({"x": [1]}))
    src = next(p for p in data_files(path))
    moved = path / "elsewhere" / "abs-file.parquet"
    moved.parent.mkdir()
    moved.write_bytes(src.read_bytes())
    outside = tmp_path / "outside.parquet"
    outside.write_bytes(src.read_bytes())
    size = moved.stat().st_size
    commit = [
        {"commitInfo": {"timestamp": 1, "operation": "WRITE"}},
        {"add": {"path": moved.as_uri(), "partitionValues": {}, "size": size, "modificationTime": 1,
                 "dataChange": True}},
        {"add": {"path": outside.as_uri(), "partitionValues": {}, "size": size, "modificationTime": 1,
                 "dataChange": True}},
    ]
    (path / LOG / f"{1:020d}.json").write_text("\n".join(json.dumps(a) for a in commit) + "\n")
    old = int(time.time() * 1000) - 30 * DAY
    for f in [moved, outside, *data_files(path)]:
        _touch(f, old)
    r = vacuum(DeltaTable(str(path)), dry_run=False)
    assert r["files_deleted"] == []
    assert moved.exists() and outside.exists()


def test_deletion_vector_files_are_protected(copy_table):
    path = copy_table("dat/deletion_vectors/delta")
    dvs = list(path.glob("deletion_vector_*.bin"))
    assert dvs
    orphan = path / "deletion_vector_00000000-0000-0000-0000-000000000000.bin"
    orphan.write_bytes(b"orphan")
    old = int(time.time() * 1000) - 30 * DAY
    for d, _dirs, files in os.walk(path):
        for f in files:
            _touch(Path(d) / f, old)
    snap = DeltaTable(str(path)).snapshot()
    live = set(snap.files().column("path").to_pylist())
    r = vacuum(DeltaTable(str(path)), dry_run=False, now_ms=int(time.time() * 1000) + 400 * DAY)
    assert orphan.name in r["files_deleted"]
    assert all(d.exists() for d in dvs)
    assert all((path / p).exists() for p in live)
    assert DeltaTable(str(path)).snapshot().files().num_rows == len(live)


def test_underscore_partition_directories_are_vacuumed(tmp_path):
    path = tmp_path / "u"
    write_deltalake(str(path), pa.table({"x": [1, 2], "_p": ["a", "b"]}), partition_by=["_p"])
    stray = path / "_p=a" / "stray.parquet"
    stray.write_bytes(b"s")
    old = int(time.time() * 1000) - 30 * DAY
    for f in [stray, *data_files(path)]:
        _touch(f, old)
    r = vacuum(DeltaTable(str(path)), dry_run=False)
    assert r["files_deleted"] == ["_p=a/stray.parquet"]
    assert RsTable(str(path)).to_pyarrow_table().num_rows == 2


def test_symlinked_directories_are_not_followed(tmp_path):
    path = tmp_path / "s"
    write_deltalake(str(path), pa.table({"x": [1]}))
    outside = tmp_path / "outside_dir"
    outside.mkdir()
    victim = outside / "precious.parquet"
    victim.write_bytes(b"keep me")
    old = int(time.time() * 1000) - 30 * DAY
    _touch(victim, old)
    os.symlink(outside, path / "link")
    vacuum(DeltaTable(str(path)), dry_run=False, now_ms=int(time.time() * 1000) + 30 * DAY)
    assert victim.exists()


def test_dot_segments_in_log_paths_are_resolved(tmp_path):
    path = tmp_path / "dots"
    write_deltalake(str(path), pa.table({"x": [1]}))
    src = next(iter(data_files(path)))
    target = path / "kept.parquet"
    target.write_bytes(src.read_bytes())
    commit = [
        {"commitInfo": {"timestamp": 1, "operation": "WRITE"}},
        {"add": {"path": "sub/../kept.parquet", "partitionValues": {}, "size": target.stat().st_size,
                 "modificationTime": 1, "dataChange": True}},
    ]
    (path / LOG / f"{1:020d}.json").write_text("\n".join(json.dumps(a) for a in commit) + "\n")
    stray = path / "stray.parquet"
    stray.write_bytes(b"s")
    old = int(time.time() * 1000) - 30 * DAY
    for f in [target, stray, *data_files(path)]:
        _touch(f, old)
    r = vacuum(DeltaTable(str(path)), dry_run=False)
    assert r["files_deleted"] == ["stray.parquet"]
    assert target.exists()


def test_vacuum_on_non_local_storage():
    import uuid
    uri = f"memory://vac-{uuid.uuid4().hex}/t"
    schema = pa.schema([("id", pa.int64()), ("p", pa.string())])
    table = DeltaTable.create(uri, schema, partition_by=["p"])
    table.write(pa.table({"id": [1], "p": ["a"]}, schema=schema))
    table.write(pa.table({"id": [2], "p": ["a"]}, schema=schema), mode="overwrite")
    table.storage.fs.pipe_file(table.storage.path("_tmp/staging.parquet"), b"hidden")
    snap = table.snapshot()
    live = set(snap.files().column("path").to_pylist())
    removed = set(snap.tombstones().column("path").to_pylist())
    r = vacuum(DeltaTable(uri), dry_run=False, now_ms=int(time.time() * 1000) + 8 * DAY)
    assert set(r["files_deleted"]) == removed
    assert all(table.storage.exists(p) for p in live)
    assert not any(table.storage.exists(p) for p in removed)
    assert table.storage.exists("_tmp/staging.parquet")
    assert DeltaTable(uri).snapshot().to_pyarrow().to_pylist() == [{"id": 2, "p": "a"}]
