"""Break review s9 (breaker 4) of the location rule in read/data_paths.py (ea793d7: location_of /
within, lexical '.'/'..'): log paths Delta Spark resolves to a live file under the table root that
vacuum placed elsewhere (and deleted), or that our reader opened differently.

What Delta Spark reads for each spelling was checked with DeltaFileOperations.absolutePath (delta-spark
4.4.0 on hadoop-client-api 3.5.0), which builds every data file's Path from ``add.path``:

    file:/tmp/t + x.parquet/                 -> file:/tmp/t/x.parquet/  (java.io.File drops the slash)
    s3a://b/t   + ../t/x.parquet             -> s3a://b/t/x.parquet
    s3a://b/t   + a/../../t/x.parquet        -> s3a://b/t/x.parquet
    s3a://b/t   + s3a://b//t/x.parquet       -> s3a://b/t/x.parquet     (java.net.URI.normalize)
    file:/tmp/t + x.parquet?a=b              -> file:/tmp/t/x.parquet   (Path(parent, child) drops the query)

memory:// stands for a remote store (fsspec's in-memory file system, one bucket per test): the local
file system is saved by vacuum's second look through the operating system (_physical), a bucket is not.
"""
from __future__ import annotations

import json
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable

SCHEMA = pa.schema([("id", pa.int64())])


def _later() -> int:
    """A vacuum's 'now' a minute ahead: files just written are older than a zero retention (a store's
    file times may be whole seconds, or the very millisecond of the vacuum)."""
    return int(time.time() * 1000) + 60_000


def _parquet() -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), buf)
    return buf.getvalue().to_pybytes()


def _table_whose_add_is(uri: str, raw_path: str) -> DeltaTable:
    """A table whose version 1 adds ``x.parquet`` under the root, spelled ``raw_path`` in the log (as
    another writer may spell it: our add_file refuses '..' segments), plus an unreferenced orphan."""
    t = DeltaTable.create(uri, SCHEMA)
    data = _parquet()
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    now = int(time.time() * 1000)
    add = {"add": {"path": raw_path, "partitionValues": {}, "size": len(data), "modificationTime": now,
                   "dataChange": True, "stats": json.dumps({"numRecords": 1})}}
    info = {"commitInfo": {"timestamp": now, "operation": "WRITE"}}
    t.storage.write_bytes("_delta_log/00000000000000000001.json",
                          (json.dumps(info) + "\n" + json.dumps(add) + "\n").encode())
    return DeltaTable(uri)


def _vacuum_keeps_the_live_file(uri: str) -> None:
    t = DeltaTable(uri)
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]       # our reader reads x.parquet
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=_later())
    assert [p.rsplit("/", 1)[-1] for p in result["files_deleted"]] == ["orphan.parquet"]
    assert t.storage.exists("x.parquet")
    assert DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist() == [7]


def _bucket() -> str:
    return f"brk4-{uuid.uuid4().hex[:10]}"


# ------------------------------------------------------------------ trailing slash
@pytest.mark.parametrize("where", ["local", "memory"])
def test_vacuum_keeps_a_live_file_whose_path_ends_in_a_slash(tmp_path, where):
    """Vacuum's vectorized filter let 'x.parquet/' through as an exact relative path; it matched no listed
    file, so vacuum deleted x.parquet, which our reader (normpath) and Delta Spark (java.io.File) read."""
    uri = str(tmp_path / "t") if where == "local" else f"memory://{_bucket()}/t"
    _table_whose_add_is(uri, "x.parquet/")
    _vacuum_keeps_the_live_file(uri)


# ------------------------------------------------------------------ '..' above the root and back
@pytest.mark.parametrize("raw", ["../t/x.parquet", "a/../../t/x.parquet", "%2E%2E/t/x.parquet"])
def test_vacuum_keeps_a_live_relative_path_that_leaves_and_reenters_the_root_on_a_remote_store(raw):
    """table_relative resolved a relative path on its own: '../t/x.parquet' was 'above the root' (None),
    though resolved against the root, as Hadoop's Path and our reader do, it is x.parquet: deleted."""
    uri = f"memory://{_bucket()}/t"
    _table_whose_add_is(uri, raw)
    _vacuum_keeps_the_live_file(uri)


@pytest.mark.parametrize("raw", ["../t/x.parquet", "a/../../t/x.parquet"])
def test_local_vacuum_keeps_a_live_relative_path_that_leaves_and_reenters_the_root(tmp_path, raw):
    """Sound today only through _physical's look at the operating system's path."""
    uri = str(tmp_path / "t")
    _table_whose_add_is(uri, raw)
    _vacuum_keeps_the_live_file(uri)


