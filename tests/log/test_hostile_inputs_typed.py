"""Inputs that used to escape as untyped Python errors now give the package's typed errors.

Each case checks the error class, that the message names what is wrong, and that
nothing on disk changed.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CorruptLogError, DeltaTable, StorageError


def _tree(root) -> dict[str, bytes]:
    out = {}
    for d, _, names in os.walk(root):
        for n in names:
            p = os.path.join(d, n)
            with open(p, "rb") as f:
                out[os.path.relpath(p, root)] = f.read()
    return out


def _set_in_first_commit(table_dir, action: str, field: str, value) -> None:
    """Set ``field`` of the ``action`` (e.g. metaData, add) of version 0 to ``value``."""
    path = os.path.join(table_dir, "_delta_log", "00000000000000000000.json")
    with open(path) as f:
        actions = [json.loads(line) for line in f if line.strip()]
    for a in actions:
        if action in a:
            a[action][field] = value
    with open(path, "w") as f:
        f.write("".join(json.dumps(a) + "\n" for a in actions))


def test_garbage_schema_string_refuses_a_write(tmp_path):
    d = str(tmp_path / "t")
    DeltaTable(d).write(pa.table({"a": [1]}))
    _set_in_first_commit(d, "metaData", "schemaString", "{not json")
    before = _tree(d)
    with pytest.raises(CorruptLogError, match="schemaString is not valid JSON"):
        DeltaTable(d).write(pa.table({"a": [2]}))
    with pytest.raises(CorruptLogError, match="schemaString is not valid JSON"):
        txn = DeltaTable(d).transaction()
        txn.set_txn("app", 1)
        txn.commit()
    assert _tree(d) == before


def test_a_schema_string_nested_too_deep_is_corrupt_not_recursion_error(tmp_path):
    d = str(tmp_path / "t")
    DeltaTable(d).write(pa.table({"a": [1]}))
    _set_in_first_commit(d, "metaData", "schemaString", "[" * 100_000 + "]" * 100_000)
    before = _tree(d)
    with pytest.raises(CorruptLogError):
        DeltaTable(d).write(pa.table({"a": [2]}))
    assert _tree(d) == before


@pytest.mark.parametrize("make", [
    lambda p: DeltaTable(p).write(pa.table({"a": [1]})),
    lambda p: DeltaTable.create(p, pa.schema([("a", pa.int64())])),
    lambda p: DeltaTable(p + "/below").write(pa.table({"a": [1]})),
], ids=["write", "create", "write-below-a-file"])
def test_a_table_path_that_is_a_file_is_a_storage_error(tmp_path, make):
    f = tmp_path / "a-file"
    f.write_bytes(b"not a table")
    with pytest.raises(StorageError, match="a file is in the way"):
        make(str(f))
    assert sorted(os.listdir(tmp_path)) == ["a-file"] and f.read_bytes() == b"not a table"


def test_a_path_that_is_not_utf8_once_decoded_is_corrupt_in_row_reads(tmp_path):
    d = str(tmp_path / "t")
    DeltaTable(d).write(pa.table({"a": [1]}))
    log = os.path.join(d, "_delta_log", "00000000000000000000.json")
    with open(log) as f:
        add = next(json.loads(line)["add"] for line in f if '"add"' in line)
    # the data file really is there, under a byte name that is not UTF-8
    os.rename(os.path.join(d, add["path"]), os.path.join(d.encode(), b"f\xff.parquet"))
    _set_in_first_commit(d, "add", "path", "f%FF.parquet")
    before = _tree(d)
    snap = DeltaTable(d).snapshot()
    assert snap.files().num_rows == 1           # listing files still works
    with pytest.raises(CorruptLogError, match="not valid UTF-8"):
        snap.to_pyarrow()
    assert _tree(d) == before
