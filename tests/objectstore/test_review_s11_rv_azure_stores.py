"""Review s11 (report-only) of the Azure option rule and Hadoop's schemes, on Azurite and moto: open findings
were strict xfails; both are fixed (s11-azure2)."""
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


def _add(t, path: str, data: bytes) -> None:
    with t.transaction() as txn:
        txn.add_file(AddFile(path, len(data), {}, 1, True, json.dumps({"numRecords": 1})))


@pytest.mark.parametrize("kind", ["s3", "azure"])
def test_a_table_whose_root_is_spelled_with_hadoops_scheme_is_read_or_a_typed_error(object_stores, kind):
    store = object_stores(kind)
    uri = store.uri("hadoop-root")
    t = DeltaTable.create(uri, SCHEMA, **store.table_kwargs)
    data = _parquet(5)
    t.storage.write_bytes("x.parquet", data)
    _add(t, "x.parquet", data)
    key = uri.split("://", 1)[1].split("/", 1)[1]
    hadoop = (f"s3n://{BUCKET}/{key}" if kind == "s3"
              else f"wasbs://{BUCKET}@{AZURE_ACCOUNT}.blob.core.windows.net/{key}")
    try:
        rows = DeltaTable(hadoop, **store.table_kwargs).snapshot().to_pyarrow().column("id").to_pylist()
    except StorageError as e:
        assert hadoop.split("://")[0] in str(e)
        return
    assert rows == [5]


@pytest.mark.parametrize("named_by", ["account_name", "account_host", "root-uri"])
def test_vacuum_keeps_a_live_file_when_account_name_and_connection_string_disagree(object_stores, named_by):
    store = object_stores("azure")
    uri = store.uri("two-accounts")
    options = dict(store.options)                                   # adlfs uses its connection string
    if named_by == "account_name":
        options["account_name"] = "elsewhere"
    elif named_by == "account_host":
        options["account_host"] = "elsewhere.blob.core.windows.net"
    else:
        uri = uri.replace(f"abfs://{BUCKET}/", f"abfs://{BUCKET}@elsewhere.dfs.core.windows.net/")
    t = DeltaTable.create(uri, SCHEMA, storage_options=options)
    data = _parquet(3)
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    key = uri.split("://", 1)[1].split("/", 1)[1]
    _add(t, f"abfss://{BUCKET}@{AZURE_ACCOUNT}.dfs.core.windows.net/{key}/x.parquet", data)
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [3]              # read: fine
    t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    left = {i.path.rsplit("/", 1)[-1] for i in Storage(uri, options).walk_files("")}
    assert "x.parquet" in left, "vacuum deleted the table's live file"
    assert DeltaTable(uri, storage_options=options).snapshot().to_pyarrow().column("id").to_pylist() == [3]
