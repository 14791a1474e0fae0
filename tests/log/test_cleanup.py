"""Metadata cleanup on real logs with file times set explicitly (os.utime).

Every test checks the two promises of cleanup: the right files go, and every version
from the cutoff checkpoint on stays readable -- by us and by deltalake -- with the
same commit timestamp it had before.
"""
from __future__ import annotations

import json
import os
import uuid
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.maintenance.checkpoint import write_checkpoint
from airflow_provider_delta.log.base.errors import InvalidArgumentError, VersionNotFoundError
from airflow_provider_delta.log.maintenance.cleanup import cleanup_metadata, truncate_ms

LOG = "_delta_log"
DAY = 86_400_000
#: 2026-06-15T12:00:00Z: noon, so the day truncation of the cutoff is visible
NOW = 1_781_524_800_000
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _name(v: int, suffix: str = "json") -> str:
    return f"{v:020d}.{suffix}"


def _touch(path: Path, ms: int) -> None:
    os.utime(path, (ms / 1000, ms / 1000))


def build(path: Path, commits: int = 13, checkpoints=(3, 6, 9), age_days=lambda v: 45 - 2 * v,
          properties: dict | None = None, crc: bool = True) -> DeltaTable:
    """Versions 0..commits-1; version v's commit file is ``age_days(v)`` days old at NOW."""
    props = {"delta.checkpointInterval": "1000", **(properties or {})}
    table = DeltaTable.create(str(path), SCHEMA, partition_by=["p"], properties=props)
    for i in range(1, commits):
        table.write(pa.table({"id": [i], "p": ["a" if i % 2 else "b"]}, schema=SCHEMA))
    for v in checkpoints:
        write_checkpoint(table, v)
    for v in range(commits):
        ms = NOW - int(age_days(v) * DAY)
        _touch(path / LOG / _name(v), ms)
        if crc:
            (path / LOG / _name(v, "crc")).write_text("{}")
            _touch(path / LOG / _name(v, "crc"), ms)
        cp = path / LOG / _name(v, "checkpoint.parquet")
        if cp.exists():
            _touch(cp, ms + 1000)
    return DeltaTable(str(path))


def timestamps(path: Path, versions) -> dict[int, int]:
    table = DeltaTable(str(path))
    return {v: table.snapshot(version=v).timestamp for v in versions}


def rs_rows(path: Path, versions) -> dict[int, int]:
    return {v: RsTable(str(path), version=v).to_pyarrow_table().num_rows for v in versions}


def log_names(path: Path) -> set[str]:
    out = set()
    for root, _dirs, files in os.walk(path / LOG):
        rel = os.path.relpath(root, path / LOG)
        out |= {f if rel == "." else f"{rel}/{f}" for f in files}
    return out


# ------------------------------------------------------------------ the rule
def test_truncation_is_to_utc_midnight():
    assert truncate_ms(NOW - 30 * DAY, "day") == NOW - 30 * DAY - DAY // 2
    assert truncate_ms(NOW + 1234, "hour") == NOW
    assert truncate_ms(NOW + 61_234, "minute") == NOW + 60_000
    assert truncate_ms(NOW + 5, None) == NOW + 5


def test_deletes_everything_before_the_newest_checkpoint_at_or_before_the_cutoff(tmp_path):
    path = tmp_path / "t"
    build(path)
    ts_before = timestamps(path, range(13))
    rs_before = rs_rows(path, range(6, 13))
    names_before = log_names(path)

    result = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)

    # cutoff: NOW - 30 days truncated to midnight = 30.5 days ago; v7 is 31 days old, v8 29
    assert result["cutoff_timestamp"] == NOW - 30 * DAY - DAY // 2
    assert result["cutoff_version"] == 7
    assert result["checkpoint_version"] == 6
    gone = {_name(v) for v in range(6)} | {_name(v, "crc") for v in range(6)} | {_name(3, "checkpoint.parquet")}
    assert set(result["deleted"]) == {f"{LOG}/{n}" for n in gone}
    assert log_names(path) == names_before - gone
    # everything from the cutoff checkpoint on reads the same, with the same timestamps
    assert timestamps(path, range(6, 13)) == {v: ts_before[v] for v in range(6, 13)}
    assert rs_rows(path, range(6, 13)) == rs_before
    with pytest.raises(VersionNotFoundError):
        DeltaTable(str(path)).snapshot(version=5)


