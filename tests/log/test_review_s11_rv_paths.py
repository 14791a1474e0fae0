"""Review s11 (s11-paths, s11-lines), report-only: open findings as strict xfails.

A line holding two non-null file actions. Delta Spark reads a commit line into one ``SingleAction`` and
replays ``SingleAction.unwrap`` - the first non-null of add, remove, metaData, ... - so in
``{"add": {...}, "remove": {...}}`` (either key order) only the add counts; s11-lines' rule
(action_lines.action_kind) says the same and replay's slow path follows it. Replay's fast path (the Arrow
JSON reader with an add and a remove column) takes BOTH: the remove cancels a file Delta Spark keeps
live (rows lost on read), the file becomes a tombstone and vacuum deletes a file Delta Spark still reads.
Checked against Delta Spark 4.4 on the jars (standalone pyspark, conf from scripts/delta_spark.py):
such a line keeps the removed file live there.

Scheme-less paths with an empty authority ('///t/x', '////t/x'): Delta Spark 4.4 keys them 'file:///t/x' like
'/t/x' (checked on the jars for the keys, and by reading each table below with Delta Spark: the removes
cancel the live file - 0 rows - and the adds are the same logical file - rows 1, 2, 3 once).
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


@pytest.mark.parametrize("order", ["add-first", "remove-first"])
def test_a_line_with_an_add_and_a_remove_is_only_the_add(tmp_path, order):
    uri, keep, drop = _two_files_then_line(tmp_path, order)
    snap = DeltaTable(uri).snapshot()
    assert sorted(snap.files().column("path").to_pylist()) == sorted([keep, drop])
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2, 3, 4]


def test_vacuum_keeps_the_file_a_line_with_an_add_and_a_remove_leaves_live(tmp_path):
    uri, keep, drop = _two_files_then_line(tmp_path, "add-first")
    result = DeltaTable(uri).vacuum(retention_hours=0, dry_run=True, enforce_retention=False)
    assert drop not in result["files_deleted"]


def test_our_checkpoint_keeps_the_file_a_line_with_an_add_and_a_remove_leaves_live(tmp_path):
    import pyarrow.parquet as pq
    uri, keep, drop = _two_files_then_line(tmp_path, "add-first")
    DeltaTable(uri).checkpoint()
    rows = pq.read_table(os.path.join(uri, "_delta_log", f"{3:020d}.checkpoint.parquet"), columns=["add"])
    live = [a["path"] for a in rows.column("add").to_pylist() if a is not None]
    assert sorted(live) == sorted([keep, drop])


# ----------------------------------------------------------------------------- a remove by another spelling
def _respelled_table(tmp_path, live: str):
    """A table of one file of rows 1, 2, 3 that another writer re-spelled ``live`` (remove + add)."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA).write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    row = DeltaTable(uri).snapshot().files().to_pylist()[0]
    spelled = live.format(abs=os.path.join(uri, row["path"]), p=row["path"])
    with open(os.path.join(uri, "_delta_log", f"{2:020d}.json"), "w") as f:
        for line in [{"commitInfo": {"timestamp": 1, "operation": "WRITE"}},
                     {"remove": {"path": row["path"], "deletionTimestamp": 1, "dataChange": True}},
                     {"add": {"path": spelled, "partitionValues": {}, "size": row["size"],
                              "modificationTime": row["modification_time"], "dataChange": True}}]:
            f.write(json.dumps(line) + "\n")
    return uri, row


@pytest.mark.parametrize("live, remove", [("{abs}", "file://{abs}"), ("./{p}", "{p}"), ("{p}", "./{p}")])
def test_a_remove_spelled_with_the_live_files_key_is_accepted(tmp_path, live, remove):
    from airflow_provider_delta.log.base.path_spelling import canonical_log_path
    uri, row = _respelled_table(tmp_path, live)
    spelled = remove.format(abs=os.path.join(uri, row["path"]), p=row["path"])
    live_path = DeltaTable(uri).snapshot().files().column("path").to_pylist()[0]
    assert canonical_log_path(spelled) == canonical_log_path(live_path)   # one logical file
    with DeltaTable(uri).transaction() as txn:
        txn.remove_file(spelled)
    assert DeltaTable(uri).snapshot().to_pyarrow().num_rows == 0
    # the remove is written as the live add is keyed (its canonical key): every reader cancels the add by it
    with open(os.path.join(uri, "_delta_log", f"{3:020d}.json")) as f:
        removed = [json.loads(line)["remove"]["path"] for line in f if '"remove"' in line]
    assert [canonical_log_path(p) for p in removed] == [canonical_log_path(live_path)]


# ----------------------------------------------------------------------------- '///t/x': an empty authority
#: Delta Spark 4.4's key (DeltaLog.CanonicalPathFunction on the jars: new Path(new URI(p)), qualified with the
#: default file system when isAbsoluteAndSchemeAuthorityNull) of scheme-less absolute paths written with an
#: empty authority: Hadoop's Path drops it and the doubled slashes, so all are '/t/x', keyed 'file:///t/x'
EMPTY_AUTHORITY_KEYS = {"/t/x": "file:///t/x", "///t/x": "file:///t/x", "////t/x": "file:///t/x"}


