"""The change data feed: ``DeltaTable.changes`` on the corpus, against deltalake, with ICT, and its errors.

Expected rows of the corpus tables are the upstream tests' (README section E10, E11);
tables deltalake writes with the feed on are compared with its ``load_cdf``; in-commit
timestamp tables get their commit files' mtimes changed so that only the ICT can be right.
"""
from __future__ import annotations

import json
import os
from datetime import date, datetime, timezone
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import (ChangeDataFeedNotEnabledError, DataFileNotFoundError, DeltaTable,
                                        InvalidArgumentError, TimestampOutOfRangeError, VersionNotFoundError)
from corpus_expected import commit_file, dir_state, epoch_ms, set_mtime

deltalake = pytest.importorskip("deltalake")

CDF = {"delta.enableChangeDataFeed": "true"}
META = ["_change_type", "_commit_version", "_commit_timestamp"]


def _rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in table.to_pylist())


def _set_commit_mtimes_from_commit_info(root: Path) -> dict[int, int]:
    """Git loses mtimes: give each commit file its commitInfo.timestamp (what the upstream tests saw)."""
    table = DeltaTable(str(root))
    out = {}
    for f in sorted((root / "_delta_log").glob("*.json")):
        v = int(f.name[:20])
        ts = next(a["commitInfo"]["timestamp"] for a in table.read_commit(v) if "commitInfo" in a)
        set_mtime(f, ts)
        out[v] = ts
    return out


def _ms(ts: datetime) -> int:
    return int(ts.timestamp() * 1000)


# ------------------------------------------------------------------------ corpus (E11)
BASIC_V0 = [(1, "Steve", date(2023, 12, 22)), (2, "Bob", date(2023, 12, 23)), (3, "Dave", date(2023, 12, 23)),
            (4, "Kate", date(2023, 12, 23)), (5, "Emily", date(2023, 12, 24)), (6, "Carl", date(2023, 12, 24)),
            (7, "Dennis", date(2023, 12, 24)), (8, "Claire", date(2023, 12, 25)), (9, "Ada", date(2023, 12, 25)),
            (10, "Borb", date(2023, 12, 25))]


def _basic_cdf_expected() -> list[tuple]:
    names = {i: n for i, n, _ in BASIC_V0}
    rows = [(i, n, d, "insert", 0) for i, n, d in BASIC_V0]
    for i in (2, 3, 4):
        rows += [(i, names[i], date(2023, 12, 23), "update_preimage", 1),
                 (i, names[i], date(2023, 12, 22), "update_postimage", 1)]
    for i in (5, 6, 7):
        rows += [(i, names[i], date(2023, 12, 24), "update_preimage", 2),
                 (i, names[i], date(2023, 12, 29), "update_postimage", 2)]
    rows.append((7, "Dennis", date(2023, 12, 29), "delete", 3))
    return sorted(rows)


@pytest.mark.parametrize("name", ["delta-kernel-rs/cdf-table", "delta-rs/cdf-table"])
def test_basic_cdf_rows(corpus, name):
    changes = DeltaTable(str(corpus / name)).changes(0)
    assert changes.schema.names == ["id", "name", "birthday"] + META
    assert changes.schema.field("_commit_version").type == pa.int64()
    assert changes.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    assert _rows(changes, ["id", "name", "birthday", "_change_type", "_commit_version"]) == _basic_cdf_expected()


def test_partitioned_update_ops_and_data_change(corpus):
    part = DeltaTable(str(corpus / "delta-kernel-rs/cdf-table-partitioned")).changes(0, 2)
    assert _rows(part, ["id", "text", "part", "_change_type", "_commit_version"]) == sorted(
        [(i, "old", i % 2, "insert", 0) for i in range(6)]
        + [(3, "old", 1, "delete", 1), (1, "old", 1, "update_preimage", 1), (1, "new", 1, "update_postimage", 1)]
        + [(i, "old", 0, "delete", 2) for i in (0, 2, 4)])
    ops = DeltaTable(str(corpus / "delta-kernel-rs/cdf-table-update-ops")).changes(0, 2)
    assert _rows(ops, ["id", "_change_type", "_commit_version"]) == sorted(
        [(i, "insert", 0) for i in range(10)] + [(i, "update_pre", 1) for i in range(20, 25)]
        + [(i, "update_post", 2) for i in range(30, 35)])
    # a dataChange=false commit (a rewrite) changes no rows
    dc = DeltaTable(str(corpus / "delta-kernel-rs/cdf-table-data-change")).changes(0, 1)
    assert _rows(dc, ["id", "_change_type", "_commit_version"]) == [(i, "insert", 0) for i in range(10)]


