"""Path spelling (issues #22/#24): an action naming an existing file spells its path as the log does.

The corpus table dat/multi_partitioned was written by Delta Spark: its paths spell the partition
value ``😈`` raw and ``/%20%f`` percent-encoded twice. We used to percent-encode every path we
wrote, so our removes of its files did not match their adds for Delta Spark and delta-rs (which
match by the string) and the replaced files stayed live for them. Each test reads the table back
with deltalake (delta-rs) as the second reader; tests/interop/test_path_spelling_spark.py does
the same against Delta Spark.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import deltalake
from deltalake import DeltaTable as RsTable

from airflow_provider_delta.log import AddFile, DeltaTable
from airflow_provider_delta.log.maintenance.compaction import compacted_actions
from dv_encoding import bitmap_array, z85_encode

TABLE = "dat/multi_partitioned/delta"
DEVIL = "letter=b/date=1970-01-01/data=😈/part-00000-b300ccc0-7096-4f4f-acf9-3811211dca3e.c000.snappy.parquet"
DEVIL_ENCODED = DEVIL.replace("😈", "%F0%9F%98%88")      # the same file as our writer used to spell it


def _log(path, version: int) -> list[dict]:
    with open(os.path.join(str(path), "_delta_log", f"{version:020d}.json"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _write_log(path, version: int, actions: list[dict]) -> None:
    with open(os.path.join(str(path), "_delta_log", f"{version:020d}.json"), "w", encoding="utf-8") as f:
        f.write("\n".join(json.dumps(a, ensure_ascii=False) for a in actions) + "\n")


def _paths(path, version: int, kind: str) -> set[str]:
    return {a[kind]["path"] for a in _log(path, version) if kind in a}


def _every_add_path(path, upto: int) -> set[str]:
    return set().union(*(_paths(path, v, "add") for v in range(upto + 1)))


def _one_row() -> pa.Table:
    return pa.table({"letter": ["z"], "date": pa.array([None], pa.date32()), "data": pa.array([b"q"], pa.binary()),
                     "number": pa.array([7], pa.int64())})


def _rows(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def _ours(path) -> list[str]:
    return _rows(DeltaTable(str(path)).snapshot().to_pyarrow().to_pylist())


def _theirs(path) -> list[str]:
    return _rows(RsTable(str(path)).to_pyarrow_table().to_pylist())


def _theirs_by_datafusion(path) -> list[str]:
    """deltalake's rows through its DataFusion reader (its pyarrow dataset reader cannot open the
    absolute ``file:`` paths of a clone)."""
    reader = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(str(path)))
    return _rows(pa.table(reader.execute("select * from t").read_all()).to_pylist())


def test_replay_keeps_the_log_spelling_beside_the_decoded_path(copy_table):
    path = copy_table(TABLE)
    files = DeltaTable(str(path)).snapshot().files()
    spelled = dict(zip(files.column("path").to_pylist(), files.column("log_path").to_pylist()))
    assert spelled[DEVIL] == DEVIL
    [(decoded, raw)] = [(p, s) for p, s in spelled.items() if p.startswith("letter=%2F")]
    assert decoded.startswith("letter=%2F%2520%25f/") and raw.startswith("letter=%252F%252520%2525f/")


def test_overwrite_removes_each_file_under_its_own_spelling(copy_table):
    path = copy_table(TABLE)
    table = DeltaTable(str(path))
    before = table.latest_version()
    table.write(_one_row(), mode="overwrite")
    removed = _paths(path, before + 1, "remove")
    assert DEVIL in removed and removed <= _every_add_path(path, before)
    assert _theirs(path) == _ours(path) and len(_ours(path)) == 1


def test_a_delete_of_partition_files_by_decoded_path_keeps_their_spelling(copy_table):
    path = copy_table(TABLE)
    table = DeltaTable(str(path))
    before = table.latest_version()
    files = table.snapshot().files().column("path").to_pylist()
    doomed = [p for p in files if "/data=😈/" in p or p.startswith("letter=%2F")]
    assert len(doomed) == 2
    txn = table.transaction(operation="DELETE")
    txn.remove_files(doomed)
    txn.commit()
    assert _paths(path, before + 1, "remove") <= _every_add_path(path, before)
    assert len(_ours(path)) == len(files) - 2
    assert _theirs(path) == _ours(path)


def test_restore_re_adds_files_under_their_old_spelling(copy_table):
    path = copy_table(TABLE)
    table = DeltaTable(str(path))
    latest = table.latest_version()
    expected = _ours(path)
    table.restore(0)
    table.restore(latest)
    readded = _paths(path, latest + 2, "add")
    assert DEVIL in readded and readded <= _every_add_path(path, latest)
    assert _ours(path) == expected and _theirs(path) == expected


def test_optimize_then_checkpoint_keeps_the_spelling_in_the_checkpoint(copy_table):
    path = copy_table(TABLE)
    table = DeltaTable(str(path))
    expected = _ours(path)
    table.checkpoint()
    cp = [f for f in os.listdir(path / "_delta_log") if f.endswith(".checkpoint.parquet")]
    adds = pq.read_table(path / "_delta_log" / cp[0], columns=["add"]).column("add").to_pylist()
    assert DEVIL in {a["path"] for a in adds if a}
    m = table.optimize(z_order_by=["number"])      # rewrites every file, one per partition
    assert DEVIL in _paths(path, m["version"], "remove")
    assert _ours(path) == expected and _theirs(path) == expected


def test_a_change_feed_over_an_overwrite_of_spark_files(copy_table):
    path = copy_table(TABLE)
    table = DeltaTable(str(path))
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.enableChangeDataFeed": "true"})
    before = table.latest_version()
    live = table.snapshot().to_pyarrow().num_rows
    table.write(_one_row(), mode="overwrite")
    changes = table.changes(before + 1, before + 1)
    kinds = changes.column("_change_type").to_pylist()
    assert kinds.count("delete") == live and kinds.count("insert") == 1
    deleted = [r["data"] for r in changes.to_pylist() if r["_change_type"] == "delete"]
    assert "😈".encode() in deleted


# ------------------------------------------------------------ mixed spellings
def _table_whose_devil_remove_is_encoded(copy_table):
    """The corpus table plus a DELETE of the 😈 file whose remove is spelled as our writer
    spelled it before the fix (percent-encoded, unlike Delta Spark's add)."""
    path = copy_table(TABLE)
    table = DeltaTable(str(path))
    version = table.latest_version() + 1
    txn = table.transaction(operation="DELETE")
    txn.remove_files([DEVIL])
    txn.commit()
    out = []
    for a in _log(path, version):
        if "remove" in a and a["remove"]["path"] == DEVIL:
            a["remove"]["path"] = DEVIL_ENCODED
        out.append(a)
    _write_log(path, version, out)
    return path


def test_a_remove_spelled_unlike_its_add_leaves_it_live_as_for_delta_rs(copy_table):
    """A log holding the old bug's output: the remove does not cancel the add for delta-rs or
    Delta Spark, and our replay agrees (the table has those rows twice for every reader)."""
    path = _table_whose_devil_remove_is_encoded(copy_table)
    assert _ours(path) == _theirs(path)
    assert DEVIL in DeltaTable(str(path)).snapshot().files().column("path").to_pylist()


def test_the_compacted_log_keeps_an_add_whose_remove_is_spelled_otherwise():
    add = {"add": {"path": "p=ü/f.parquet", "size": 1, "partitionValues": {}, "modificationTime": 0,
                   "dataChange": True}}
    remove = {"remove": {"path": "p=%C3%BC/f.parquet", "dataChange": True}}
    assert compacted_actions([[add], [remove]]) == [add, remove]


def _table_with_devil_live_twice(copy_table):
    """The corpus table plus an add of the 😈 file spelled percent-encoded: two logical files
    (for every reader) of one physical file."""
    path = copy_table(TABLE)
    version = DeltaTable(str(path)).latest_version()
    [devil] = [a for a in _log(path, version) if "add" in a and a["add"]["path"] == DEVIL]
    _write_log(path, version + 1, [{"add": {**devil["add"], "path": DEVIL_ENCODED}}])
    assert len(_ours(path)) == len(_theirs(path)) == 3
    return path, version


def test_removing_a_file_live_under_two_spellings_removes_both(copy_table):
    path, before = _table_with_devil_live_twice(copy_table)
    txn = DeltaTable(str(path)).transaction(operation="DELETE")
    txn.remove_files([DEVIL])
    txn.commit()
    assert _paths(path, before + 2, "remove") == {DEVIL, DEVIL_ENCODED}
    assert _ours(path) == _theirs(path) and len(_ours(path)) == 1


def test_vacuum_keeps_a_file_live_under_one_spelling_and_removed_under_another(copy_table):
    path = _table_whose_devil_remove_is_encoded(copy_table)   # the tombstone names the file otherwise
    result = DeltaTable(str(path)).vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert DEVIL not in result["files_deleted"]
    assert os.path.exists(path / DEVIL)
    assert _ours(path) == _theirs(path)


def test_a_clone_of_spark_files_is_overwritten_under_its_own_absolute_spelling(copy_table, tmp_path):
    source = copy_table(TABLE)
    clone = DeltaTable(str(source)).clone(str(tmp_path / "clone"))
    path = tmp_path / "clone"
    expected = _ours(source)
    assert _ours(path) == expected and _theirs_by_datafusion(path) == expected
    cloned = _paths(path, 0, "add")
    assert any("😈" in p or "%F0%9F%98%88" in p for p in cloned)
    clone.write(_one_row(), mode="overwrite")
    assert _paths(path, 1, "remove") == cloned
    assert _ours(path) == _theirs_by_datafusion(path) and len(_ours(path)) == 1
    assert _ours(source) == expected                # the source is untouched


def test_a_deletion_vector_for_a_spark_file_is_added_under_the_files_spelling(copy_table):
    """A DELETE by deletion vector: the remove of the old logical file and the add of the file
    with its new DV both spell the path as Delta Spark's add did."""
    path = copy_table(TABLE)
    table = DeltaTable(str(path))
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.enableDeletionVectors": "true"})
    before = table.latest_version()
    [row] = [r for r in table.snapshot().files().to_pylist() if r["path"] == DEVIL]
    bitmap = bitmap_array([0])
    dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap), "cardinality": 1}
    stats = {**json.loads(row["stats"]), "tightBounds": False}
    with table.transaction(operation="DELETE") as txn:
        txn.remove_file(row["path"])
        txn.add_file(AddFile(row["path"], row["size"], dict(row["partition_values"]), row["modification_time"],
                             True, json.dumps(stats), deletion_vector=dv))
    assert _paths(path, before + 1, "add") == _paths(path, before + 1, "remove") == {DEVIL}
    assert _ours(path) == _theirs_by_datafusion(path) and len(_ours(path)) == 1


def test_optimize_of_a_file_live_under_two_spellings_keeps_the_rows_every_reader_sees(copy_table):
    path, _ = _table_with_devil_live_twice(copy_table)
    expected = _ours(path)
    m = DeltaTable(str(path)).optimize(z_order_by=["number"])
    assert {DEVIL, DEVIL_ENCODED} <= _paths(path, m["version"], "remove")
    assert _ours(path) == _theirs(path) == expected


def test_overwrite_of_a_file_live_under_two_spellings_removes_both(copy_table):
    path, before = _table_with_devil_live_twice(copy_table)
    DeltaTable(str(path)).write(_one_row(), mode="overwrite")
    assert {DEVIL, DEVIL_ENCODED} <= _paths(path, before + 2, "remove")
    assert _ours(path) == _theirs(path) and len(_ours(path)) == 1