def test_a_scheme_less_path_with_an_empty_authority_is_keyed_as_delta_spark():
    from airflow_provider_delta.log.base.path_spelling import canonical_log_path
    assert {p: canonical_log_path(p) for p in EMPTY_AUTHORITY_KEYS} == EMPTY_AUTHORITY_KEYS


def _absolute_then(tmp_path, first: str, second: str, kind: str) -> str:
    """Our table of rows 1, 2, 3, re-spelled by another writer as ``first`` (the absolute path, '{a}'), then
    another writer's commit of one ``kind`` action of ``second``."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA).write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    row = DeltaTable(uri).snapshot().files().to_pylist()[0]
    absolute = os.path.join(uri, row["path"])

    def action(kind, p):
        if kind == "add":
            return {"add": {"path": p, "partitionValues": {}, "size": row["size"],
                            "modificationTime": row["modification_time"], "dataChange": True}}
        return {"remove": {"path": p, "deletionTimestamp": int(time.time() * 1000), "dataChange": True}}
    for version, lines in ((2, [action("remove", row["path"]), action("add", first.format(a=absolute))]),
                           (3, [action(kind, second.format(a=absolute))])):
        with open(os.path.join(uri, "_delta_log", f"{version:020d}.json"), "w") as f:
            for line in [{"commitInfo": {"timestamp": 1, "operation": "WRITE"}}] + lines:
                f.write(json.dumps(line) + "\n")
    return uri


@pytest.mark.parametrize("first, second", [("{a}", "//{a}"), ("//{a}", "{a}"), ("{a}", "///{a}"),
                                           ("file://{a}", "//{a}")])
def test_a_remove_with_an_empty_authority_cancels_the_live_file(tmp_path, first, second):
    uri = _absolute_then(tmp_path, first, second, "remove")
    assert DeltaTable(uri).snapshot().to_pyarrow().num_rows == 0


@pytest.mark.parametrize("first, second", [("{a}", "///{a}"), ("//{a}", "file://{a}")])
def test_an_add_with_an_empty_authority_is_the_same_logical_file(tmp_path, first, second):
    uri = _absolute_then(tmp_path, first, second, "add")
    assert sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]


def test_a_checkpoint_row_with_an_add_and_a_remove_is_only_the_add(tmp_path):
    """Delta Spark replays a checkpoint's rows by ``SingleAction.unwrap`` too (Snapshot.stateReconstruction):
    a parquet checkpoint row holding an add of A and a remove of B is the add; B stays live, and a remove
    so held of a file no add names (C) is no tombstone."""
    import pyarrow.parquet as pq
    uri = str(tmp_path / "t")
    t = DeltaTable.create(uri, SCHEMA)
    t.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    t.write(pa.table({"id": [4]}, schema=SCHEMA))
    t.checkpoint()
    cp = os.path.join(uri, "_delta_log", f"{2:020d}.checkpoint.parquet")
    table = pq.read_table(cp)
    rows = table.to_pylist()
    adds = [i for i, r in enumerate(rows) if r["add"] is not None]
    keep, drop = rows[adds[0]]["add"], rows[adds[1]]["add"]
    rows[adds[0]]["remove"] = {"path": drop["path"], "deletionTimestamp": int(time.time() * 1000), "dataChange": True}
    rows[adds[1]]["remove"] = {"path": "gone.parquet", "deletionTimestamp": int(time.time() * 1000), "dataChange": True}
    pq.write_table(pa.Table.from_pylist(rows, schema=table.schema), cp)
    snap = DeltaTable(uri).snapshot()
    assert sorted(snap.files().column("path").to_pylist()) == sorted([keep["path"], drop["path"]])
    assert snap.tombstones().column("path").to_pylist() == []
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2, 3, 4]


def test_a_winning_commits_line_is_one_action_in_delta_sparks_order():
    """The conflict checker reads another writer's commit a line one action too (action_lines.action_kind):
    ``{"add": A, "remove": B}`` adds A and removes nothing; ``{"txn": ..., "metaData": ...}`` is the metaData
    (SingleAction.unwrap tries metaData before txn)."""
    from airflow_provider_delta.log.write.conflicts import WinningCommit
    from airflow_provider_delta.log.write.staged_rebase import read_set_of
    lines = [{"remove": {"path": "b"}, "add": {"path": "a"}},
             {"txn": {"appId": "app", "version": 1}, "metaData": {"id": "x"}}]
    w = WinningCommit.from_actions(5, lines)
    assert ([a["path"] for a in w.adds], w.removes, w.metadata, w.app_ids) == (["a"], [], {"id": "x"}, set())
    rs = read_set_of(lines)
    assert (rs.added_paths, rs.removed_paths, rs.changes_metadata, rs.read_app_ids) == ({"a"}, set(), True, set())
