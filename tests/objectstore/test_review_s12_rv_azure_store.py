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


def _vacuum_keeps_the_live_file_added_as(store, name: str, value: int, spell) -> None:
    """A table with x.parquet (live, added under ``spell(uri, key)``) and orphan.parquet: the reader reads the
    row or refuses the path, and vacuum deletes the orphan only - never the file the reader may have read."""
    uri = store.uri(name)
    t = DeltaTable.create(uri, SCHEMA, **store.table_kwargs)
    data = _parquet(value)
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    path = spell(uri, uri.split("://", 1)[1].split("/", 1)[1])
    with t.transaction() as txn:
        txn.add_file(AddFile(path, len(data), {}, 1, True, json.dumps({"numRecords": 1})))
    try:
        rows = t.snapshot().to_pyarrow().column("id").to_pylist()
    except (StorageError, OSError):
        rows = None                                  # refused: fine, then vacuum must keep the file too
    assert rows in ([value], None)
    t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    left = {i.path.rsplit("/", 1)[-1] for i in Storage(uri, store.options).walk_files("")}
    assert "orphan.parquet" not in left
    assert "x.parquet" in left, f"vacuum deleted the live file the reader read through {path} (rows {rows})"


@pytest.mark.parametrize("userinfo", ["x", ""], ids=["user-password", "empty-password"])
def test_vacuum_keeps_a_live_file_whose_azure_container_has_a_userinfo_colon(object_stores, userinfo):
    _vacuum_keeps_the_live_file_added_as(
        object_stores("azure"), "colon", 3,
        lambda uri, key: f"abfss://{BUCKET}:{userinfo}@{AZURE_ACCOUNT}.dfs.core.windows.net/{key}/x.parquet")


def test_vacuum_keeps_a_live_file_spelled_with_the_account_host_and_no_container(object_stores):
    _vacuum_keeps_the_live_file_added_as(
        object_stores("azure"), "hostform", 4,
        lambda uri, key: f"abfss://{AZURE_ACCOUNT}.dfs.core.windows.net/{BUCKET}/{key}/x.parquet")


def test_vacuum_keeps_a_live_file_spelled_with_an_empty_authority(store):
    _vacuum_keeps_the_live_file_added_as(
        store, "emptyauth", 5, lambda uri, key: "{}:///{}/x.parquet".format(*uri.split("://", 1)))