def test_non_partitioned_last_commit_and_columns(corpus):
    t = DeltaTable(str(corpus / "delta-kernel-rs/cdf-table-non-partitioned"))
    v4 = t.changes(4, 4, columns=["name", "id", "_change_type"])
    assert v4.schema.names == ["name", "id", "_change_type"]
    assert _rows(v4, ["id", "name", "_change_type"]) == [(1, "Alex", "insert"), (2, "Alan", "insert")]
    v3 = t.changes(3, 3, columns=["id", "_commit_version"])
    assert v3.to_pylist() == [{"id": 7, "_commit_version": 3}]
    with pytest.raises(InvalidArgumentError, match="nope"):
        t.changes(0, columns=["id", "nope"])


def test_dat_cdf_table(corpus):
    """DAT's cdf table: v1 inserts in files, v2 deletes them through a cdc file."""
    changes = DeltaTable(str(corpus / "dat/cdf/delta")).changes(0)
    inserted = _rows(changes.filter(pa.compute.equal(changes.column("_commit_version"), 1)), ["letter", "int"])
    deleted = _rows(changes.filter(pa.compute.equal(changes.column("_change_type"), "delete")), ["letter", "int"])
    assert len(inserted) == 5 and len(deleted) == 4 and set(deleted) < set(inserted)
    latest = DeltaTable(str(corpus / "dat/cdf/delta")).snapshot().to_pyarrow()
    assert set(_rows(latest, ["letter", "int"])) == set(inserted) - set(deleted)


@pytest.mark.parametrize("mode", ["id-mode", "name-mode", "name-mode-3-7"])
def test_column_mapping_tables(corpus, mode):
    """Column mapping: cdc files and data files hold physical names; the feed has logical ones.
    The feed is enabled at version 1, so a range from 0 is refused naming version 0."""
    t = DeltaTable(str(corpus / f"delta-kernel-rs/cdf-column-mapping-{mode}"))
    with pytest.raises(ChangeDataFeedNotEnabledError) as ei:
        t.changes(0)
    assert ei.value.version == 0
    changes = t.changes(1)
    assert changes.schema.names == ["id", "name", "value"] + META
    got = _rows(changes, ["id", "name", "value", "_change_type", "_commit_version"])
    before = {r["id"]: r for r in t.snapshot(version=1).to_pyarrow().to_pylist()}
    after = {r["id"]: r for r in t.snapshot().to_pyarrow().to_pylist()}
    # the feed explains the difference between the two snapshots, row for row
    assert {(i, "delete") for i in before.keys() - after.keys()} == {(r[0], r[3]) for r in got if r[3] == "delete"}
    assert {(i, "insert") for i in after.keys() - before.keys()} == {(r[0], r[3]) for r in got if r[3] == "insert"}
    updated = [r for r in got if r[3] == "update_postimage"]
    assert len(updated) == 1 and after[updated[0][0]]["value"] == updated[0][2]


def test_deletion_vector_pairs(corpus):
    """kernel's cdf_with_deletion_vector: a file removed and added back with another DV changes
    exactly the rows in one DV and not the other (v1 remove 0, 9; v2 restore them; v3 remove
    0, 1, 4, 5; v4 restore 1, 4)."""
    t = DeltaTable(str(corpus / "delta-kernel-rs/cdf-table-with-dv"))
    got = _rows(t.changes(0, 4), ["value", "_change_type", "_commit_version"])
    assert got == sorted([(i, "insert", 0) for i in range(10)] + [(0, "delete", 1), (9, "delete", 1)]
                         + [(0, "insert", 2), (9, "insert", 2)] + [(i, "delete", 3) for i in (0, 1, 4, 5)]
                         + [(1, "insert", 4), (4, "insert", 4)])


def test_feed_with_cdc_files_and_dvs_replays_to_the_table(corpus):
    """Delta Spark's cdf-table-with-cdc-and-dvs (DV deletes, updates, merges, a restore): adding
    inserts and postimages and taking away deletes and preimages gives the latest table."""
    from collections import Counter
    t = DeltaTable(str(corpus / "delta-kernel-rs/cdf-table-with-cdc-and-dvs"))
    net: Counter = Counter()
    for r in t.changes(0).to_pylist():
        sign = 1 if r["_change_type"] in ("insert", "update_postimage") else -1
        net[(r["id"], r["comment"])] += sign
    assert all(n >= 0 for n in net.values())
    assert +net == Counter((r["id"], r["comment"]) for r in t.snapshot().to_pyarrow().to_pylist())
    assert {r["id"] for r in t.snapshot().to_pyarrow().to_pylist()} == {0, 1, 2, 10, 12}


