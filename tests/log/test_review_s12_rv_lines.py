"""Review s12 (rv-lines), report-only: open findings as strict xfails (no Spark needed here; the Delta Spark
side is in tests/interop/test_review_s12_rv_lines_spark.py or cited from its source, delta-io/delta
spark/src/main/scala/org/apache/spark/sql/delta/ConflictChecker.scala and Snapshot.scala).

Conflict detection by path spelling. Delta Spark's ConflictChecker compares the winner's RemoveFile.path with
the current transaction's read files (checkForDeletedFilesAgainstCurrentTxnReadFiles) and removes
(checkForDeletedFilesAgainstCurrentTxnDeletedFiles) as strings, but its read files and removes come from the
snapshot's state reconstruction, whose paths are CANONICAL (Snapshot.stateReconstruction rewrites add.path
to DeltaLog.CanonicalPathFunction's ``new Path(new URI(path))``: ``./p=1/b.parquet`` -> ``p=1/b.parquet``,
``/t/x`` -> ``file:///t/x``), and Delta Spark's own DELETE/UPDATE/OPTIMIZE write their removes with those
canonical paths. Our ReadSet keeps the live file as the log spelled it (``files()``' decoded ``path``), and
conflicts._is_one_of compares that raw/decoded string with the winner's raw remove: a winner (Delta Spark)
that removes ``p=1/b.parquet`` while we read/removed the live ``./p=1/b.parquet`` is no conflict for us,
although our replay cancels the live file by that very remove (same canonical key). Delta Spark in our
place raises ConcurrentDeleteReadException / ConcurrentDeleteDeleteException.
"""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.errors import ConcurrentModificationError

NOW = int(time.time() * 1000)
SCHEMA = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}},
    {"name": "p", "type": "string", "nullable": True, "metadata": {}}]})


def _commit(root: str, version: int, actions: list) -> None:
    os.makedirs(os.path.join(root, "_delta_log"), exist_ok=True)
    with open(os.path.join(root, "_delta_log", f"{version:020d}.json"), "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": NOW, "operation": "WRITE"}}) + "\n")
        for a in actions:
            f.write(json.dumps(a) + "\n")


def _datafile(root: str, rel: str, ids: list[int]) -> int:
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    pq.write_table(pa.table({"id": pa.array(ids, pa.int64())}), path)
    return os.path.getsize(path)


def _table_with_live(root: str, live: str) -> int:
    """A table partitioned by p whose one live file (rows [1]) the log spells ``live``."""
    size = _datafile(root, "p=1/b.parquet", [1])
    _commit(root, 0, [
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
        {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": SCHEMA,
                      "partitionColumns": ["p"], "configuration": {}, "createdTime": NOW}},
        {"add": {"path": live, "partitionValues": {"p": "1"}, "size": size, "modificationTime": NOW,
                 "dataChange": True}}])
    return size


def _winner_removes(root: str, spelled: str) -> None:
    _commit(root, 1, [{"remove": {"path": spelled, "partitionValues": {"p": "1"}, "deletionTimestamp": NOW,
                                  "dataChange": True}}])


# (live spelling, the winner's remove as Delta Spark writes it: the canonical path of its snapshot)
SPELLINGS = [("./p=1/b.parquet", "p=1/b.parquet"), ("x/../p=1/b.parquet", "p=1/b.parquet"),
             ("p=1//b.parquet", "p=1/b.parquet"), ("{root}/p=1/b.parquet", "file://{root}/p=1/b.parquet")]


@pytest.mark.parametrize("live,winner", SPELLINGS)
def test_a_winner_removing_a_read_file_by_its_canonical_spelling_conflicts(tmp_path, live, winner):
    root = str(tmp_path / "t")
    live, winner = live.format(root=root), winner.format(root=root)
    _table_with_live(root, live)
    table = DeltaTable(root)
    with pytest.raises(ConcurrentModificationError):
        with table.transaction(operation="WRITE") as txn:
            assert txn.read_files({"p": "1"}).num_rows == 1
            _winner_removes(root, winner)                       # the concurrent winner lands first
            assert DeltaTable(root).snapshot().files().num_rows == 0   # it did remove our read file
            size = _datafile(root, "p=1/n.parquet", [2])
            txn.add_file(AddFile("p=1/n.parquet", size, {"p": "1"}, NOW, True, None))


