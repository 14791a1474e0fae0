"""DeltaTable.clone: Delta Spark's SHALLOW CLONE on our log (interop with Delta Spark in tests/interop)."""
from __future__ import annotations

import os
import shutil

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.log import (DeltaTable, InMemoryCommitOwner, InvalidArgumentError, StagedCommitsCatalog,
                                        TableAlreadyExistsError, VersionNotFoundError)

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def ids(table: DeltaTable, version: int | None = None) -> list[int]:
    return sorted(table.snapshot(version=version).to_pyarrow().column("id").to_pylist())


def deltalake_rows(uri: str) -> list[dict]:
    """The rows as deltalake reads them, through its DataFusion reader (its pyarrow dataset reader
    takes absolute add paths for relative ones and reads no deletion vectors)."""
    return pa.table(deltalake.QueryBuilder().register("t", deltalake.DeltaTable(uri)).execute(
        "select * from t").read_all()).to_pylist()


@pytest.fixture
def source(tmp_path):
    t = DeltaTable.create(str(tmp_path / "src"), SCHEMA, partition_by=["p"], properties={"delta.appendOnly": "false"})
    t.write(pa.table({"id": [1, 2], "p": ["a", "b"]}))          # v1
    t.write(pa.table({"id": [3], "p": ["a"]}))                  # v2
    return t


def test_clone_lists_the_source_files_by_absolute_uri(source, tmp_path, file_tree):
    clone = source.clone(str(tmp_path / "clone"))
    assert clone.latest_version() == 0 and ids(clone) == [1, 2, 3]
    src_snap, snap = source.snapshot(), clone.snapshot()
    root = source.storage.root
    assert sorted(snap.files().column("path").to_pylist()) == sorted(
        "file:" + os.path.join(root, p) for p in src_snap.files().column("path").to_pylist())
    assert snap.metadata.id != src_snap.metadata.id
    assert snap.metadata.schema_string == src_snap.metadata.schema_string
    assert snap.metadata.configuration == src_snap.metadata.configuration
    assert snap.protocol == src_snap.protocol
    (entry,) = clone.history()
    assert entry["operation"] == "CLONE" and entry["isBlindAppend"] is False
    assert entry["readVersion"] == -1 and entry["isolationLevel"] == "Serializable"   # Delta Spark's commitLarge
    assert entry["operationParameters"] == {"source": f"delta.`file:{root}`", "sourceVersion": 2}
    size = sum(src_snap.files().column("size").to_pylist())
    assert entry["operationMetrics"] == {"sourceTableSize": str(size), "sourceNumOfFiles": "3",
                                         "numRemovedFiles": "0", "numCopiedFiles": "0",
                                         "removedFilesSize": "0", "copiedFilesSize": "0"}
    assert file_tree(str(tmp_path / "clone")).keys() == {os.path.join("_delta_log", "00000000000000000000.json")}
    assert sorted(r["id"] for r in deltalake_rows(clone.uri)) == [1, 2, 3]


def test_clone_at_a_version_or_timestamp(source, tmp_path):
    assert ids(source.clone(str(tmp_path / "c1"), version=1)) == [1, 2]
    assert ids(source.clone(str(tmp_path / "c2"), timestamp=source.snapshot(version=1).timestamp)) == [1, 2]
    with pytest.raises(VersionNotFoundError):
        source.clone(str(tmp_path / "c3"), version=9)
    assert not os.path.exists(tmp_path / "c3")


def test_clone_needs_an_empty_target_and_writes_nothing_otherwise(source, tmp_path, file_tree):
    existing = DeltaTable.create(str(tmp_path / "existing"), SCHEMA)
    with pytest.raises(TableAlreadyExistsError):
        source.clone(existing.uri)
    assert existing.latest_version() == 0
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "notes.txt").write_text("keep me")
    with pytest.raises(InvalidArgumentError, match="not empty"):
        source.clone(str(busy))
    assert file_tree(str(busy)) == {"notes.txt": 7}
    with pytest.raises(InvalidArgumentError, match="inside"):
        source.clone(os.path.join(source.storage.root, "sub"))
    assert not os.path.exists(os.path.join(source.storage.root, "sub"))
    empty = tmp_path / "empty"
    empty.mkdir()
    assert ids(source.clone(str(empty))) == [1, 2, 3]              # an empty directory is fine


def test_writes_and_vacuum_of_the_clone_never_touch_the_source(source, tmp_path, file_tree):
    clone = source.clone(str(tmp_path / "clone"))
    source.write(pa.table({"id": [10], "p": ["c"]}), mode="overwrite")       # the source changes
    src_files = file_tree(source.storage.root)
    src_log = sorted(os.listdir(os.path.join(source.storage.root, "_delta_log")))
    clone.write(pa.table({"id": [4], "p": ["a"]}))                        # v1: own file
    clone.write(pa.table({"id": [5], "p": ["z"]}), mode="overwrite")     # v2: removes source files and its own
    clone.cleanup_metadata(retention_ms=0)
    report = clone.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    # vacuum deleted the clone's own removed file, nothing of the source
    assert report["num_files_deleted"] == 1 and report["files_deleted"][0].startswith("p=a/")
    assert file_tree(source.storage.root) == src_files
    assert sorted(os.listdir(os.path.join(source.storage.root, "_delta_log"))) == src_log
    assert ids(source) == [10] and ids(source, 2) == [1, 2, 3] and ids(clone) == [5]
    assert ids(clone, 0) == [1, 2, 3]                               # still readable: the source kept its files
    assert all(p.startswith("p=") for p in clone.snapshot().files().column("path").to_pylist())