def test_second_run_deletes_nothing_more(tmp_path):
    path = tmp_path / "t"
    build(path)
    cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    names = log_names(path)
    again = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert again["deleted"] == [] and log_names(path) == names
    assert again["checkpoint_version"] is None


def test_retention_property_and_override(tmp_path):
    path = tmp_path / "t"
    build(path, properties={"delta.logRetentionDuration": "interval 40 days"})
    # 40 days: only v0..v2 are older (v2 is 41 days old) -> checkpoint 0? none at or before 2
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW, dry_run=True)
    assert r["cutoff_version"] == 2 and r["checkpoint_version"] is None and r["deleted"] == []
    # an explicit retention wins over the property
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW, retention_ms=20 * DAY, dry_run=True)
    assert r["cutoff_version"] == 12 and r["checkpoint_version"] == 9


def test_dry_run_lists_without_deleting(tmp_path):
    path = tmp_path / "t"
    build(path)
    names = log_names(path)
    dry = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW, dry_run=True)
    assert dry["dry_run"] is True and log_names(path) == names
    real = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert sorted(dry["deleted"]) == sorted(real["deleted"]) and real["deleted"]


def test_no_checkpoint_means_nothing_is_deleted(tmp_path):
    path = tmp_path / "t"
    build(path, checkpoints=())
    names = log_names(path)
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert r["cutoff_version"] == 7 and r["checkpoint_version"] is None
    assert log_names(path) == names


def test_checkpoint_newer_than_cutoff_is_not_used(tmp_path):
    path = tmp_path / "t"
    build(path, checkpoints=(9,))
    names = log_names(path)
    assert cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)["deleted"] == []
    assert log_names(path) == names


def test_incomplete_multipart_checkpoint_is_not_a_cutoff(tmp_path):
    path = tmp_path / "t"
    build(path, checkpoints=(3,))
    table = DeltaTable(str(path))
    write_checkpoint(table, 6, parts=2)
    os.remove(path / LOG / f"{6:020d}.checkpoint.0000000002.0000000002.parquet")
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert r["checkpoint_version"] == 3
    assert f"{LOG}/{6:020d}.checkpoint.0000000001.0000000002.parquet" not in r["deleted"]


def test_disabled_by_table_property_unless_forced(tmp_path):
    path = tmp_path / "t"
    build(path, properties={"delta.enableExpiredLogCleanup": "false"})
    names = log_names(path)
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert r["enabled"] is False and r["deleted"] == [] and log_names(path) == names
    forced = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW, force=True)
    assert forced["checkpoint_version"] == 6 and forced["deleted"]


# ---------------------------------------------------------------- timestamps
def test_skewed_file_times_move_the_cutoff_back_to_keep_timestamps(tmp_path):
    path = tmp_path / "t"
    # v6's file time is older than v5's: its timestamp is monotonized to v5's + 1 ms.
    # Deleting v5 would drop it back to its own file time, so checkpoint 3 must be used.
    ages = {5: 34.0, 6: 35.0}
    build(path, age_days=lambda v: ages.get(v, 45 - 2 * v))
    ts_before = timestamps(path, range(13))
    assert ts_before[6] == ts_before[5] + 1
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert r["checkpoint_version"] == 3
    assert timestamps(path, range(3, 13)) == {v: ts_before[v] for v in range(3, 13)}


def test_equal_file_times_block_cleanup_like_spark(tmp_path):
    # With one file time for all commits (a copied table), versions after the first get
    # monotonized times (+1 ms each). Deleting any prefix would shift the rest, so, as
    # Spark's BufferingLogDeletionIterator, nothing is deleted.
    path = tmp_path / "t"
    build(path, age_days=lambda v: 60)
    names = log_names(path)
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert r["cutoff_version"] == 12 and r["checkpoint_version"] is None
    assert log_names(path) == names