def test_timestamp_bounds(copy_table):
    """delta-rs test_load_local_datetime: end at v1's time gives v0 and v1 only; bounds as ISO, datetime, ms."""
    root = copy_table("delta-rs/cdf-table")
    ts = _set_commit_mtimes_from_commit_info(root)
    t = DeltaTable(str(root))
    upto_v1 = t.changes(0, "2023-12-22T17:10:21.675Z")
    assert sorted(set(upto_v1.column("_commit_version").to_pylist())) == [0, 1]
    assert t.changes(0, end_timestamp=ts[1]).num_rows == upto_v1.num_rows == 16
    # a start time between commits starts at the next commit; exactly on a commit starts there
    between = datetime.fromtimestamp((ts[1] + 1) / 1000, tz=timezone.utc)
    assert sorted(set(t.changes(between).column("_commit_version").to_pylist())) == [2, 3]
    assert sorted(set(t.changes(start_timestamp=ts[2]).column("_commit_version").to_pylist())) == [2, 3]
    stamps = {r["_commit_version"]: _ms(r["_commit_timestamp"]) for r in t.changes(0).to_pylist()}
    assert stamps == ts
    with pytest.raises(TimestampOutOfRangeError, match="after the latest commit"):
        t.changes(start_timestamp=ts[3] + 1000)


def test_checkpoint_cdf_table_after_cleanup(copy_table):
    """delta-rs test_load_vacuumed_table: commits 0-2 are gone; a start before them starts at 3."""
    root = copy_table("delta-rs/checkpoint-cdf-table")
    _set_commit_mtimes_from_commit_info(root)
    t = DeltaTable(str(root))
    changes = t.changes("2024-01-06T15:44:59.570Z")
    # v5 (upstream: "update pre/post for 11-15") shifted each id up by one
    assert _rows(changes, ["id", "_change_type", "_commit_version"]) == sorted(
        [(7, "delete", 3)] + [(i, "insert", 4) for i in range(11, 15)]
        + [(i, "update_preimage", 5) for i in range(11, 15)] + [(i, "update_postimage", 5) for i in range(12, 16)])
    stamps = {r["_commit_version"]: _ms(r["_commit_timestamp"]) for r in changes.to_pylist()}
    assert stamps == {3: epoch_ms("2024-01-06T16:44:59.570Z"), 4: epoch_ms("2025-01-06T16:33:18.167Z"),
                      5: epoch_ms("2025-01-06T16:38:19.623Z")}
    with pytest.raises(VersionNotFoundError, match=r"version\(s\) \[0, 1, 2\] are gone") as ei:
        t.changes(0)
    assert ei.value.version == 0


def test_ict_table_uses_in_commit_timestamps(copy_table):
    """E10: delta-rs cdc_ict_table, with mtimes set far away so only the ICTs can give the answer."""
    root = copy_table("delta-rs/cdc_ict_table")
    for f in (root / "_delta_log").glob("*.json"):
        set_mtime(f, epoch_ms("2001-01-01T00:00:00Z"))
    changes = DeltaTable(str(root)).changes("2026-07-11T16:36:53.881")
    got = [(r["name"], r["age"], r["_change_type"], r["_commit_version"], _ms(r["_commit_timestamp"]))
           for r in changes.to_pylist()]
    v2, v3 = epoch_ms("2026-07-12T16:36:52.175Z"), epoch_ms("2026-07-12T16:36:53.881Z")
    assert sorted(got) == sorted([("Dan", 14, "delete", 2, v2), ("Dave", 22, "delete", 2, v2),
                                  ("Kate", 36, "update_preimage", 3, v3), ("Kate", 37, "update_postimage", 3, v3),
                                  ("Steve", 40, "update_preimage", 3, v3), ("Steve", 41, "update_postimage", 3, v3)])


# ------------------------------------------------------------------ our ICT tables
SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])


def _data(ids, tag="a") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "v": [f"{tag}{i}" for i in ids]})


