"""Review s11 (s11-paths, s11-lines), report-only: open findings as strict xfails.

A line holding two non-null file actions. Delta Spark reads a commit line into one ``SingleAction`` and
replays ``SingleAction.unwrap`` - the first non-null of add, remove, metaData, ... - so in
``{"add": {...}, "remove": {...}}`` (either key order) only the add counts; s11-lines' rule
(action_lines.action_kind) says the same and replay's slow path follows it. Replay's fast path (the Arrow
JSON reader with an add and a remove column) takes BOTH: the remove cancels a file Delta Spark keeps
live (rows lost on read), the file becomes a tombstone and vacuum deletes a file Delta Spark still reads.
Checked against Delta Spark 4.4 on the jars (standalone pyspark, conf from scripts/delta_spark.py):
such a line keeps the removed file live there.
"""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

SCHEMA = pa.schema([("id", pa.int64())])


def _two_files_then_line(tmp_path, order: str):
    """A table of two files (rows 1, 2, 3 and row 4), then another writer's version 3 whose one file
    line holds an add re-adding the first file (its own size) and a remove of the second."""
    uri = str(tmp_path / "t")
    t = DeltaTable.create(uri, SCHEMA)
    t.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    t.write(pa.table({"id": [4]}, schema=SCHEMA))
    files = DeltaTable(uri).snapshot().files().select(["path", "size"]).to_pylist()
    keep, drop = files[0], files[1]
    add = json.dumps({"path": keep["path"], "partitionValues": {}, "size": keep["size"],
                      "modificationTime": int(time.time() * 1000), "dataChange": True})
    remove = json.dumps({"path": drop["path"], "deletionTimestamp": int(time.time() * 1000) - 3600_000,
                         "dataChange": True})
    line = '{"add": %s, "remove": %s}' % (add, remove) if order == "add-first" else \
        '{"remove": %s, "add": %s}' % (remove, add)
    with open(os.path.join(uri, "_delta_log", f"{3:020d}.json"), "w") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n" + line + "\n")
    return uri, keep["path"], drop["path"]


@pytest.mark.xfail(strict=True, reason="replay's fast path (Arrow reader, add and remove columns) takes both "
                   "actions of a line {add, remove}; Delta Spark (SingleAction.unwrap) and our own action_kind "
                   "take only the add, so the removed file stays live: we lose its rows")
@pytest.mark.parametrize("order", ["add-first", "remove-first"])
def test_a_line_with_an_add_and_a_remove_is_only_the_add(tmp_path, order):
    uri, keep, drop = _two_files_then_line(tmp_path, order)
    snap = DeltaTable(uri).snapshot()
    assert sorted(snap.files().column("path").to_pylist()) == sorted([keep, drop])
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2, 3, 4]


@pytest.mark.xfail(strict=True, reason="data loss: vacuum takes the remove of a line {add, remove} as a "
                   "tombstone and deletes the file, which Delta Spark (SingleAction.unwrap: the add only) "
                   "still holds live and reads")
def test_vacuum_keeps_the_file_a_line_with_an_add_and_a_remove_leaves_live(tmp_path):
    uri, keep, drop = _two_files_then_line(tmp_path, "add-first")
    result = DeltaTable(uri).vacuum(retention_hours=0, dry_run=True, enforce_retention=False)
    assert drop not in result["files_deleted"]