def test_in_commit_timestamps_decide_not_file_times(tmp_path):
    path = tmp_path / "ict"
    props = {"delta.enableInCommitTimestamps": "true", "delta.checkpointInterval": "1000"}
    table = DeltaTable.create(str(path), SCHEMA, partition_by=["p"], properties=props,
                              clock=lambda: NOW - 45 * DAY)
    for i in range(1, 13):
        ict = NOW - (45 - 2 * i) * DAY
        table.write(pa.table({"id": [i], "p": ["a"]}, schema=SCHEMA), clock=lambda ict=ict: ict)
    for v in (3, 6, 9):
        write_checkpoint(table, v)
    for name in os.listdir(path / LOG):   # file times all "now": they must not matter
        _touch(path / LOG / name, NOW)
    ts_before = timestamps(path, range(13))
    assert ts_before[7] == NOW - 31 * DAY
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert (r["cutoff_version"], r["checkpoint_version"]) == (7, 6)
    assert not (path / LOG / _name(5)).exists() and (path / LOG / _name(6)).exists()
    assert timestamps(path, range(6, 13)) == {v: ts_before[v] for v in range(6, 13)}
    assert rs_rows(path, [6, 12]) == {6: 6, 12: 12}


# ------------------------------------------------------ other kinds of files
def _compaction(path: Path, start: int, end: int) -> str:
    """A valid log compaction of append-only commits start..end (their adds, reconciled)."""
    lines = []
    for v in range(start, end + 1):
        for line in (path / LOG / _name(v)).read_text().splitlines():
            if line.startswith('{"add"'):
                lines.append(line)
    name = f"{start:020d}.{end:020d}.compacted.json"
    (path / LOG / name).write_text("\n".join(lines) + "\n")
    return name


def test_compactions_unbackfilled_commits_and_hidden_crc_companions(tmp_path):
    path = tmp_path / "t"
    build(path)
    old_compaction = _compaction(path, 1, 3)
    at_cutoff = _compaction(path, 6, 7)
    kept_compaction = _compaction(path, 7, 8)
    commits_dir = path / LOG / "_commits"
    commits_dir.mkdir()
    for v in (5, 6, 7):
        (commits_dir / f"{v:020d}.{uuid.uuid4()}.json").write_text("{}\n")
    (path / LOG / f".{_name(2)}.crc").write_text("hadoop checksum")
    (path / LOG / f".{_name(8)}.crc").write_text("hadoop checksum")
    ts_before = timestamps(path, range(6, 13))

    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert r["checkpoint_version"] == 6
    assert sorted(r["compactions"]) == [f"{LOG}/{old_compaction}", f"{LOG}/{at_cutoff}"]
    assert (path / LOG / kept_compaction).exists()
    assert sorted(os.path.basename(p)[:20] for p in r["unbackfilled"]) == [f"{5:020d}", f"{6:020d}"]
    assert [p.name[:20] for p in commits_dir.iterdir()] == [f"{7:020d}"]
    assert not (path / LOG / f".{_name(2)}.crc").exists()
    assert (path / LOG / f".{_name(8)}.crc").exists()
    assert timestamps(path, range(6, 13)) == ts_before
    assert rs_rows(path, [6, 9, 12]) == {6: 6, 9: 9, 12: 12}




def test_v2_checkpoint_and_its_sidecars_go_when_expired(copy_table):
    path = copy_table("delta-golden/v2-checkpoint-parquet")
    sidecars = sorted(p.name for p in (path / LOG / "_sidecars").iterdir() if not p.name.startswith("."))
    assert len(sidecars) == 2
    files_before = sorted(DeltaTable(str(path)).snapshot().files().column("path").to_pylist())
    for v in (3, 4):   # two more (empty) commits, then a classic checkpoint at 4
        (path / LOG / _name(v)).write_text(json.dumps({"commitInfo": {"timestamp": v, "operation": "X"}}) + "\n")
    write_checkpoint(DeltaTable(str(path)), 4, v2=False)
    stray = path / LOG / "_sidecars" / "young-unreferenced.parquet"
    stray.write_bytes(b"in-progress checkpoint")
    for d, _dirs, files in os.walk(path / LOG):
        for f in files:
            v = int(f.lstrip(".")[:20]) if f.lstrip(".")[:20].isdigit() else 0
            _touch(Path(d) / f, NOW - (60 - v) * DAY)   # distinct, increasing file times
    _touch(stray, NOW)   # younger than the cutoff: may belong to a checkpoint being written
    r = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert r["checkpoint_version"] == 4
    assert sorted(os.path.basename(p) for p in r["sidecars"]) == sidecars
    assert sorted(p.name for p in (path / LOG / "_sidecars").iterdir()) == ["young-unreferenced.parquet"]
    assert sorted(DeltaTable(str(path)).snapshot().files().column("path").to_pylist()) == files_before


