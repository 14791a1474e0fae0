"""Breaker findings on actions a feature governs: a deletion vector added to a live path without removing it."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from dv_encoding import bitmap_array, z85_encode

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.errors import DeltaError, InvalidArgumentError

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.mark.parametrize("append_only", ["false", "true"])
def test_a_deletion_vector_on_a_live_path_without_its_remove_is_refused(tmp_path, append_only):
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={
        "delta.enableDeletionVectors": "true", "delta.appendOnly": append_only})
    table.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    row = table.snapshot().files().to_pylist()[0]
    bitmap = bitmap_array([0, 1])
    dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap), "cardinality": 2}
    stats = {**json.loads(row["stats"]), "tightBounds": False}
    version = table.latest_version()
    with pytest.raises(DeltaError):
        with table.transaction(operation="DELETE") as txn:
            txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, json.dumps(stats),
                                 deletion_vector=dv))
    assert DeltaTable(table.uri).latest_version() == version


def test_a_deletion_vector_on_a_live_path_with_its_remove_replaces_the_logical_file(tmp_path):
    """The legal form of the same commit (what Delta Spark's DELETE writes): remove the live
    logical file, add it back with the DV; the two deleted rows are gone and the file is read once."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    table.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    row = table.snapshot().files().to_pylist()[0]
    bitmap = bitmap_array([0, 1])
    dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap), "cardinality": 2}
    stats = {**json.loads(row["stats"]), "tightBounds": False}
    with table.transaction(operation="DELETE") as txn:
        txn.remove_file(row["path"])
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, json.dumps(stats),
                             deletion_vector=dv))
    assert DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist() == [3]
    assert DeltaTable(table.uri).snapshot().num_files() == 1


def test_the_refusal_names_the_live_logical_file(tmp_path):
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    table.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    row = table.snapshot().files().to_pylist()[0]
    bitmap = bitmap_array([0])
    dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap), "cardinality": 1}
    stats = {**json.loads(row["stats"]), "tightBounds": False}
    txn = table.transaction(operation="DELETE")
    txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, json.dumps(stats),
                         deletion_vector=dv))
    with pytest.raises(InvalidArgumentError, match="does not remove the live logical file"):
        txn.commit()


def _inline(rows: list[int]) -> dict:
    bitmap = bitmap_array(rows)
    return {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap),
            "cardinality": len(rows)}


def _with_deleted_row(tmp_path, checkpoint: bool = False) -> tuple[DeltaTable, dict, dict]:
    """One live file with rows 1, 2, 3 and an inline DV deleting row 1 (Delta Spark's DELETE form)."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    table.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    row = table.snapshot().files().to_pylist()[0]
    stats = json.dumps({**json.loads(row["stats"]), "tightBounds": False})
    with table.transaction(operation="DELETE") as txn:
        txn.remove_file(row["path"])
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, stats,
                             deletion_vector=_inline([0])))
    if checkpoint:
        table.checkpoint()
        table.write(pa.table({"id": [4]}, schema=SCHEMA))     # a commit after it that mentions no DV
        assert b"deletionVector" not in table.storage.read_bytes(
            f"_delta_log/{table.latest_version():020d}.json")
    return table, row, json.loads(stats)


def test_an_add_under_another_deletion_vector_without_the_remove_is_refused(tmp_path):
    """F4b where add and live entry differ only in their DVs: live (p, DV of row 1), add (p, DV of
    row 2) without the remove would leave two logical files of p. Refused, nothing written; with
    the remove it replaces the logical file."""
    table, row, stats = _with_deleted_row(tmp_path)
    version = table.latest_version()
    other = AddFile(row["path"], row["size"], {}, row["modification_time"], True, json.dumps(stats),
                    deletion_vector=_inline([1]))
    with pytest.raises(InvalidArgumentError, match="does not remove the live logical file"):
        with table.transaction(operation="DELETE") as txn:
            txn.add_file(other)
    assert DeltaTable(table.uri).latest_version() == version
    assert sorted(DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist()) == [2, 3]
    with table.transaction(operation="DELETE") as txn:
        txn.remove_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, json.dumps(stats),
                                deletion_vector=_inline([0])))
        txn.add_file(other)
    assert sorted(DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3]
    assert DeltaTable(table.uri).snapshot().num_files() == 1


def test_an_add_without_dv_over_a_checkpointed_dv_is_refused_by_a_fresh_writer(tmp_path):
    """The live DV is in the checkpoint and the commits after it mention none: the checkpoint's
    footer statistics must still send the add to the check (a fresh table object, nothing loaded)."""
    table, row, _ = _with_deleted_row(tmp_path, checkpoint=True)
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="does not remove the live logical file"):
        with DeltaTable(table.uri).transaction() as txn:
            txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, row["stats"]))
    assert DeltaTable(table.uri).latest_version() == version
    assert sorted(DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist()) == [2, 3, 4]


def test_an_append_to_a_table_without_deletion_vectors_does_not_load_the_file_list(tmp_path):
    """The cost side of F4b: an append of a new file to a table with the DV feature but no DV
    (checkpointed, commits after it without one) is checked without the table's file list: the
    snapshot's reconciled state stays unloaded (a white-box look: ``_state``)."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    table.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    table.checkpoint()
    table.write(pa.table({"id": [4]}, schema=SCHEMA))
    txn = DeltaTable(table.uri).transaction()
    txn.add_file(AddFile("new.parquet", 1, {}, 1, True, json.dumps({"numRecords": 1})))
    txn.commit()
    assert txn.snapshot._state is None


def test_two_adds_of_one_path_under_two_deletion_vectors_in_one_commit_are_refused(tmp_path):
    """PROTOCOL.md: at most one add per path in a version, whatever its DV (Delta Spark's
    checkNoDuplicateActions, DELTA_DUPLICATE_ACTIONS_FOUND). Two would be two live logical files of
    one data file: rows read twice (1, 3 and 2, 3 both live). Refused, nothing written."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    table.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    row = table.snapshot().files().to_pylist()[0]
    stats = json.dumps({**json.loads(row["stats"]), "tightBounds": False})
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="added twice"):
        with table.transaction(operation="DELETE") as txn:
            txn.remove_file(row["path"])
            for deleted in ([0], [1]):
                txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, stats,
                                     deletion_vector=_inline(deleted)))
    assert DeltaTable(table.uri).latest_version() == version
    assert sorted(DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]
