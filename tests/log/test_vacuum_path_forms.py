"""Vacuum keeps every file the log references, in every path form the reader accepts.

A live file named by an absolute ``file:/<root>/...`` URI (Hadoop's one-slash form, as
Spark writes it) was deleted by ``vacuum(dry_run=False)``; these tests reproduce that
and pin the other forms: relative, percent-encoded, ``file:///``, scheme-less absolute,
``..`` segments, DV files by relative and absolute descriptors, and a path whose scheme
we cannot place (kept: fail safe).
"""
from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from urllib.parse import quote

import pyarrow as pa
import pytest
from deltalake import write_deltalake

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.storage import Storage
from airflow_provider_delta.log.maintenance.vacuum import vacuum
from airflow_provider_delta.log.read.data_paths import Undecided, table_relative

LOG = "_delta_log"
DAY = 86_400_000


def _age(root: Path, days: int = 30) -> None:
    old = (time.time() - days * 86_400)
    for d, _dirs, files in os.walk(root):
        for f in files:
            os.utime(Path(d) / f, (old, old))


def _base_table(tmp_path: Path) -> tuple[Path, Path]:
    path = tmp_path / "t"
    write_deltalake(str(path), pa.table({"x": [1, 2]}))
    src = next(p for p in path.glob("*.parquet"))
    return path, src