def test_commit_timestamp_is_ict_where_enabled_else_monotonized_mtime(tmp_path):
    """Versions before ICT enablement take their file time (monotonized), later ones their ICT,
    whatever the commit files' mtimes say after os.utime."""
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=CDF)            # v0
    t.write(_data([1, 2]))                                                         # v1: mtime
    clock = iter(range(1_700_000_000_000, 1_700_000_100_000, 1000))
    t.enable_in_commit_timestamps(clock=lambda: next(clock))                       # v2: ICT from here
    t.write(_data([3]), clock=lambda: next(clock))                                 # v3
    t.write(_data([9], "b"), mode="overwrite", clock=lambda: next(clock))          # v4: deletes 1, 2, 3
    root = tmp_path / "t"
    # scramble the file times: v1 gets a time *before* v0's, so monotonization must lift it
    set_mtime(commit_file(root, 0), 1_500_000_000_000)
    set_mtime(commit_file(root, 1), 1_400_000_000_000)
    for v in (2, 3, 4):
        set_mtime(commit_file(root, v), 1_000_000_000_000 + v)
    ict = {v: t.read_commit(v)[0]["commitInfo"]["inCommitTimestamp"] for v in (2, 3, 4)}
    changes = DeltaTable(str(root)).changes(1)
    stamps = {r["_commit_version"]: _ms(r["_commit_timestamp"]) for r in changes.to_pylist()}
    assert stamps == {1: 1_500_000_000_001, 3: ict[3], 4: ict[4]}
    assert _rows(changes, ["id", "_change_type", "_commit_version"]) == [
        (1, "delete", 4), (1, "insert", 1), (2, "delete", 4), (2, "insert", 1), (3, "delete", 4),
        (3, "insert", 3), (9, "insert", 4)]


# --------------------------------------------------------------------- vs deltalake
@pytest.fixture
def deltalake_table(tmp_path) -> str:
    """A table deltalake writes with the feed on: create, append, delete, update, merge."""
    from deltalake import DeltaTable as DL, write_deltalake
    p = str(tmp_path / "dl")
    data = pa.table({"id": pa.array([1, 2, 3, 4, 5, 6], pa.int64()), "v": list("abcdef"),
                     "part": ["x", "x", "y", "y", "x", "y"]})
    write_deltalake(p, data, partition_by=["part"], configuration=CDF)                     # v0
    write_deltalake(p, pa.table({"id": pa.array([7, 8], pa.int64()), "v": ["g", "h"], "part": ["x", "y"]}),
                    mode="append")                                                         # v1
    DL(p).delete("id = 2 OR id = 8")                                                       # v2
    DL(p).update(updates={"v": "'zz'"}, predicate="id >= 3 AND id <= 5")                   # v3
    src = pa.table({"id": pa.array([4, 10], pa.int64()), "v": ["D", "j"], "part": ["y", "x"]})
    (DL(p).merge(src, predicate="t.id = s.id", source_alias="s", target_alias="t")
     .when_matched_update_all().when_not_matched_insert_all().execute())                  # v4
    DL(p).delete("part = 'x'")                                                             # v5: whole files
    return p


def test_equals_deltalake_load_cdf(deltalake_table):
    from deltalake import DeltaTable as DL
    cols = ["id", "v", "part", "_change_type", "_commit_version"]
    for start, end in ((0, None), (0, 0), (2, 3), (3, 5), (5, 5)):
        ref = pa.table(DL(deltalake_table).load_cdf(starting_version=start, ending_version=end).read_all())
        ref = ref.select(cols).cast(pa.schema([("id", pa.int64()), ("v", pa.string()), ("part", pa.string()),
                                               ("_change_type", pa.string()), ("_commit_version", pa.int64())]))
        ours = DeltaTable(deltalake_table).changes(start, end)
        assert _rows(ours, cols) == _rows(ref, cols), (start, end)
        assert ours.num_rows > 0
    # every change type occurs, and each commit's timestamp is its file's (monotonized) mtime
    ours = DeltaTable(deltalake_table).changes(0)
    assert set(ours.column("_change_type").to_pylist()) == {"insert", "delete", "update_preimage",
                                                             "update_postimage"}
    snap = DeltaTable(deltalake_table).snapshot()
    for r in ours.to_pylist():
        assert _ms(r["_commit_timestamp"]) == snap.commit_timestamp(r["_commit_version"])


