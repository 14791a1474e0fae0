"""Break review s10 of the path rules (#22): log paths another writer spells with a raw query or fragment,
with '.'/'..' segments or doubled slashes, and file: URIs naming another host. What Delta Spark does was
checked on the jars in .jars (delta-spark 4.4.0, Hadoop 3.5; tests/interop/test_break_s10_paths_spark.py):

    x.parquet#f, file:<root>/x.parquet#f    Delta Spark reads x.parquet (a URI's fragment is no part of
    <root>/x.parquet?q                      the file's path); we failed (DataFileNotFound) and vacuum
                                            deleted x.parquet
    ./x.parquet, a/../x.parquet, .//x       one logical file with x.parquet (reconciliation key
                                            new Path(new URI(p)), java.net.URI.normalize)
    file://host/<root>/x.parquet            Delta Spark: Wrong FS. We read '//host/<root>/x.parquet' as a
                                            local path, which Linux reads as '/host/...' (no UNC paths)
"""
from __future__ import annotations

import json
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import DataFileNotFoundError

SCHEMA = pa.schema([("id", pa.int64())])


def _later() -> int:
    return int(time.time() * 1000) + 60_000


def _parquet() -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), buf)
    return buf.getvalue().to_pybytes()


def _commit(t: DeltaTable, version: int, actions: list[dict]) -> None:
    info = {"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}
    t.storage.write_bytes(f"_delta_log/{version:020d}.json",
                          "".join(json.dumps(a) + "\n" for a in [info, *actions]).encode())


def _add(path: str, size: int) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": int(time.time() * 1000),
                    "dataChange": True, "stats": json.dumps({"numRecords": 1})}}


def _table(uri: str, *raw_paths: str) -> DeltaTable:
    """Version 1 adds x.parquet under each of ``raw_paths`` (one commit each from version 1 on); an
    unreferenced orphan.parquet beside it. ``<root>`` in a path is the table root's path."""
    t = DeltaTable.create(uri, SCHEMA)
    data = _parquet()
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    root = uri.split("://", 1)[1] if "://" in uri else uri
    for v, raw in enumerate(raw_paths, start=1):
        _commit(t, v, [_add(raw.replace("<root>", root.rstrip("/")), len(data))])
    return DeltaTable(uri)


def _ids(t: DeltaTable) -> list[int]:
    return sorted(DeltaTable(t.uri).snapshot().to_pyarrow().column("id").to_pylist())


def _vacuumed(t: DeltaTable) -> list[str]:
    res = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=_later())
    return sorted(p.rsplit("/", 1)[-1] for p in res["files_deleted"])


# ------------------------------------------------------------------ a raw fragment or query
@pytest.mark.parametrize("raw", ["x.parquet#f", "x.parquet?a=b#f", "x.parquet#f?a", "file:<root>/x.parquet#f",
                                 "<root>/x.parquet?q", "file://<root>/x.parquet?q"])
def test_a_raw_fragment_or_query_names_the_file_before_it_for_reader_and_vacuum(tmp_path, raw):
    """Before: our reader raised DataFileNotFoundError ('x.parquet#f' decoded to a name no file has) and
    vacuum deleted x.parquet, which Delta Spark reads."""
    t = _table(str(tmp_path / "t"), raw)
    assert _ids(t) == [7]
    assert _vacuumed(t) == ["orphan.parquet"]
    assert _ids(t) == [7]


@pytest.mark.parametrize("raw", ["x.parquet#f", "memory://<root>/x.parquet?versionId=1"])
def test_a_raw_fragment_or_query_on_a_remote_store(raw):
    t = _table(f"memory://brk10-{uuid.uuid4().hex[:10]}/t", raw)
    assert _ids(t) == [7]
    assert _vacuumed(t) == ["orphan.parquet"]


def test_an_escaped_question_mark_is_part_of_the_name(tmp_path):
    """'x.parquet%3Fa=b' names the file 'x.parquet?a=b' (Delta Spark too): our reader does not read
    x.parquet for it. (Vacuum then deletes x.parquet: no reader reads it for this path.)"""
    t = _table(str(tmp_path / "t"), "x.parquet%3Fa=b")
    with pytest.raises(DataFileNotFoundError):
        _ids(t)
    t.storage.write_bytes("x.parquet?a=b", _parquet())
    assert _ids(t) == [7]


