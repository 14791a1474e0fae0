"""A file outside the table under another scheme of its store, and another container of the table's
account (s11, issues #22/#25), on Azurite and moto.

Delta Spark reads a shallow clone whose adds name the source's files as ``wasbs://c@acct.blob...``
(Hadoop's Blob driver), ``abfss://c@acct.dfs...`` or ``s3n://``/``s3a://``; fsspec knows no ``wasb``,
``wasbs`` or ``s3n``, so :func:`locate` opens such a file through ``abfs`` (with the account) or ``s3``.
A table opened with a connection string keeps it for a file of its own account in another container
(the string names that account); vacuum deletes nothing outside the table.
"""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import AddFile, DeltaTable
from airflow_provider_delta.log.base.storage import Storage
from objectstore_servers import AZURE_ACCOUNT, BUCKET, azure_connection_string

SCHEMA = pa.schema([("id", pa.int64())])


def _parquet(value: int) -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [value]}, schema=SCHEMA), buf)
    return buf.getvalue().to_pybytes()


def _table_listing(store, file_uri: str, written_at: str, data: bytes):
    """A table whose log adds ``file_uri`` (written to through the store's own spelling ``written_at``)."""
    Storage(written_at, store.options).files.fs.pipe_file(Storage(written_at, store.options).path(), data)
    t = DeltaTable.create(store.uri("outside"), SCHEMA, **store.table_kwargs)
    t.storage.write_bytes("orphan.parquet", data)
    with t.transaction() as txn:
        txn.add_file(AddFile(file_uri, len(data), {}, 1, True, json.dumps({"numRecords": 1})))
    return t


@pytest.fixture(scope="module")
def other_container(object_stores):
    """A second container of Azurite's one account (the table's is BUCKET)."""
    from azure.storage.blob import BlobServiceClient
    store = object_stores("azure")
    name = f"src{uuid.uuid4().hex[:8]}"
    BlobServiceClient.from_connection_string(azure_connection_string(store.server)).create_container(name)
    return store, name


@pytest.mark.parametrize("spelling", ["wasbs", "wasb", "abfss"])
def test_a_file_of_the_tables_account_in_another_container_is_read_with_its_connection_string(
        other_container, spelling):
    store, container = other_container
    key = f"src-{uuid.uuid4().hex[:8]}/x.parquet"
    host = "blob" if spelling.startswith("wasb") else "dfs"
    file_uri = f"{spelling}://{container}@{AZURE_ACCOUNT}.{host}.core.windows.net/{key}"
    t = _table_listing(store, file_uri, f"abfs://{container}/{key}", _parquet(7))
    assert DeltaTable(t.uri, **store.table_kwargs).snapshot().to_pyarrow().column("id").to_pylist() == [7]
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert [p.rsplit("/", 1)[-1] for p in result["files_deleted"]] == ["orphan.parquet"]
    assert Storage(f"abfs://{container}/{key}", store.options).files.fs.exists(f"{container}/{key}")
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]


@pytest.mark.parametrize("scheme", ["s3n", "s3a"])
def test_a_file_outside_the_table_under_hadoops_s3_schemes_is_read(object_stores, scheme):
    store = object_stores("s3")
    key = f"src-{uuid.uuid4().hex[:8]}/x.parquet"
    t = _table_listing(store, f"{scheme}://{BUCKET}/{key}", f"s3://{BUCKET}/{key}", _parquet(9))
    assert DeltaTable(t.uri, **store.table_kwargs).snapshot().to_pyarrow().column("id").to_pylist() == [9]
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert [p.rsplit("/", 1)[-1] for p in result["files_deleted"]] == ["orphan.parquet"]
    assert Storage(f"s3://{BUCKET}/{key}", store.options).files.fs.exists(f"{BUCKET}/{key}")


def test_a_clone_of_a_source_listing_an_s3n_file_is_made(object_stores):
    store = object_stores("s3")
    key = f"src-{uuid.uuid4().hex[:8]}/x.parquet"
    source = _table_listing(store, f"s3n://{BUCKET}/{key}", f"s3://{BUCKET}/{key}", _parquet(9))
    clone = source.clone(store.uri("clone"), **store.table_kwargs)
    assert clone.snapshot().to_pyarrow().column("id").to_pylist() == [9]


@pytest.mark.parametrize("spelling", ["wasbs", "wasb"])
def test_a_clone_of_a_source_listing_a_wasbs_file_is_made(other_container, spelling):
    """s11: clone.referenced_roots built a Storage with the scheme as written (fsspec knows no wasb/wasbs)."""
    store, container = other_container
    key = f"src-{uuid.uuid4().hex[:8]}/x.parquet"
    file_uri = f"{spelling}://{container}@{AZURE_ACCOUNT}.blob.core.windows.net/{key}"
    source = _table_listing(store, file_uri, f"abfs://{container}/{key}", _parquet(4))
    clone = source.clone(store.uri("clone"), **store.table_kwargs)
    assert clone.snapshot().to_pyarrow().column("id").to_pylist() == [4]