def test_changes_since(deltalake_table):
    t = DeltaTable(deltalake_table)
    assert _rows(t.changes_since(2), META[:2]) == _rows(t.changes(3), META[:2])
    assert _rows(t.changes_since(None, 1), META[:2]) == _rows(t.changes(0, 1), META[:2])
    empty = t.changes_since(5)
    assert empty.num_rows == 0 and empty.schema == t.changes(5).schema
    with pytest.raises(InvalidArgumentError):
        t.changes_since(-2)


# ------------------------------------------------------------------------- errors
def test_feed_not_enabled_names_the_version(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)            # v0: no feed
    t.write(_data([1]))                                           # v1: no feed
    with t.transaction(operation="SET TBLPROPERTIES") as txn:     # v2: feed on from here
        txn.set_metadata(t.snapshot().metadata.with_configuration(CDF))
    t.write(_data([2]))                                           # v3
    with pytest.raises(ChangeDataFeedNotEnabledError, match="version 1") as ei:
        t.changes(1, 3)
    assert ei.value.version == 1
    assert _rows(t.changes(2), ["id", "_change_type", "_commit_version"]) == [(2, "insert", 3)]
    with t.transaction(operation="SET TBLPROPERTIES") as txn:     # v4: feed off again
        txn.set_metadata(t.snapshot().metadata.with_configuration({"delta.enableChangeDataFeed": "false"}))
    t.write(_data([3]))                                           # v5
    with pytest.raises(ChangeDataFeedNotEnabledError) as ei:
        t.changes(3)
    assert ei.value.version == 4


def test_vacuumed_files_are_named_and_nothing_changes(copy_table):
    root = copy_table("delta-kernel-rs/cdf-table-simple")
    t = DeltaTable(str(root))
    gone = unquote(next(a["cdc"]["path"] for a in t.read_commit(2) if "cdc" in a))  # a change data file
    os.remove(root / gone)
    before = dir_state(root)
    with pytest.raises(DataFileNotFoundError, match="version 2") as ei:
        t.changes(0)
    assert ei.value.path == gone and gone in str(ei.value)
    assert t.changes(0, 1).num_rows == 20          # the range before the vacuumed file still reads
    assert dir_state(root) == before


def test_bad_bounds(copy_table, corpus):
    t = DeltaTable(str(corpus / "delta-kernel-rs/cdf-table-simple"))
    with pytest.raises(InvalidArgumentError):
        t.changes(-1)
    with pytest.raises(InvalidArgumentError):
        t.changes("not a time")
    with pytest.raises(InvalidArgumentError, match="not both"):
        t.changes(0, 1, end_timestamp=0)
    with pytest.raises(VersionNotFoundError):
        t.changes(0, 99)


def test_cdc_files_read_with_the_written_change_types(tmp_path):
    """A cdc file's own _change_type column is what a commit with cdc files reports (not its adds)."""
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=CDF)
    t.write(_data([1, 2, 3]))
    root = tmp_path / "t"
    (root / "_change_data").mkdir()
    cdc = pa.table({"id": pa.array([2, 2], pa.int64()), "v": ["a2", "new"],
                    "_change_type": ["update_preimage", "update_postimage"]})
    pq.write_table(cdc, root / "_change_data" / "cdc-1.parquet")
    # the commit another engine writes for an UPDATE with the feed on: the rewritten file and its cdc file
    pq.write_table(_data([1, 3]).append_column("_x", pa.nulls(2)).drop(["_x"]), root / "rewritten.parquet")
    commit = [{"commitInfo": {"operation": "UPDATE", "timestamp": 1}},
              {"remove": {"path": t.snapshot().files().column("path")[0].as_py(), "dataChange": True,
                          "deletionTimestamp": 1, "partitionValues": {}}},
              {"add": {"path": "rewritten.parquet", "partitionValues": {}, "dataChange": True,
                       "size": os.path.getsize(root / "rewritten.parquet"), "modificationTime": 1}},
              {"cdc": {"path": "_change_data/cdc-1.parquet", "partitionValues": {}, "dataChange": False,
                       "size": os.path.getsize(root / "_change_data" / "cdc-1.parquet")}}]
    commit_file(root, 2).write_text("\n".join(json.dumps(a) for a in commit) + "\n")
    assert _rows(t.changes(2), ["id", "v", "_change_type"]) == [(2, "a2", "update_preimage"),
                                                                (2, "new", "update_postimage")]
    assert _rows(t.snapshot().to_pyarrow(), ["id"]) == [(1,), (3,)]