# ------------------------------------------------------------------ one logical file, several spellings
@pytest.mark.parametrize("second", ["./x.parquet", "a/../x.parquet", ".//x.parquet", "x.parquet"])
def test_spellings_delta_spark_normalizes_are_one_logical_file(tmp_path, second):
    t = _table(str(tmp_path / "t"), "x.parquet", second)
    assert _ids(t) == [7]
    assert t.snapshot().files().num_rows == 1
    assert _vacuumed(t) == ["orphan.parquet"]


def test_our_remove_cancels_another_writers_dot_segment_add(tmp_path):
    """The live './x.parquet' is 'x.parquet' to every reader: our remove of it (written with its key,
    'x.parquet') leaves the table empty for us, as for Delta Spark, which keys both as 'x.parquet'."""
    t = _table(str(tmp_path / "t"), "x.parquet", "./x.parquet")
    [live] = t.snapshot().files().column("path").to_pylist()
    with DeltaTable(t.uri).transaction(operation="DELETE") as txn:
        txn.remove_file(live)
    assert _ids(t) == []
    assert _vacuumed(t) == ["orphan.parquet", "x.parquet"]


def test_another_writers_dot_segment_remove_cancels_the_add(tmp_path):
    t = _table(str(tmp_path / "t"), "x.parquet")
    _commit(t, 2, [{"remove": {"path": "./x.parquet", "deletionTimestamp": int(time.time() * 1000),
                               "dataChange": True}}])
    assert _ids(t) == []


def test_a_checkpoint_keeps_one_logical_file(tmp_path):
    t = _table(str(tmp_path / "t"), "x.parquet", "./x.parquet")
    t.checkpoint()
    _commit(t, 3, [_add("sub/../x.parquet", len(_parquet()))])
    assert _ids(t) == [7]


def test_a_doubled_slash_in_an_absolute_uri_is_one_logical_file():
    """s3a://b//t/x and s3a://b/t/x are one key for Delta Spark (URI.normalize); two for us before."""
    bucket = f"brk10-{uuid.uuid4().hex[:10]}"
    t = _table(f"memory://{bucket}/t", f"memory://{bucket}/t/x.parquet", f"memory://{bucket}//t/x.parquet")
    assert _ids(t) == [7]


# ------------------------------------------------------------------ file: URI of another host
def test_a_file_uri_of_another_host_is_not_read_as_a_local_path(tmp_path):
    """'file:/' + '/tmp/.../t/x.parquet' is file://tmp/.../x.parquet: host 'tmp'. Delta Spark refuses it
    (Wrong FS); we read '//tmp/.../x.parquet', i.e. the table's own x.parquet on Linux, while vacuum
    (rightly: another host's file) deleted it. Now a typed error, as for any missing file."""
    t = _table(str(tmp_path / "t"), "file:/<root>/x.parquet")
    with pytest.raises(DataFileNotFoundError):
        _ids(t)


# ------------------------------------------------------------------ an object by its web address
@pytest.mark.parametrize("where", ["local", "memory"])
def test_vacuum_keeps_the_file_an_https_url_may_name(tmp_path, where):
    """An https:// URL may name the table's own object (every object store serves its objects over HTTPS):
    undecided, so vacuum keeps the files it may name (before: certainly elsewhere, x.parquet deleted).
    The live copy against moto: tests/objectstore/test_break_s10_http_alias.py."""
    uri = str(tmp_path / "t") if where == "local" else f"memory://brk10-{uuid.uuid4().hex[:10]}/t"
    t = _table(uri, "https://b.s3.amazonaws.com/t/x.parquet")
    assert _vacuumed(t) == ["orphan.parquet"]


# ------------------------------------------------------------------ F4b across spellings
def test_an_absolute_spelling_of_a_live_file_with_its_remove_replaces_it(tmp_path):
    """The refusal of test_break_s9_rules.py::test_a_live_file_added_under_another_spelling_is_refused
    asks only for the remove: with it, the file is live once, under its new spelling."""
    from airflow_provider_delta.log.base.commit_actions import AddFile
    t = _table(str(tmp_path / "t"), "x.parquet")
    [row] = t.snapshot().files().to_pylist()
    with DeltaTable(t.uri).transaction() as txn:
        txn.remove_file("x.parquet")
        txn.add_file(AddFile(f"file://{tmp_path}/t/x.parquet", row["size"], {}, row["modification_time"], True,
                             row["stats"]))
    assert _ids(t) == [7]
    assert _vacuumed(t) == ["orphan.parquet"]


def test_a_scheme_less_and_a_file_uri_spelling_are_one_logical_file(tmp_path):
    t = _table(str(tmp_path / "t"), "<root>/x.parquet", "file://<root>/x.parquet")
    assert _ids(t) == [7]
