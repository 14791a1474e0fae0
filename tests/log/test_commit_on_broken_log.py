"""Never commit on top of a log the reader rejects.

A blind append used to read only the protocol and metadata lines of the commits it built
on, so it landed on logs with a truncated line, a commit that is not JSON, wrong types,
numbers beyond int64 or absurd nesting, leaving new data that no reader could open. Now
the transaction parses what it builds on and refuses with CorruptLogError, writing nothing.
"""
from __future__ import annotations

import os
import re

import pyarrow as pa
import pytest

from airflow_provider_delta.log import AddFile, CorruptLogError, DeltaTable
from airflow_provider_delta.log.base.names import commit_path

DAMAGE = {
    "truncated last line": lambda good: good[:-15],
    "not JSON": lambda good: b"this is not json\n",
    "action that is not an object": lambda good: b"[1, 2, 3]\n",
    "size of the wrong type": lambda good: good.replace(b'"size":', b'"size":"big","x":', 1),
    "size beyond int64": lambda good: good.replace(b'"size":', b'"size":' + b"1" + b"0" * 30 + b',"x":', 1),
    "size 1e400": lambda good: good.replace(b'"size":', b'"size":1e400,"x":', 1),
    "100,000-deep nesting": lambda good: b'{"add":' + b"[" * 100_000 + b"]" * 100_000 + b"}\n",
    "path that is not UTF-8": lambda good: good.replace(b'"path":"', b'"path":"\xff\xfe', 1),
}


def tree(root) -> dict[str, int]:
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_size for d, _, fs in os.walk(root) for f in fs}


@pytest.mark.parametrize("damaged_version", [1, 2], ids=["middle commit", "last commit"])
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_a_damaged_log_refuses_writes_and_transactions(tmp_path, damage, damaged_version):
    path = tmp_path / "t"
    t = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    t.write(pa.table({"id": [2]}))
    target = path / commit_path(damaged_version)
    target.write_bytes(DAMAGE[damage](target.read_bytes()))
    before = tree(path)
    fresh = DeltaTable(str(path))
    with pytest.raises(CorruptLogError):
        fresh.write(pa.table({"id": [3]}))
    with pytest.raises(CorruptLogError):
        with fresh.transaction() as txn:
            txn.add_file(AddFile("x.parquet", 10, {}, 1, True))
    assert tree(path) == before


@pytest.mark.parametrize("extra", [
    b'{"protocol":{"minReaderVersion":1,"minWriterVersion":2}}\n{"protocol":{"minReaderVersion":1,"minWriterVersion":3}}\n',
    None,
], ids=["two protocol actions", "two metaData actions"])
def test_a_commit_with_two_protocol_or_metadata_actions_is_corrupt(tmp_path, extra):
    path = tmp_path / "t"
    t = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    first = (path / commit_path(0)).read_bytes()
    if extra is None:
        meta = [line for line in first.splitlines() if line.startswith(b'{"metaData"')][0]
        extra = meta + b"\n" + meta + b"\n"
    (path / commit_path(1)).write_bytes((path / commit_path(1)).read_bytes() + extra)
    with pytest.raises(CorruptLogError, match="more than one"):
        DeltaTable(str(path)).snapshot()


def test_a_negative_size_is_corrupt(tmp_path):
    path = tmp_path / "t"
    t = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    target = path / commit_path(1)
    target.write_bytes(re.sub(rb'"size":\d+', b'"size":-5', target.read_bytes(), count=1))
    with pytest.raises(CorruptLogError, match="negative size"):
        DeltaTable(str(path)).snapshot().files()
    with pytest.raises(CorruptLogError):
        DeltaTable(str(path)).write(pa.table({"id": [2]}))
