"""One Azure location, several spellings (break s9, finding A), on Azurite.

A table opened as ``abfs://<container>/t`` (the account in the connection string) may list a
file under its root by Delta Spark's fully qualified spelling, ``abfss://<container>@<account>
.dfs.core.windows.net/t/x.parquet`` (or the Blob endpoint's ``wasbs://``). It is the table's own
file: the reader reads it through the table's storage, vacuum keeps it, and clone refuses a
target inside the table spelled that way (a ``wasbs://`` table cannot be opened: fsspec has no
such protocol).
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import AddFile, DeltaTable, InvalidArgumentError
from airflow_provider_delta.log.base.storage import Storage
from objectstore_servers import AZURE_ACCOUNT

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def azure(object_stores):
    return object_stores("azure")


def _qualified(uri: str, spelling: str) -> str:
    """``abfs://container/key`` in the fully qualified spelling ``spelling`` names."""
    container, _, key = uri[len("abfs://"):].partition("/")
    if spelling == "dfs":
        return f"abfss://{container}@{AZURE_ACCOUNT}.dfs.core.windows.net/{key}"
    return f"wasbs://{container}@{AZURE_ACCOUNT}.blob.core.windows.net/{key}"


def _objects(azure, uri: str) -> set[str]:
    storage = Storage(uri, azure.options)
    return {storage.relative(i.path) for i in storage.walk_files("")}


@pytest.mark.parametrize("spelling", ["dfs", "blob"])
def test_a_live_file_spelled_with_the_account_is_read_and_kept_by_vacuum(azure, spelling):
    uri = azure.uri("spelled")
    t = DeltaTable.create(uri, SCHEMA, **azure.table_kwargs)
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), buf)
    data = buf.getvalue().to_pybytes()
    t.storage.write_bytes("ext.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)          # unreferenced: vacuum deletes it
    with t.transaction() as txn:
        txn.add_file(AddFile(_qualified(uri, spelling) + "/ext.parquet", len(data), {}, 1, True,
                             json.dumps({"numRecords": 1})))
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert [p.rsplit("/", 1)[-1] for p in result["files_deleted"]] == ["orphan.parquet"]
    assert "ext.parquet" in _objects(azure, uri) and "orphan.parquet" not in _objects(azure, uri)
    assert DeltaTable(uri, **azure.table_kwargs).snapshot().to_pyarrow().column("id").to_pylist() == [7]


def test_clone_into_the_source_spelled_with_the_account_is_refused(azure):
    uri = azure.uri("spelledclone")
    src = DeltaTable.create(uri, SCHEMA, **azure.table_kwargs)
    src.write(pa.table({"id": [1]}, schema=SCHEMA))
    before = _objects(azure, uri)
    with pytest.raises(InvalidArgumentError):      # (a wasbs:// target: fsspec opens no such table)
        src.clone(_qualified(uri, "dfs") + "/inner", **azure.table_kwargs)
    assert _objects(azure, uri) == before


def test_vacuum_keeps_a_live_file_whose_account_the_table_options_do_not_name(azure, monkeypatch):
    """The table opened with no account in its options (adlfs finds the connection string in the
    environment): whether ``abfss://c@<account>.dfs...`` is this table's file cannot be known, so vacuum
    keeps the file the path may name (it deletes the unreferenced one)."""
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", azure.options["connection_string"])
    kwargs = {**azure.table_kwargs, "storage_options": {}}
    uri = azure.uri("noaccount")
    t = DeltaTable.create(uri, SCHEMA, **kwargs)
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), buf)
    data = buf.getvalue().to_pybytes()
    t.storage.write_bytes("ext.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    with t.transaction() as txn:
        txn.add_file(AddFile(_qualified(uri, "dfs") + "/ext.parquet", len(data), {}, 1, True,
                             json.dumps({"numRecords": 1})))
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert [p.rsplit("/", 1)[-1] for p in result["files_deleted"]] == ["orphan.parquet"]
    assert "ext.parquet" in _objects(azure, uri)
