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