def test_clone_of_a_table_with_deletion_vectors(copy_table, tmp_path):
    src = DeltaTable(str(copy_table("dat/deletion_vectors/delta")))
    clone = src.clone(str(tmp_path / "dv-clone"))
    assert clone.snapshot().to_pyarrow().sort_by("letter").to_pylist() == \
        src.snapshot().to_pyarrow().sort_by("letter").to_pylist()
    dvs = [d for d in clone.snapshot().files().column("deletion_vector").to_pylist() if d]
    assert dvs and all(d["storageType"] == "p" and d["pathOrInlineDv"].startswith("file:" + src.storage.root)
                       for d in dvs)
    ours = clone.snapshot().to_pyarrow().to_pylist()
    assert sorted(deltalake_rows(clone.uri), key=repr) == sorted(ours, key=repr)


def test_clone_of_a_managed_commit_table_is_a_filesystem_table_unless_given_an_owner(tmp_path):
    owner = InMemoryCommitOwner()
    src = DeltaTable.create(str(tmp_path / "managed"), SCHEMA, commit_owner=owner)
    src.write(pa.table({"id": [1], "p": ["a"]}))
    plain = src.clone(str(tmp_path / "plain"))
    snap = plain.snapshot()
    assert not snap.commits_are_coordinated and ids(plain) == [1]
    assert not any(k.startswith("delta.managedCommit") for k in snap.configuration)
    plain.write(pa.table({"id": [2], "p": ["a"]}))                       # a plain put-if-absent commit
    assert os.path.exists(os.path.join(plain.storage.root, "_delta_log", "00000000000000000001.json"))
    other = InMemoryCommitOwner()
    managed = src.clone(str(tmp_path / "managed-clone"), commit_owner=other)
    assert managed.snapshot().commits_are_coordinated and ids(managed) == [1]
    managed.write(pa.table({"id": [3], "p": ["a"]}))
    assert ids(DeltaTable(managed.uri, commit_owner=other)) == [1, 3]


def test_clone_of_a_clone_keeps_the_original_absolute_paths(source, tmp_path):
    first = source.clone(str(tmp_path / "first"))
    second = first.clone(str(tmp_path / "second"))
    assert sorted(second.snapshot().files().column("path").to_pylist()) == \
        sorted(first.snapshot().files().column("path").to_pylist())
    shutil.rmtree(first.storage.root)                               # the first clone holds no data
    assert ids(second) == [1, 2, 3]


def test_clone_of_a_catalog_managed_table_is_a_filesystem_table(corpus, tmp_path):
    """The corpus' catalog-managed table, read through its catalog (staged commits): the clone drops
    the catalogManaged feature and reads the same rows without any catalog."""
    path = corpus / "delta-kernel-rs" / "catalog_managed_0"
    names = sorted(os.listdir(path / "_delta_log" / "_staged_commits"))
    source = DeltaTable(str(path), commit_owner=StagedCommitsCatalog({int(n[:20]): n for n in names},
                                                                     max_ratified_version=2))
    clone = source.clone(str(tmp_path / "plain"))
    snap = DeltaTable(clone.uri).snapshot()
    assert "catalogManaged" not in (snap.protocol.reader_features or ()) + (snap.protocol.writer_features or ())
    assert not snap.commits_are_coordinated
    rows = sorted((r["part1"], r["col1"]) for r in snap.to_pyarrow().to_pylist())
    assert rows == [(x // 100, x) for x in range(200)]
    assert clone.history()[0]["operationParameters"]["sourceVersion"] == 2


def test_clone_of_a_table_whose_path_needs_url_encoding(corpus, tmp_path):
    """Absolute file and DV paths are URIs, URL-encoded in the log as Delta Spark writes them
    (``file:/.../my%20tables/...``); we, and deltalake, decode them when reading."""
    src_dir = tmp_path / "my tables" / "src"
    shutil.copytree(corpus / "dat" / "deletion_vectors" / "delta", src_dir)
    src = DeltaTable(str(src_dir))
    clone = src.clone(str(tmp_path / "my tables" / "clone"))
    (line,) = [a for a in clone.read_commit(0) if "add" in a]
    assert "my%20tables" in line["add"]["path"] and "my%20tables" in line["add"]["deletionVector"]["pathOrInlineDv"]
    ours = clone.snapshot().to_pyarrow().to_pylist()
    assert sorted(ours, key=repr) == sorted(src.snapshot().to_pyarrow().to_pylist(), key=repr)
    assert sorted(deltalake_rows(clone.uri), key=repr) == sorted(ours, key=repr)
