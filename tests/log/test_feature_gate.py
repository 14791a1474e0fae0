"""The table-feature gate: every operation asks before it writes or deletes anything.

Tables are made by our writer; a raw commit then upgrades the protocol to features this
package does not know (or knows only for some operations). Each refused operation must
raise UnsupportedFeatureError naming the feature and the operation, and leave every file
of the table as it was.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import (AddFile, DeltaTable, InMemoryCommitOwner, StagedCommitsCatalog,
                                        UnsupportedFeatureError)
from airflow_provider_delta.log.base.features import Operation, require
from airflow_provider_delta.log.base.names import commit_path

SCHEMA = pa.schema([("id", pa.int64())])
DAY_MS = 86_400_000


def tree(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` with its size and mtime: what 'nothing changed' compares."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            st = os.stat(p)
            out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
    return out


def upgrade(path: Path, version: int, reader: list[str] | None, writer: list[str],
            configuration: dict[str, str] | None = None) -> None:
    """Commit ``version`` by hand: a protocol with these features (and optionally new properties)."""
    table = DeltaTable(str(path))
    snap = table.snapshot()
    proto = {"minReaderVersion": 3 if reader is not None else 1, "minWriterVersion": 7,
             "writerFeatures": writer}
    if reader is not None:
        proto["readerFeatures"] = reader
    actions = [{"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "SET TBLPROPERTIES"}},
               {"protocol": proto}]
    if configuration:
        md = snap.metadata.with_configuration(configuration).to_json()
        actions.append({"metaData": md})
    (path / commit_path(version)).write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def old_orphan(path: Path) -> None:
    orphan = path / "orphan.parquet"
    orphan.write_bytes(b"x")
    old = time.time() - 30 * 24 * 3600
    os.utime(orphan, (old, old))


def make(tmp_path: Path, writer_features: list[str], reader_features: list[str] | None = None,
         configuration: dict[str, str] | None = None) -> Path:
    path = tmp_path / "t"
    t = DeltaTable.create(str(path), SCHEMA)
    t.auto_checkpoint = False
    t.write(pa.table({"id": [1]}))
    t.checkpoint()
    upgrade(path, 2, reader_features, ["appendOnly", "invariants", *writer_features], configuration)
    old_orphan(path)
    return path


def operations(table: DeltaTable) -> dict[str, object]:
    return {
        Operation.COMMIT: lambda: table.write(pa.table({"id": [2]})),
        "transaction": lambda: _txn(table),
        "enable in-commit timestamps": table.enable_in_commit_timestamps,
        Operation.CHECKPOINT: table.checkpoint,
        Operation.COMPACT_LOG: lambda: table.compact_log(0, 1),
        Operation.CLEANUP: lambda: table.cleanup_metadata(now_ms=int(time.time() * 1000) + 400 * DAY_MS),
        Operation.VACUUM: lambda: table.vacuum(dry_run=False),
        Operation.BACKFILL: table.backfill,
        "enable managed commits": lambda: table.enable_managed_commits(InMemoryCommitOwner()),
    }


def _txn(table: DeltaTable) -> int:
    with table.transaction() as txn:
        txn.add_file(AddFile("x.parquet", 1, {}, 1, True))
    return txn.version


def test_an_unknown_writer_feature_blocks_everything_that_writes_or_deletes(tmp_path):
    path = make(tmp_path, ["futureFeatureX"])
    table = DeltaTable(str(path))
    before = tree(path)
    for name, op in operations(table).items():
        with pytest.raises(UnsupportedFeatureError, match="futureFeatureX") as e:
            op()
        assert e.value.feature == "futureFeatureX", name
        if isinstance(name, Operation) and name is not Operation.COMMIT:
            assert name.value in str(e.value)
        assert tree(path) == before, f"{name} changed the table"
    # reading is fine: the writer feature does not concern readers
    assert table.snapshot().version == 2 and table.snapshot().to_pyarrow().num_rows == 1
    assert [h["version"] for h in table.history()] == [2, 1, 0]


def test_an_unknown_reader_feature_blocks_everything_but_listing_versions(tmp_path):
    path = make(tmp_path, ["futureReaderY"], reader_features=["futureReaderY"])
    table = DeltaTable(str(path))
    before = tree(path)
    assert table.latest_version() == 2
    for op in [table.snapshot, table.history, lambda: table.snapshot().files(), *operations(table).values()]:
        with pytest.raises(UnsupportedFeatureError, match="futureReaderY"):
            op()
    assert tree(path) == before
    assert table.snapshot(version=1).version == 1      # older versions did not have the feature


def test_row_tracking_tables_are_maintained_but_not_written(tmp_path):
    path = make(tmp_path, ["rowTracking", "domainMetadata"])
    table = DeltaTable(str(path))
    before = tree(path)
    with pytest.raises(UnsupportedFeatureError, match="rowTracking"):
        table.write(pa.table({"id": [2]}))
    assert tree(path) == before
    assert table.checkpoint() == 2
    assert table.vacuum(dry_run=True)["files_deleted"] == ["orphan.parquet"]
    assert DeltaTable(str(path)).snapshot().to_pyarrow().num_rows == 1


def test_the_gate_names_the_operation():
    from airflow_provider_delta.log import Protocol
    proto = Protocol(1, 7, None, ("appendOnly", "futureFeatureX"))
    with pytest.raises(UnsupportedFeatureError, match="t at version 3: cannot vacuum: .*futureFeatureX"):
        require(proto, Operation.VACUUM, "t at version 3")
    require(proto, Operation.READ, "t")
    require(proto, Operation.LIST_VERSIONS, "t")
    with pytest.raises(UnsupportedFeatureError, match="writer version 8"):
        require(Protocol(1, 8), Operation.CHECKPOINT, "t")


@pytest.mark.parametrize("boundary,deletes", [(2, False), (1, True)])
def test_checkpoint_protection_keeps_history_before_the_boundary_until_it_can_go_at_once(
        tmp_path, boundary, deletes):
    path = tmp_path / "t"
    t = DeltaTable.create(str(path), SCHEMA)
    t.auto_checkpoint = False
    for i in range(3):
        t.write(pa.table({"id": [i]}))
    upgrade(path, 4, None, ["appendOnly", "invariants", "checkpointProtection"],
            {"delta.requireCheckpointProtectionBeforeVersion": str(boundary)})
    t.checkpoint(1)
    t.checkpoint(4)
    # versions 0-3 were written two months ago, version 4 now: with 30 days of retention the cutoff
    # commit is 3, and the newest checkpoint at or before it is 1
    for v in range(5):
        old = time.time() - (60 - v) * 24 * 3600 if v < 4 else time.time()
        os.utime(path / commit_path(v), (old, old))
    for f in os.listdir(path / "_delta_log"):
        if f.startswith("00000000000000000001.checkpoint"):
            os.utime(path / "_delta_log" / f, (time.time() - 57 * 24 * 3600,) * 2)
    before = tree(path)
    result = t.cleanup_metadata(now_ms=int(time.time() * 1000))
    if deletes:
        assert result["checkpoint_version"] == 1 and result["commits"] == [commit_path(0)]
        assert not (path / commit_path(0)).exists()
    else:
        assert result["checkpoint_version"] is None and result["deleted"] == []
        assert tree(path) == before


def test_catalog_managed_tables_refuse_cleanup_and_vacuum_unless_the_catalog_allows(corpus, tmp_path):
    src = corpus / "delta-kernel-rs" / "catalog_managed_0"
    path = tmp_path / "cm"
    shutil.copytree(src, path)
    for d, dirs, files in os.walk(path):
        for n in dirs + files:
            os.chmod(os.path.join(d, n), 0o755 if n in dirs else 0o644)
    names = sorted(os.listdir(path / "_delta_log" / "_staged_commits"))
    ratified = {int(n[:20]): n for n in names}
    table = DeltaTable(str(path), commit_owner=StagedCommitsCatalog(ratified, max_ratified_version=2))
    before = tree(path)
    for op in (lambda: table.cleanup_metadata(), lambda: table.vacuum(dry_run=False)):
        with pytest.raises(UnsupportedFeatureError, match="catalog-managed .*not allowed") as e:
            op()
        assert e.value.feature == "catalogManaged"
    with pytest.raises(UnsupportedFeatureError):
        table.write(pa.table({"part1": [1], "col1": [1]}))     # commits belong to the catalog
    assert tree(path) == before
    allowed = DeltaTable(str(path), commit_owner=StagedCommitsCatalog(ratified, 2, allows_maintenance=True))
    assert allowed.vacuum(dry_run=True)["dry_run"] is True