def test_a_relative_path_above_the_root_into_a_sibling_is_never_deleted_from_the_table(tmp_path):
    """'../other/x.parquet' names the sibling's file: the table's own x.parquet is no longer referenced
    (vacuum deletes it), the sibling is untouched."""
    uri = str(tmp_path / "t")
    (tmp_path / "other").mkdir()
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), str(tmp_path / "other" / "x.parquet"))
    t = _table_whose_add_is(uri, "../other/x.parquet")
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]
    deleted = sorted(p.rsplit("/", 1)[-1] for p in
                     t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=_later())["files_deleted"])
    assert deleted == ["orphan.parquet", "x.parquet"]
    assert (tmp_path / "other" / "x.parquet").exists()


# ------------------------------------------------------------------ doubled slash after the authority
def test_vacuum_and_reader_place_a_doubled_slash_after_the_authority_at_the_root():
    """posixpath.normpath keeps a leading '//' (POSIX): memory://b//t/x.parquet was '//t/x.parquet',
    outside the root, so vacuum deleted t/x.parquet (Delta Spark's java.net.URI.normalize collapses the
    slashes and reads it) and our reader failed on it."""
    bucket = _bucket()
    uri = f"memory://{bucket}/t"
    _table_whose_add_is(uri, f"memory://{bucket}//t/x.parquet")
    _vacuum_keeps_the_live_file(uri)


# ------------------------------------------------------------------ a raw '?' (a query to Hadoop)
def test_vacuum_keeps_the_file_delta_spark_reads_for_a_path_with_a_raw_query(tmp_path):
    """add.path 'x.parquet?a=b' (an unencoded '?': a writer that does not percent-encode) is x.parquet to
    Delta Spark (Path(parent, child) keeps scheme, authority, path and fragment only). Paths arrived
    decoded, so the '?' of a query and of an encoded %3F looked alike and vacuum deleted x.parquet; replay
    now drops a raw query or fragment before decoding (read/replay.file_paths)."""
    uri = str(tmp_path / "t")
    t = _table_whose_add_is(uri, "x.parquet?a=b")
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=_later())
    assert [p.rsplit("/", 1)[-1] for p in result["files_deleted"]] == ["orphan.parquet"]


# ------------------------------------------------------------------ Azure host spellings
@pytest.mark.parametrize("live", ["abfss://c@acct.dfs.core.windows.net:443/t/x.parquet",
                                  "wasbs://c@ACCT.blob.core.windows.net:443/t/x.parquet",
                                  "abfss://c@acct.dfs.core.windows.net./t/x.parquet"])
def test_an_azure_host_with_a_port_or_a_final_dot_is_the_same_account(live):
    """The host pattern's ``core\\..+`` took ':443' (or a fully qualified name's final dot) into the
    cloud, so the account differed: the live file was certainly outside (None) and vacuum deleted it."""
    from airflow_provider_delta.log.base.storage import Storage
    from airflow_provider_delta.log.read.data_paths import table_relative
    assert table_relative(Storage("az://c/t", {"account_name": "acct", "anon": True}), live) == "x.parquet"
    assert table_relative(Storage("abfss://c@acct.dfs.core.windows.net/t", {"anon": True}), live) == "x.parquet"


def test_the_reader_reaches_a_file_of_another_azure_account_without_a_type_error():
    from airflow_provider_delta.log.base.storage import Storage
    from airflow_provider_delta.log.read.data_paths import locate
    where = locate(Storage("az://c/t", {"account_name": "acct", "anon": True}),
                   "abfss://c@other.dfs.core.windows.net/t/x.parquet")
    assert where.path.endswith("t/x.parquet")


# ------------------------------------------------------------------ a scheme this package does not know
@pytest.mark.parametrize("suffix", ["x.parquet/", "x.parquet/."])
def test_vacuum_keeps_what_an_unknown_scheme_path_with_a_trailing_slash_may_name(tmp_path, suffix):
    """A path of a scheme that may alias the local file system is Undecided (V3: every file it may name is
    kept). On a local table its path part was not resolved, so 'foo://h/<root>/x.parquet/' ended in no
    listed file's name and vacuum deleted x.parquet."""
    uri = str(tmp_path / "t")
    t = _table_whose_add_is(uri, f"foo://h{uri}/{suffix}")
    deleted = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=_later())["files_deleted"]
    assert [p.rsplit("/", 1)[-1] for p in deleted] == ["orphan.parquet"]
    assert t.storage.exists("x.parquet")
