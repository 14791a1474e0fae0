"""The reader and vacuum place a path where the fsspec driver opens it (data_paths.unplaceable): a spelling the
driver reads otherwise than its URI says (an empty bucket, an Azure container with a ':', adlfs's account-host
form) is refused for reads and Undecided for vacuum, while every legitimate spelling is still placed, and a
file that is really elsewhere is still outside. On real stores: tests/objectstore/test_review_s12_rv_azure_store.py
and tests/objectstore/test_unplaceable_roots_on_stores.py."""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import AddFile, DeltaTable
from airflow_provider_delta.log.base.errors import StorageError
from airflow_provider_delta.log.base.storage import Storage
from airflow_provider_delta.log.read.data_paths import Undecided, locate, table_relative

OPTS = {"account_name": "acct", "anon": True}


@pytest.fixture
def no_azure_env(monkeypatch):
    for name in [n for n in __import__("os").environ if n.startswith("AZURE_STORAGE_")]:
        monkeypatch.delenv(name)


@pytest.mark.parametrize("path", [
    "abfss://c:x@acct.dfs.core.windows.net/t/x.parquet",          # fsspec: user 'c', password 'x'
    "abfss://c:@acct.dfs.core.windows.net/t/x.parquet",
    "abfss://acct.dfs.core.windows.net/c/t/x.parquet",             # adlfs: container from the path
    "abfss://acct.dfs.core.windows.net:443/c/t/x.parquet",
    "abfs://c:443/t/x.parquet",                                     # adlfs drops the 'port'
    "abfs:///c/t/x.parquet",                                        # empty authority
    "abfss://@acct.dfs.core.windows.net/c/t/x.parquet",            # empty container
])
def test_an_azure_spelling_adlfs_reads_otherwise_is_undecided_and_not_opened(no_azure_env, path):
    table = Storage("abfss://c@acct.dfs.core.windows.net/t", {"anon": True})
    assert isinstance(table_relative(table, path), Undecided)
    with pytest.raises(StorageError, match="refusing to open"):
        locate(table, path)


def test_a_container_root_tables_file_with_an_empty_container_is_undecided(no_azure_env):
    table = Storage("abfss://t@acct.dfs.core.windows.net", {"anon": True})
    assert isinstance(table_relative(table, "abfss://@acct.dfs.core.windows.net/t/x.parquet"), Undecided)
    assert table_relative(table, "abfss://t@acct.dfs.core.windows.net/x.parquet") == "x.parquet"


@pytest.mark.parametrize("path, where", [
    ("abfss://c@acct.dfs.core.windows.net/t/x.parquet", "x.parquet"),          # Delta Spark's spelling
    ("wasbs://c@acct.blob.core.windows.net/t/x.parquet", "x.parquet"),
    ("abfs://c@acct.dfs.core.windows.net:443/t/x.parquet", "x.parquet"),       # a port on the host
    ("abfss://c@acct.dfs.core.windows.net/u/x.parquet", None),                 # another folder: outside
    ("abfss://d@acct.dfs.core.windows.net/t/x.parquet", None),                 # another container: outside
])
def test_legitimate_azure_spellings_are_still_placed(no_azure_env, path, where):
    assert table_relative(Storage("az://c/t", OPTS), path) == where


@pytest.mark.parametrize("root", ["s3://b/t", "gs://b/t"])
def test_an_empty_bucket_is_undecided_and_a_real_one_still_placed(root):
    from airflow_provider_delta.log.read.data_paths import location_of, split_uri, within
    scheme = root.split(":")[0]
    table = location_of(split_uri(root))
    assert isinstance(within(location_of(split_uri(f"{scheme}:///b/t/x.parquet")), table), Undecided)
    assert within(location_of(split_uri(f"{scheme}://b/t/x.parquet")), table) == "x.parquet"
    assert within(location_of(split_uri(f"{scheme}://c/t/x.parquet")), table) is None
    # a root spelled with the empty authority: its own spelling is its own place, another is doubt
    odd = location_of(split_uri(f"{scheme}:///b/t"))
    assert within(location_of(split_uri(f"{scheme}:///b/t/x.parquet")), odd) == "x.parquet"
    assert isinstance(within(location_of(split_uri(f"{scheme}://b/t/x.parquet")), odd), Undecided)


def _parquet(value: int) -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [value]}), buf)
    return buf.getvalue().to_pybytes()


def test_vacuum_still_deletes_a_memory_file_only_another_folder_references():
    u = f"pl{uuid.uuid4().hex[:8]}"
    t = DeltaTable.create(f"memory://{u}/t", pa.schema([("id", pa.int64())]))
    data = _parquet(1)
    t.storage.write_bytes("x.parquet", data)
    Storage(f"memory:///{u}/u").write_bytes("x.parquet", data)
    with t.transaction() as txn:          # names the other folder's x.parquet, not the table's
        txn.add_file(AddFile(f"memory:///{u}/u/x.parquet", len(data), {}, 1, True, json.dumps({"numRecords": 1})))
    assert table_relative(t.storage, f"memory:///{u}/u/x.parquet") is None
    assert table_relative(t.storage, f"memory:///{u}/t/x.parquet") == "x.parquet"
    deleted = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)["files_deleted"]
    assert [p.rsplit("/", 1)[-1] for p in deleted] == ["x.parquet"]
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [1]          # the other folder's file


@pytest.mark.parametrize("root", ["abfss://c:x@acct.dfs.core.windows.net/t", "abfss://acct.dfs.core.windows.net/c/t",
                                  "abfs:///c/t", "abfss://@acct.dfs.core.windows.net/c/t", "s3:///b/t",
                                  "gs:///b/t"])
def test_a_root_the_driver_opens_elsewhere_is_refused(no_azure_env, root):
    from airflow_provider_delta.log.base.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError, match="cannot open the table"):
        DeltaTable(root, storage_options=OPTS if root.startswith("ab") else {"anon": True})


def test_an_upper_case_scheme_opens_the_table_of_the_lower_case_one():
    u = f"pl{uuid.uuid4().hex[:8]}"
    DeltaTable.create(f"memory://{u}/t", pa.schema([("id", pa.int64())])).write(pa.table({"id": [1]}))
    table = DeltaTable(f"MEMORY://{u}/t")
    assert table.storage.root == f"memory://{u}/t"
    assert table.snapshot().to_pyarrow().column("id").to_pylist() == [1]


def test_a_root_whose_fsspec_driver_is_missing_is_a_typed_error():
    with pytest.raises(StorageError, match="not installed|no fsspec driver"):
        DeltaTable.create("oss://b/t", pa.schema([("id", pa.int64())]))