def test_a_winner_removing_our_removed_file_by_its_canonical_spelling_conflicts(tmp_path):
    root = str(tmp_path / "t")
    _table_with_live(root, "./p=1/b.parquet")
    table = DeltaTable(root)
    with pytest.raises(ConcurrentModificationError):
        with table.transaction(operation="DELETE") as txn:
            path = txn.snapshot.files().column("path").to_pylist()[0]
            txn.remove_file(path)
            _winner_removes(root, "p=1/b.parquet")


def test_control_a_winner_removing_a_read_file_in_the_same_spelling_conflicts(tmp_path):
    """What holds: the same scenario with one spelling on both sides is a ConcurrentDeleteRead."""
    root = str(tmp_path / "t")
    _table_with_live(root, "p=1/b.parquet")
    with pytest.raises(ConcurrentModificationError):
        with DeltaTable(root).transaction(operation="WRITE") as txn:
            txn.read_files({"p": "1"})
            _winner_removes(root, "p=1/b.parquet")
            size = _datafile(root, "p=1/n.parquet", [2])
            txn.add_file(AddFile("p=1/n.parquet", size, {"p": "1"}, NOW, True, None))


# ---------------------------------------------------------------------------------------------------------------
# Odd lines Delta Spark reads differently (Delta Spark 4.4 on the jars, checked by hand at 22:10 UTC with the
# spark fixture's settings; the Spark-side tests are in tests/interop/test_review_s12_rv_lines_spark.py).

ID_SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def _two_file_table(root: str) -> dict[str, int]:
    """Version 0: a.parquet (rows 1, 2) live; b.parquet (row 3) on disk, not in the log."""
    sizes = {"a": _datafile(root, "a.parquet", [1, 2]), "b": _datafile(root, "b.parquet", [3])}
    _commit(root, 0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                      {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                                    "schemaString": ID_SCHEMA, "partitionColumns": [], "configuration": {},
                                    "createdTime": NOW}},
                      {"add": {"path": "a.parquet", "partitionValues": {}, "size": sizes["a"],
                               "modificationTime": NOW, "dataChange": True}}])
    return sizes


@pytest.mark.parametrize("add", [{}, {"path": None, "size": 1}, {"size": 1, "partitionValues": {}}],
                         ids=["empty", "path-null", "path-missing"])
def test_a_pathless_add_next_to_a_remove_reads_as_the_remove(tmp_path, add):
    root = str(tmp_path / "t")
    _two_file_table(root)
    _commit(root, 1, [{"add": add, "remove": {"path": "a.parquet", "deletionTimestamp": NOW, "dataChange": True}}])
    assert DeltaTable(root).snapshot().to_pyarrow().num_rows == 0      # Delta Spark: [] (no rows)


def _idless_metadata(without: str) -> dict:
    """A metaData with the new column 'extra' and property user.k, its id ``absent`` or ``null``."""
    schema = json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "extra", "type": "string", "nullable": True, "metadata": {}}]})
    m = {"id": None, "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
         "partitionColumns": [], "configuration": {"user.k": "v"}, "createdTime": NOW}
    if without == "absent":
        del m["id"]
    return m


@pytest.mark.parametrize("without", ["absent", "null"])
def test_a_metadata_without_an_id_is_not_the_tables_metadata(tmp_path, without):
    root = str(tmp_path / "t")
    sizes = _two_file_table(root)
    _commit(root, 1, [{"metaData": _idless_metadata(without)}, {"add": {"path": "b.parquet", "partitionValues": {}, "size": sizes["b"],
                                                 "modificationTime": NOW, "dataChange": True}}])
    from airflow_provider_delta.log.base.errors import DeltaError
    try:
        snap = DeltaTable(root).snapshot()
    except DeltaError:
        return                                   # refusing the log, as Delta Spark's full state does, is fine too
    assert snap.schema.names == ["id"] and "user.k" not in snap.metadata.configuration


