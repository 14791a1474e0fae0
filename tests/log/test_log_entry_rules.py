"""Writer rules of PROTOCOL.md "Additional Requirements for Writers" not shown elsewhere.

- "Data Files": data files are uniquely named and never overwritten;
- "Writer Requirements for Catalog-managed tables" (and Delta Spark on every table): the
  ``commitInfo`` of each commit carries a unique ``txnId``.
"""
from __future__ import annotations

import json

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _commit_info(path, version: int) -> dict:
    lines = (path / "_delta_log" / f"{version:020d}.json").read_text().splitlines()
    return next(json.loads(line)["commitInfo"] for line in lines if "commitInfo" in json.loads(line))


def test_data_files_are_uniquely_named_and_never_overwritten(tmp_path):
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    data = pa.table({"id": [1, 2], "p": ["a", "a"]}, schema=SCHEMA)
    table.write(data)
    first = {p: (tmp_path / "t" / p).read_bytes() for p in table.snapshot().files().column("path").to_pylist()}
    table.write(data)
    table.write(data, mode="overwrite")
    names = [p for v in range(1, 4) for p in DeltaTable(str(tmp_path / "t")).snapshot(version=v)
             .files().column("path").to_pylist()]
    assert len(set(names)) == 3                      # one file per write, three names
    assert all((tmp_path / "t" / p).read_bytes() == b for p, b in first.items())   # untouched


def test_every_commit_info_has_its_own_txn_id(tmp_path):
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    table.write(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA))
    ids = [_commit_info(tmp_path / "t", v).get("txnId") for v in (0, 1)]
    assert all(ids) and len(set(ids)) == 2
