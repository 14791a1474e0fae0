"""Review s12 (report-only) of where a data file lives and which credentials it gets, on Azurite.

Each open finding is a strict xfail: whoever fixes it removes the marker (the test must then pass).
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import AddFile, DeltaTable
from airflow_provider_delta.log.base.errors import StorageError
from airflow_provider_delta.log.base.storage import Storage
from objectstore_servers import AZURE_ACCOUNT, BUCKET

SCHEMA = pa.schema([("id", pa.int64())])


def _parquet(value: int) -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [value]}, schema=SCHEMA), buf)
    return buf.getvalue().to_pybytes()


@pytest.mark.parametrize("userinfo", ["x", ""], ids=["user-password", "empty-password"])
def test_vacuum_keeps_a_live_file_whose_azure_container_has_a_userinfo_colon(object_stores, userinfo):
    store = object_stores("azure")
    uri = store.uri("colon")
    t = DeltaTable.create(uri, SCHEMA, **store.table_kwargs)
    data = _parquet(3)
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    key = uri.split("://", 1)[1].split("/", 1)[1]
    path = f"abfss://{BUCKET}:{userinfo}@{AZURE_ACCOUNT}.dfs.core.windows.net/{key}/x.parquet"
    with t.transaction() as txn:
        txn.add_file(AddFile(path, len(data), {}, 1, True, json.dumps({"numRecords": 1})))
    try:
        rows = t.snapshot().to_pyarrow().column("id").to_pylist()
    except StorageError:
        rows = None                                  # refused: fine, then vacuum must keep the file too
    assert rows in ([3], None)
    t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    left = {i.path.rsplit("/", 1)[-1] for i in Storage(uri, store.options).walk_files("")}
    assert "orphan.parquet" not in left
    assert "x.parquet" in left, f"vacuum deleted the live file the reader read through {path}"


def test_vacuum_keeps_a_live_file_spelled_with_the_account_host_and_no_container(object_stores):
    store = object_stores("azure")
    uri = store.uri("hostform")
    t = DeltaTable.create(uri, SCHEMA, **store.table_kwargs)
    data = _parquet(4)
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    key = uri.split("://", 1)[1].split("/", 1)[1]
    path = f"abfss://{AZURE_ACCOUNT}.dfs.core.windows.net/{BUCKET}/{key}/x.parquet"
    with t.transaction() as txn:
        txn.add_file(AddFile(path, len(data), {}, 1, True, json.dumps({"numRecords": 1})))
    try:
        rows = t.snapshot().to_pyarrow().column("id").to_pylist()
    except StorageError:
        rows = None
    assert rows in ([4], None)
    t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    left = {i.path.rsplit("/", 1)[-1] for i in Storage(uri, store.options).walk_files("")}
    assert "orphan.parquet" not in left
    assert "x.parquet" in left, f"vacuum deleted the live file the reader read through {path}"


def test_vacuum_keeps_a_live_file_spelled_with_an_empty_authority(store):
    uri = store.uri("emptyauth")
    t = DeltaTable.create(uri, SCHEMA, **store.table_kwargs)
    data = _parquet(5)
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    scheme, rest = uri.split("://", 1)
    path = f"{scheme}:///{rest}/x.parquet"
    with t.transaction() as txn:
        txn.add_file(AddFile(path, len(data), {}, 1, True, json.dumps({"numRecords": 1})))
    try:
        rows = t.snapshot().to_pyarrow().column("id").to_pylist()
    except (StorageError, OSError):
        rows = None
    assert rows in ([5], None)
    t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    left = {i.path.rsplit("/", 1)[-1] for i in Storage(uri, store.options).walk_files("")}
    assert "orphan.parquet" not in left
    assert "x.parquet" in left, f"vacuum deleted the live file the reader read through {path} (rows {rows})"
