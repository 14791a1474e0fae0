"""Which file system opens a file outside the table (s11, issue #25): the scheme as fsspec names it.

fsspec knows no ``s3n``, ``wasb`` or ``wasbs`` (Hadoop's), though Delta Spark reads files so spelled: they
are opened as ``s3`` and as ``abfs`` with ``container@account`` from the URI. A scheme no installed fsspec
driver serves is a typed error, not a raw ValueError. (On live servers: tests/objectstore/test_outside_files_on_stores.py.)
"""
from __future__ import annotations

import json
import os

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from fsspec.implementations.memory import MemoryFileSystem

from airflow_provider_delta.log import DeltaTable, StorageError
from airflow_provider_delta.log.base.storage import Storage
from airflow_provider_delta.log.read.data_paths import locate

SCHEMA = pa.schema([("id", pa.int64())])
KEY = {"account_key": "a2V5"}


@pytest.mark.parametrize("path, root, file_path", [
    ("wasbs://src@acct.blob.core.windows.net/s/x.parquet", "abfs://src@acct.blob.core.windows.net/s/x.parquet",
     "src/s/x.parquet"),
    ("wasb://acct.blob.core.windows.net/s/x.parquet", "abfs://$root@acct.blob.core.windows.net/s/x.parquet",
     "$root/s/x.parquet"),                                          # the root container
    ("wasbs://src@ACCT.blob.core.windows.net.:443/x.parquet", "abfs://src@acct.blob.core.windows.net/x.parquet",
     "src/x.parquet"),
    ("abfss://src@acct.dfs.core.windows.net/x.parquet", "abfss://src@acct.blob.core.windows.net/x.parquet",
     "src/x.parquet"),
    ("s3n://b2/s/x.parquet", "s3://b2/s/x.parquet", "b2/s/x.parquet"),
], ids=["wasbs", "wasb-root-container", "host-spelling", "abfss", "s3n"])
def test_a_hadoop_scheme_is_opened_through_its_fsspec_protocol(path, root, file_path):
    """The table's own account (its key goes along) or its S3 store (its options do)."""
    table = Storage("s3://b/t") if path.startswith("s3") else Storage("abfss://c@acct.dfs.core.windows.net/t", KEY)
    where = locate(table, path)
    assert (where.storage.root, where.path) == (root, file_path)
    assert where.storage.storage_options == table.storage_options


def test_a_scheme_no_file_system_serves_is_a_typed_error_and_changes_nothing(tmp_path):
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    pq.write_table(pa.table({"id": [1]}, schema=SCHEMA), os.path.join(uri, "x.parquet"))
    log = os.path.join(uri, "_delta_log")
    with open(os.path.join(log, f"{1:020d}.json"), "w") as f:
        f.write(json.dumps({"add": {"path": "nosuchfs://h/x.parquet", "partitionValues": {}, "size": 1,
                                    "modificationTime": 1, "dataChange": True}}) + "\n")
    before = sorted(os.listdir(log)), sorted(os.listdir(uri))
    with pytest.raises(StorageError, match="nosuchfs"):
        DeltaTable(uri).snapshot().to_pyarrow()
    assert (sorted(os.listdir(log)), sorted(os.listdir(uri))) == before



def test_a_table_on_a_file_system_registered_at_run_time_opens():
    """A user's own fsspec file system, registered with ``fsspec.register_implementation`` (not in
    ``fsspec.available_protocols()``), serves a table root: the check for a driver looked at fsspec's known
    names only and refused it (fresh-clone CI, session 11)."""
    class UsersOwnFS(MemoryFileSystem):
        protocol = ("s11own",)
        store: dict = {}
        pseudo_dirs = [""]

    fsspec.register_implementation("s11own", UsersOwnFS, clobber=True)
    assert "s11own" not in fsspec.available_protocols()
    table = DeltaTable.create("s11own://bucket/t", pa.schema([("id", pa.int64())]), single_writer=True)
    table.write(pa.table({"id": pa.array([1, 2], pa.int64())}))
    again = DeltaTable("s11own://bucket/t", single_writer=True)
    assert (again.latest_version(), again.snapshot().files().num_rows) == (1, 1)
