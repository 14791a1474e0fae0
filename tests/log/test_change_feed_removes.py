"""Change data feed of commits whose removes lack the optional ``partitionValues``.

PROTOCOL.md lets a ``remove`` leave out ``partitionValues`` and ``size`` (they are
promised only with ``extendedFileMetadata=true``). The feed reads a removed file's rows
as deletes; their partition columns come from the file's add in the version before.
The commits here are made with our transaction and ``RemoveFile`` actions written
without those fields, so the log holds exactly what such a writer leaves.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CorruptLogError, DeltaTable, RemoveFile
from airflow_provider_delta.log.read.remove_details import complete_removes
from airflow_provider_delta.log.read.replay import actions_from_dicts

CDF = {"delta.enableChangeDataFeed": "true"}
SCHEMA = pa.schema([("id", pa.int64()), ("part", pa.string()), ("day", pa.int32())])


def _rows(table: pa.Table, columns=("id", "part", "day", "_change_type", "_commit_version")) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in table.to_pylist())


def _table(root: Path) -> DeltaTable:
    """v0 create, v1 rows in partitions (a, 1), (b, 1), (b, 2), v2 one more file in (a, 1)."""
    table = DeltaTable.create(str(root), SCHEMA, partition_by=["part", "day"], properties=CDF)
    table.write(pa.table({"id": [1, 2, 3, 4], "part": ["a", "b", "b", "b"],
                          "day": pa.array([1, 1, 1, 2], pa.int32())}, schema=SCHEMA))
    table.write(pa.table({"id": [5], "part": ["a"], "day": pa.array([1], pa.int32())}, schema=SCHEMA))
    return table


def _remove_bare(table: DeltaTable, where: list[tuple]) -> int:
    """Remove the live files matching ``where`` with remove actions that carry no partitionValues or size."""
    live = table.snapshot().files()
    pv = live.column("partition_values").to_pylist()
    paths = [p for p, values in zip(live.column("path").to_pylist(), pv)
             if any(dict(values).items() >= dict(w).items() for w in where)]
    with table.transaction("DELETE") as txn:
        for p in paths:
            txn.remove_file(RemoveFile(p, extended_file_metadata=False, partition_values=None, size=None))
    return txn.version


def _commit_removes(root: Path, version: int) -> list[dict]:
    lines = (root / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return [a["remove"] for a in map(json.loads, lines) if "remove" in a]


def test_deleted_rows_keep_their_partition_values(tmp_path):
    table = _table(tmp_path / "t")
    v = _remove_bare(table, [{"part": "b"}])
    removes = _commit_removes(tmp_path / "t", v)
    assert len(removes) == 2 and all("partitionValues" not in r and "size" not in r for r in removes)
    changes = table.changes(v)
    assert _rows(changes) == [(2, "b", 1, "delete", v), (3, "b", 1, "delete", v), (4, "b", 2, "delete", v)]
    # a range over inserts and the bare removes
    assert _rows(table.changes(1)) == sorted(
        [(i, p, d, "insert", 1) for i, p, d in [(1, "a", 1), (2, "b", 1), (3, "b", 1), (4, "b", 2)]]
        + [(5, "a", 1, "insert", 2)] + [(i, p, d, "delete", v) for i, p, d in [(2, "b", 1), (3, "b", 1), (4, "b", 2)]])
    assert _rows(table.snapshot().to_pyarrow(), ("id", "part", "day")) == [(1, "a", 1), (5, "a", 1)]


def test_only_removes_lacking_values_are_filled(tmp_path):
    """One commit: a remove with its values (kept as written) and one without (recovered)."""
    table = _table(tmp_path / "t")
    live = table.snapshot().files()
    by_part = {tuple(sorted(dict(pv).items())): p for p, pv in
               zip(live.column("path").to_pylist(), live.column("partition_values").to_pylist())}
    with_values = by_part[(("day", "2"), ("part", "b"))]
    bare = by_part[(("day", "1"), ("part", "b"))]
    with table.transaction("DELETE") as txn:
        txn.remove_file(with_values)                      # details looked up by our writer
        txn.remove_file(RemoveFile(bare, extended_file_metadata=False, partition_values=None, size=None))
    removes = {r["path"]: r for r in _commit_removes(tmp_path / "t", txn.version)}
    assert "partitionValues" in removes[with_values] and "partitionValues" not in removes[bare]
    assert _rows(table.changes(txn.version)) == [(2, "b", 1, "delete", 3), (3, "b", 1, "delete", 3),
                                                 (4, "b", 2, "delete", 3)]


def test_equal_to_deltalake_load_cdf_of_the_same_commits_with_full_removes(tmp_path):
    """deltalake refuses a remove without partitionValues ("missing required field"); on the
    same commits with complete removes its load_cdf gives the rows we give for the bare ones."""
    deltalake = pytest.importorskip("deltalake")
    where = [{"part": "b", "day": "1"}, {"part": "a"}]
    bare = _table(tmp_path / "bare")
    v = _remove_bare(bare, where)
    full = _table(tmp_path / "full")
    live = full.snapshot().files()
    with full.transaction("DELETE") as txn:
        for p, values in zip(live.column("path").to_pylist(), live.column("partition_values").to_pylist()):
            if any(dict(values).items() >= w.items() for w in where):
                txn.remove_file(p)
    assert txn.version == v and all("partitionValues" in r for r in _commit_removes(tmp_path / "full", v))
    with pytest.raises(Exception, match="partition_values"):
        deltalake.DeltaTable(str(tmp_path / "bare")).load_cdf(starting_version=0).read_all()
    theirs = pa.table(deltalake.DeltaTable(str(tmp_path / "full")).load_cdf(starting_version=0).read_all())
    ours = bare.changes(0)
    assert [r for r in _rows(theirs) if r[3] == "delete"] == \
        [(1, "a", 1, "delete", v), (2, "b", 1, "delete", v), (3, "b", 1, "delete", v), (5, "a", 1, "delete", v)]
    assert ours.num_rows == 9 and _rows(ours) == _rows(theirs)


def test_remove_of_a_file_not_in_the_previous_version_is_a_typed_error(tmp_path):
    """A bare remove whose file was never live: its partition cannot be known."""
    table = _table(tmp_path / "t")
    log = tmp_path / "t" / "_delta_log"
    before = sorted(p.name for p in log.iterdir())
    action = RemoveFile("part=z/day=9/ghost.parquet", 1, True, False, None, None).to_json()
    (log / f"{3:020d}.json").write_text(json.dumps({"commitInfo": {"timestamp": 1, "operation": "DELETE"}})
                                        + "\n" + json.dumps(action) + "\n")
    with pytest.raises(CorruptLogError, match="ghost.parquet") as ei:
        table.changes(3)
    assert ei.value.path == "part=z/day=9/ghost.parquet"
    assert sorted(p.name for p in log.iterdir()) == before + [f"{3:020d}.json"]
    # an unpartitioned table never looks: nothing to recover
    plain = DeltaTable.create(str(tmp_path / "plain"), pa.schema([("id", pa.int64())]), properties=CDF)
    plain.write(pa.table({"id": [1, 2]}))
    (path,) = plain.snapshot().files().column("path").to_pylist()
    with plain.transaction("DELETE") as txn:
        txn.remove_file(RemoveFile(path, extended_file_metadata=False, partition_values=None, size=None))
    assert _rows(plain.changes(2), ("id", "_change_type")) == [(1, "delete"), (2, "delete")]


def test_a_remove_is_matched_to_its_add_by_path_and_deletion_vector():
    """The file key is path + DV id: a bare remove carrying the live file's DV is completed from it;
    one without that DV names another logical file, so nothing is taken from the add."""
    dv = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36,
          "cardinality": 2}
    live = actions_from_dicts([{"path": "p=x/f.parquet", "partitionValues": {"p": "x"}, "size": 10,
                                "deletionVector": dv}], True, [1], [0])
    same = actions_from_dicts([{"path": "p=x/f.parquet", "dataChange": True, "deletionVector": dv}], False, [2], [1])
    done = complete_removes(same, lambda: live, "t version 2")
    assert done.column("partition_values").to_pylist() == [[("p", "x")]] and done.column("size").to_pylist() == [10]
    assert done.column("deletion_vector").to_pylist() == same.column("deletion_vector").to_pylist()
    without_dv = actions_from_dicts([{"path": "p=x/f.parquet", "dataChange": True}], False, [2], [1])
    with pytest.raises(CorruptLogError, match="t version 2: remove of 'p=x/f.parquet'"):
        complete_removes(without_dv, lambda: live, "t version 2")
    # nothing lacking: the previous version is not even asked for
    full = actions_from_dicts([{"path": "p=x/f.parquet", "partitionValues": {"p": "x"}, "deletionVector": dv}],
                              False, [2], [1])
    assert complete_removes(full, lambda: pytest.fail("looked up the previous version"), "t") is full
