"""Breaker findings on actions a feature governs: a deletion vector added to a live path without removing it."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from dv_encoding import bitmap_array, z85_encode

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.errors import DeltaError

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.mark.xfail(strict=True, reason="an add of a live path with a new DV and no remove of the live logical file "
                   "is committed (PROTOCOL.md 'Add File and Remove File': illegal unless the commit removes the "
                   "earlier (path, dvId)); the table then reads the file twice, and on an append-only table rows "
                   "are deleted without any remove")
@pytest.mark.parametrize("append_only", ["false", "true"])
def test_a_deletion_vector_on_a_live_path_without_its_remove_is_committed(tmp_path, append_only):
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