def test_managed_commit_table_keeps_a_backfilled_commit(tmp_path):
    from airflow_provider_delta.log import InMemoryCommitOwner
    owner = InMemoryCommitOwner(backfill_batch_size=1)
    path = tmp_path / "m"
    # managed commits imply in-commit timestamps: make them 60 days old
    table = DeltaTable.create(str(path), SCHEMA, partition_by=["p"], commit_owner=owner,
                              properties={"delta.checkpointInterval": "1000"}, clock=lambda: NOW - 60 * DAY)
    for i in range(1, 8):
        table.write(pa.table({"id": [i], "p": ["a"]}, schema=SCHEMA), clock=lambda i=i: NOW - 60 * DAY + i)
    write_checkpoint(table, 4)
    for name in os.listdir(path / LOG):
        if name[:20].isdigit():
            _touch(path / LOG / name, NOW - 60 * DAY)
    unbackfilled = sorted(p.name for p in (path / LOG / "_commits").iterdir())
    assert {int(n[:20]) for n in unbackfilled} == set(range(1, 8))  # the owner's commit files
    table = DeltaTable(str(path), commit_owner=owner)
    before = table.snapshot().files().num_rows
    r = cleanup_metadata(table, now_ms=NOW)
    # every version is expired: the newest checkpoint (4) becomes the oldest version kept
    assert r["checkpoint_version"] == 4
    assert (path / LOG / _name(4)).exists()
    left = sorted(p.name for p in (path / LOG / "_commits").iterdir())
    assert left == [n for n in unbackfilled if int(n[:20]) > 4]
    assert DeltaTable(str(path), commit_owner=owner).snapshot().files().num_rows == before


# ------------------------------------------------------------------ bad input
@pytest.mark.parametrize("kwargs", [
    {"retention_ms": -1}, {"retention_ms": "30 days"}, {"truncate": "week"}, {"now_ms": "now"},
    {"now_ms": 1.5},
])
def test_bad_arguments_change_nothing(tmp_path, kwargs):
    path = tmp_path / "t"
    build(path)
    names = log_names(path)
    args = {"now_ms": NOW, **kwargs}
    with pytest.raises(InvalidArgumentError):
        cleanup_metadata(DeltaTable(str(path)), **args)
    assert log_names(path) == names


def test_table_facade_delegates(tmp_path):
    path = tmp_path / "t"
    build(path)
    r = DeltaTable(str(path)).cleanup_metadata(now_ms=NOW, dry_run=True)
    assert r["checkpoint_version"] == 6
    assert json.loads((path / LOG / "_last_checkpoint").read_text())["version"] == 9


def test_temporary_files_of_killed_writers_are_removed_once_stale(tmp_path):
    path = tmp_path / "t"
    t = DeltaTable.create(str(path), SCHEMA, partition_by=["p"])
    log_dir = path / LOG
    (log_dir / "_commits").mkdir()
    stale = [log_dir / ".00000000000000000001.json.0123456789abcdef0123456789abcdef.tmp",
             log_dir / "_commits" / ".00000000000000000002.x.json.fedcba9876543210fedcba9876543210.tmp"]
    fresh = log_dir / ".00000000000000000003.checkpoint.parquet.00000000000000000000000000000000.tmp"
    foreign = log_dir / ".someone-elses.tmp"
    for f in stale + [fresh, foreign]:
        f.write_bytes(b"partial")
    for f in stale + [foreign]:
        _touch(f, NOW - 2 * DAY)
    _touch(fresh, NOW - DAY // 2)        # may belong to a writer still at work
    dry = cleanup_metadata(DeltaTable(str(path)), now_ms=NOW, dry_run=True)
    assert sorted(dry["temp_files"]) == sorted(str(f.relative_to(path)) for f in stale)
    assert all(f.exists() for f in stale)
    cleanup_metadata(DeltaTable(str(path)), now_ms=NOW)
    assert not any(f.exists() for f in stale) and fresh.exists() and foreign.exists()
    assert t.snapshot().version == 0