@pytest.mark.parametrize("other", ["txn", "metaData", "protocol"])
def test_a_cdc_sharing_its_line_with_an_earlier_action_is_not_the_commits_change_data(tmp_path, other):
    root = str(tmp_path / "t")
    sizes = {"a": _datafile(root, "a.parquet", [1, 2]), "b": _datafile(root, "b.parquet", [3])}
    cdc_path = os.path.join(root, "_change_data", "c.parquet")
    os.makedirs(os.path.dirname(cdc_path))
    pq.write_table(pa.table({"id": pa.array([99], pa.int64()), "_change_type": ["insert"]}), cdc_path)
    metadata = {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": ID_SCHEMA,
                "partitionColumns": [], "configuration": {"delta.enableChangeDataFeed": "true"}, "createdTime": NOW}
    protocol = {"minReaderVersion": 1, "minWriterVersion": 4}
    _commit(root, 0, [{"protocol": protocol}, {"metaData": metadata},
                      {"add": {"path": "a.parquet", "partitionValues": {}, "size": sizes["a"],
                               "modificationTime": NOW, "dataChange": True}}])
    value = {"txn": {"appId": "x", "version": 1, "lastUpdated": NOW}, "metaData": metadata, "protocol": protocol}[other]
    _commit(root, 1, [{other: value, "cdc": {"path": "_change_data/c.parquet", "partitionValues": {},
                                             "size": os.path.getsize(cdc_path), "dataChange": False}},
                      {"add": {"path": "b.parquet", "partitionValues": {}, "size": sizes["b"],
                               "modificationTime": NOW, "dataChange": True}}])
    changes = DeltaTable(root).changes(1, 1)
    assert sorted(zip(changes.column("id").to_pylist(), changes.column("_change_type").to_pylist())) == \
        [(3, "insert")]                                          # Delta Spark's change feed of version 1


@pytest.mark.parametrize("other", ["commitInfo", "domainMetadata"])
def test_control_a_cdc_before_the_other_action_in_unwraps_order_is_the_change_data(tmp_path, other):
    """What holds: cdc comes before commitInfo and domainMetadata in unwrap's order, so such a line is the cdc
    for both readers (the change file's row 99 is version 1's change)."""
    root = str(tmp_path / "t")
    size_a = _datafile(root, "a.parquet", [1, 2])
    cdc_path = os.path.join(root, "_change_data", "c.parquet")
    os.makedirs(os.path.dirname(cdc_path))
    pq.write_table(pa.table({"id": pa.array([99], pa.int64()), "_change_type": ["insert"]}), cdc_path)
    metadata = {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": ID_SCHEMA,
                "partitionColumns": [], "configuration": {"delta.enableChangeDataFeed": "true"}, "createdTime": NOW}
    _commit(root, 0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 4}}, {"metaData": metadata},
                      {"add": {"path": "a.parquet", "partitionValues": {}, "size": size_a,
                               "modificationTime": NOW, "dataChange": True}}])
    value = {"commitInfo": {"timestamp": NOW}, "domainMetadata": {"domain": "d", "configuration": "{}",
                                                                 "removed": False}}[other]
    _commit(root, 1, [{other: value, "cdc": {"path": "_change_data/c.parquet", "partitionValues": {},
                                             "size": os.path.getsize(cdc_path), "dataChange": False}}])
    changes = DeltaTable(root).changes(1, 1)
    assert changes.column("id").to_pylist() == [99]


def test_a_commit_info_sharing_its_line_with_an_add_is_not_the_commits_info(tmp_path):
    root = str(tmp_path / "t")
    sizes = _two_file_table(root)
    path = os.path.join(root, "_delta_log", f"{1:020d}.json")
    with open(path, "w") as f:
        f.write(json.dumps({"add": {"path": "b.parquet", "partitionValues": {}, "size": sizes["b"],
                                    "modificationTime": NOW, "dataChange": True},
                            "commitInfo": {"timestamp": NOW, "operation": "MERGE"}}) + "\n")
    table = DeltaTable(root)
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]     # holds: the add counts
    v1 = next(h for h in table.history() if h["version"] == 1)
    assert v1.get("operation") in (None, "")                     # Delta Spark: no commitInfo for version 1