def _commit(path: Path, version: int, actions: list[dict]) -> None:
    lines = [{"commitInfo": {"timestamp": int(time.time() * 1000), "operation": "WRITE"}}, *actions]
    (path / LOG / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def _add(log_path: str, size: int) -> dict:
    return {"add": {"path": log_path, "partitionValues": {}, "size": size, "modificationTime": 1,
                    "dataChange": True}}


def _copy(src: Path, dest: Path) -> int:
    dest.parent.mkdir(parents=True, exist_ok=True)
    dest.write_bytes(src.read_bytes())
    return dest.stat().st_size


@pytest.mark.parametrize("form", ["hadoop", "triple", "scheme_less"])
def test_live_file_named_by_an_absolute_uri_survives_vacuum(tmp_path, form):
    """The bug of issue 22: a `file:/<root>/x` add was vacuumed and the table no longer opened."""
    path, src = _base_table(tmp_path)
    target = path / "sub dir" / "abs#1.parquet"
    size = _copy(src, target)
    absolute = str(target)
    log_path = {"hadoop": "file:" + quote(absolute), "triple": "file://" + quote(absolute),
                "scheme_less": quote(absolute)}[form]
    _commit(path, 1, [_add(log_path, size)])
    stray = path / "stray.parquet"
    _copy(src, stray)
    _age(path)
    table = DeltaTable(str(path))
    assert table.snapshot().to_pyarrow().num_rows == 4          # the reader resolves the path
    result = vacuum(table, dry_run=False)
    assert result["files_deleted"] == ["stray.parquet"]
    assert target.exists()
    assert DeltaTable(str(path)).snapshot().to_pyarrow().num_rows == 4


def test_percent_encoded_relative_names_are_matched_once_decoded(tmp_path):
    """`a%2541.parquet` in the log is the file `a%41.parquet`, not `aA.parquet` (decode once)."""
    path, src = _base_table(tmp_path)
    literal = path / "p=a b" / "a%41.parquet"
    size = _copy(src, literal)
    decoded_twice = path / "p=a b" / "aA.parquet"
    _copy(src, decoded_twice)
    _commit(path, 1, [_add(quote("p=a b/a%41.parquet"), size)])
    _age(path)
    result = vacuum(DeltaTable(str(path)), dry_run=False)
    assert literal.exists()
    assert result["files_deleted"] == ["p=a b/aA.parquet"]


def test_absolute_uri_with_percent_in_its_name_is_decoded_once(tmp_path):
    path, src = _base_table(tmp_path)
    literal = path / "a%41.parquet"
    size = _copy(src, literal)
    _copy(src, path / "aA.parquet")
    _commit(path, 1, [_add("file:" + quote(str(literal)), size)])
    _age(path)
    result = vacuum(DeltaTable(str(path)), dry_run=False)
    assert literal.exists()
    assert result["files_deleted"] == ["aA.parquet"]


def test_absolute_deletion_vector_inside_the_root_is_kept(copy_table):
    """A `p` descriptor naming a DV file under the root by absolute URI keeps that file."""
    path = copy_table("dat/deletion_vectors/delta")
    snap = DeltaTable(str(path)).snapshot()
    files = snap.files()
    dvs = [d for d in files.column("deletion_vector").to_pylist() if d]
    assert dvs and dvs[0]["storageType"] == "u"
    live_dv = next(path.glob("deletion_vector_*.bin"))
    moved = path / "dvs" / "moved dv.bin"
    _copy(live_dv, moved)
    live_dv.unlink()
    row = files.slice(0, 1).to_pylist()[0]
    dv = {k: v for k, v in row["deletion_vector"].items() if v is not None}
    rewritten = dict(dv, storageType="p", pathOrInlineDv="file:" + quote(str(moved)))
    version = snap.version + 1
    add = {"path": quote(row["path"]), "partitionValues": dict(row["partition_values"] or {}),
           "size": row["size"], "modificationTime": 1, "dataChange": True, "stats": row["stats"],
           "deletionVector": rewritten}
    remove = {"path": quote(row["path"]), "deletionTimestamp": 1, "dataChange": True,
              "deletionVector": dv}
    _commit(path, version, [{"remove": remove}, {"add": add}])
    _age(path)
    before = DeltaTable(str(path)).snapshot().to_pyarrow().num_rows
    result = vacuum(DeltaTable(str(path)), dry_run=False, now_ms=int(time.time() * 1000) + 400 * DAY,
                    enforce_retention=False, retention_hours=0)
    assert moved.exists(), result
    assert DeltaTable(str(path)).snapshot().to_pyarrow().num_rows == before


def test_a_path_of_a_scheme_we_cannot_place_keeps_the_files_it_may_name(tmp_path):
    """`dbfs:/mnt/t/x.parquet` may be this table's `x.parquet` through a mount: keep it (fail safe)."""
    path, src = _base_table(tmp_path)
    maybe = path / "part" / "maybe.parquet"
    size = _copy(src, maybe)
    other = path / "part" / "other.parquet"
    _copy(src, other)
    _commit(path, 1, [{"remove": {"path": "dbfs:/mnt/somewhere/part/maybe.parquet",
                                  "deletionTimestamp": int(time.time() * 1000), "dataChange": True,
                                  "size": size}}])
    _age(path)
    result = vacuum(DeltaTable(str(path)), dry_run=False)
    assert maybe.exists()
    assert result["files_deleted"] == ["part/other.parquet"]


def test_files_outside_the_root_are_never_listed_and_outside_paths_protect_nothing(tmp_path):
    path, src = _base_table(tmp_path)
    outside = tmp_path / "t-other" / "x.parquet"
    size = _copy(src, outside)
    same_name = path / "x.parquet"
    _copy(src, same_name)
    _commit(path, 1, [_add("file:" + str(outside), size)])
    _age(tmp_path)
    result = vacuum(DeltaTable(str(path)), dry_run=False)
    assert outside.exists()                        # never under the root: never listed
    assert result["files_deleted"] == ["x.parquet"]  # `t-other/x.parquet` is not `t/x.parquet`


@pytest.mark.parametrize("log_path,expected", [
    ("a/b.parquet", "a/b.parquet"),
    ("a/../b.parquet", "b.parquet"),
    ("../b.parquet", None),
    ("s3://bucket/t/a/b.parquet", "a/b.parquet"),
    ("s3a://bucket/t/a/b.parquet", "a/b.parquet"),       # one store under two schemes
    ("s3://bucket/t2/a/b.parquet", None),
    ("s3://other/t/a/b.parquet", None),
    ("/t/a/b.parquet", "a/b.parquet"),                   # scheme-less: the table's own store
    ("gs://bucket/t/a/b.parquet", None),                 # another known store
    ("dbfs:/mnt/t/a/b.parquet", Undecided("/mnt/t/a/b.parquet")),
    ("s3://bucket/t/a#b?.parquet", "a#b?.parquet"),      # decoded names keep # and ?
])
def test_table_relative_on_an_object_store_root(log_path, expected):
    storage = Storage(f"memory://rules-{uuid.uuid4().hex}/t")
    storage.root = "s3://bucket/t"          # the rule only reads the root's parts
    storage.protocol = "s3"
    assert table_relative(storage, log_path) == expected


@pytest.mark.parametrize("log_path,expected", [
    ("file:/data/t/x.parquet", "x.parquet"),
    ("file:///data/t/x.parquet", "x.parquet"),
    ("file://localhost/data/t/x.parquet", "x.parquet"),
    ("file://otherhost/data/t/x.parquet", None),
    ("/data/t/y/x.parquet", "y/x.parquet"),
    ("file:/data/t2/x.parquet", None),
    ("file:/data/t", None),
    ("s3://bucket/data/t/x.parquet", None),
    ("hdfs://nn/data/t/x.parquet", None),
    ("weird:/data/t/x.parquet", Undecided("/data/t/x.parquet")),
])
def test_table_relative_on_a_local_root(log_path, expected):
    storage = Storage("/data/t")
    assert table_relative(storage, log_path) == expected
