"""OPTIMIZE in the log layer: compaction, Z-order, deletion-vector purge, the commit, bad input, conflicts.

Real tables on disk; deltalake (delta-rs) reads every result as a second opinion. The
interop suite (tests/interop/test_optimize_spark.py) does the same against Delta Spark.
"""
from __future__ import annotations

import json
import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable

from airflow_provider_delta.log import (ConcurrentModificationError, DeltaTable, InvalidArgumentError, MetadataChangedError,
                                        UnsupportedFeatureError, commit_optimize, plan_optimize, rewrite_bin)
from airflow_provider_delta.log.base.schema import field_metadata
from airflow_provider_delta.log.base.stats import collect_stats
from airflow_provider_delta.log.write.optimize_rewrite import probe_positions

KEY = [("p", "ascending"), ("id", "ascending")]


def _rows(table_or_path, version=None) -> pa.Table:
    t = DeltaTable(str(table_or_path)) if not isinstance(table_or_path, DeltaTable) else table_or_path
    return t.snapshot(version=version).to_pyarrow().sort_by(KEY)


def _rs_rows(path, version=None) -> pa.Table:
    rs = RsTable(str(path), version=version)
    return rs.to_pyarrow_table().select(["p", "id", "x", "s"]).sort_by(KEY)


def _small_files_table(path, appends=8, rows=50, partitions=("a", "b"), properties=None) -> DeltaTable:
    rng = np.random.default_rng(7)
    table = None
    for i in range(appends):
        n = rows * len(partitions)
        data = pa.table({"p": pa.array([partitions[j % len(partitions)] for j in range(n)]),
                         "id": pa.array(range(i * n, (i + 1) * n), pa.int64()),
                         "x": rng.random(n), "s": pa.array([f"v{rng.integers(1000):04d}" for _ in range(n)])})
        if table is None:
            table = DeltaTable(str(path))
            table.write(data, partition_by=["p"], properties=properties)
        else:
            table.write(data)
    return table


def _log_actions(table: DeltaTable, version: int) -> list[dict]:
    return table.read_commit(version)


def test_compaction_rewrites_small_files_per_partition_with_spark_commit_info(tmp_path):
    table = _small_files_table(tmp_path / "t")
    before = _rows(table)
    v_before = table.latest_version()
    assert table.snapshot().files().num_rows == 16
    m = table.optimize(target_size="10mb")
    assert m["version"] == v_before + 1
    assert (m["numFilesRemoved"], m["numFilesAdded"], m["partitionsOptimized"]) == (16, 2, 2)
    files = table.snapshot().files()
    assert files.num_rows == 2
    assert _rows(table).equals(before)
    assert _rs_rows(tmp_path / "t").equals(before.select(["p", "id", "x", "s"]))
    actions = _log_actions(table, m["version"])
    info = actions[0]["commitInfo"]
    assert info["operation"] == "OPTIMIZE"
    assert info["operationParameters"] == {"predicate": "[]", "zOrderBy": "[]", "clusterBy": "[]", "auto": False}
    assert info["isolationLevel"] == "SnapshotIsolation" and info["isBlindAppend"] is False
    metrics = info["operationMetrics"]
    assert set(metrics) == {"numAddedFiles", "numRemovedFiles", "numAddedBytes", "numRemovedBytes", "minFileSize",
                            "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize", "numDeletionVectorsRemoved"}
    sizes = sorted(files.column("size").to_pylist())
    assert metrics["numAddedFiles"] == "2" and metrics["numRemovedFiles"] == "16"
    assert metrics["numAddedBytes"] == str(sum(sizes)) and metrics["minFileSize"] == str(sizes[0])
    assert metrics["maxFileSize"] == str(sizes[-1]) and metrics["numDeletionVectorsRemoved"] == "0"
    file_actions = [a for a in actions if "add" in a or "remove" in a]
    assert len(file_actions) == 18
    assert all(next(iter(a.values()))["dataChange"] is False for a in file_actions)
    # statistics of the new files: what collect_stats says of the rows each holds
    snap = table.snapshot()
    for row in snap.files().to_pylist():
        data = pq.read_table(os.path.join(str(tmp_path / "t"), row["path"]))
        assert json.loads(row["stats"]) == json.loads(collect_stats(data, snap.configuration))
        assert row["path"].startswith(f"p={dict(row['partition_values'])['p']}/part-")
    # nothing left to do: no commit
    again = table.optimize(target_size="10mb")
    assert again["version"] is None and again["numFilesRemoved"] == 0
    assert table.latest_version() == m["version"]


def test_bins_respect_target_and_min_file_size(tmp_path):
    table = _small_files_table(tmp_path / "t", appends=10, partitions=("a",))
    sizes = table.snapshot().files().column("size").to_pylist()
    one = max(sizes)
    # bins hold at most target_size bytes of input: about three files each
    m = table.optimize(target_size=3 * one + 1)
    # three bins of three; the tenth file alone in its bin is left as it is (Delta Spark's rule)
    assert m["numFilesRemoved"] == 9 and m["numFilesAdded"] == 3 and m["numBins"] == 3
    # files at or above min_file_size are left alone
    table2 = _small_files_table(tmp_path / "t2", appends=6, partitions=("a",))
    m2 = table2.optimize(target_size="1gb", min_file_size=1)
    assert m2["version"] is None and m2["totalConsideredFiles"] == 6


def test_partition_filter_limits_the_rewrite(tmp_path):
    table = _small_files_table(tmp_path / "t")
    before = _rows(table)
    m = table.optimize(partition_filter=[("p", "=", "a")], target_size="10mb")
    assert m["numFilesRemoved"] == 8 and m["partitionsOptimized"] == 1
    parts = table.snapshot().files().column("partition_values").to_pylist()
    assert sorted(dict(p)["p"] for p in parts).count("b") == 8
    assert _rows(table).equals(before)
    info = table.history(1)[0]
    assert json.loads(info["operationParameters"]["predicate"]) == ["('p = a)"]  # Delta Spark's text (simpleString)


@pytest.mark.parametrize("kwargs, match", [
    ({"partition_filter": [("x", ">", 0.5)]}, "only name partition columns"),
    ({"z_order_by": ["p"]}, "partition column"),
    ({"z_order_by": ["nope"]}, "not in the table schema"),
    ({"z_order_by": ["x", "x"]}, "twice"),
    ({"target_size": 0}, "positive"),
    ({"target_size": "lots"}, "size in bytes"),
    ({"min_file_size": -5}, "positive"),
    ({"max_concurrent": 0}, "positive integer"),
    ({"engine": "duckdb"}, "engine must be"),
    ({"engine": "spark"}, "SparkSession"),
    ({"max_deleted_rows_ratio": 2}, r"\[0, 1\]"),
    ({"purge": True, "z_order_by": ["x"]}, "cannot be combined"),
])
def test_bad_arguments_are_typed_errors_and_change_nothing(tmp_path, kwargs, match):
    table = _small_files_table(tmp_path / "t", appends=3)
    version = table.latest_version()
    listing = sorted(os.listdir(tmp_path / "t" / "p=a"))
    with pytest.raises(InvalidArgumentError, match=match):
        table.optimize(**kwargs)
    assert table.latest_version() == version
    assert sorted(os.listdir(tmp_path / "t" / "p=a")) == listing


def test_target_size_from_the_table_property(tmp_path):
    table = _small_files_table(tmp_path / "t", appends=10, partitions=("a",))
    one = max(table.snapshot().files().column("size").to_pylist())
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.targetFileSize": str(2 * one + 1)})
    m = table.optimize()
    assert m["numFilesAdded"] == 5          # two files per bin


def test_change_data_feed_shows_nothing_for_optimize(tmp_path):
    table = _small_files_table(tmp_path / "t", appends=3, properties={"delta.enableChangeDataFeed": "true"})
    m = table.optimize(target_size="10mb")
    assert m["version"] is not None
    assert table.changes(m["version"], m["version"]).num_rows == 0
    assert table.changes(0).num_rows == _rows(table).num_rows     # only the inserts


def test_zorder_rewrites_every_file_of_a_partition_into_curve_ordered_files(tmp_path):
    table = _small_files_table(tmp_path / "t", appends=12, rows=400)
    before = _rows(table)
    total = sum(table.snapshot().files().column("size").to_pylist())
    target = total // 2 // 4             # about four output files per partition: the spill path
    m = table.optimize(z_order_by=["x", "s"], target_size=target)
    assert m["numFilesRemoved"] == 24 and m["numFilesAdded"] >= 6
    assert _rows(table).equals(before)
    assert _rs_rows(tmp_path / "t").equals(before.select(["p", "id", "x", "s"]))
    info = table.history(1)[0]
    assert info["operationParameters"]["zOrderBy"] == '["x","s"]' or \
        json.loads(info["operationParameters"]["zOrderBy"]) == ["x", "s"]
    # each new file covers a part of the x range, not all of it (a plain compaction would)
    snap = table.snapshot()
    widths = [json.loads(s)["maxValues"]["x"] - json.loads(s)["minValues"]["x"]
              for s in snap.files().column("stats").to_pylist()]
    assert max(widths) < 0.9
    # Z-order again: one bin per partition, all files rewritten again (as Delta Spark does)
    m2 = table.optimize(z_order_by="x", target_size=target)
    assert m2["numFilesRemoved"] == snap.files().num_rows
    assert _rows(table).equals(before)


def test_zorder_with_nulls_strings_and_timestamps(tmp_path):
    n = 3000
    rng = np.random.default_rng(3)
    data = pa.table({"id": pa.array(range(n), pa.int64()),
                     "ts": pa.array([None if i % 17 == 0 else 1_700_000_000_000_000 + int(v) for i, v in
                                     enumerate(rng.integers(0, 10**12, n))], pa.timestamp("us", "UTC")),
                     "name": pa.array([None if i % 11 == 0 else f"n{int(v)}" for i, v in
                                       enumerate(rng.integers(0, 10**6, n))]),
                     "f": pa.array([float("nan") if i % 13 == 0 else float(v) for i, v in enumerate(rng.random(n))])})
    table = DeltaTable(str(tmp_path / "t"))
    for k in range(6):
        table.write(data.slice(k * 500, 500))
    before = table.snapshot().to_pyarrow().sort_by("id")
    total = sum(table.snapshot().files().column("size").to_pylist())
    m = table.optimize(z_order_by=["ts", "name", "f"], target_size=total // 3)
    assert m["numFilesAdded"] >= 2
    assert _same_with_nan(table.snapshot().to_pyarrow().sort_by("id"), before)


def _same_with_nan(a: pa.Table, b: pa.Table) -> bool:
    def norm(rows):
        return [{k: ("nan" if isinstance(v, float) and v != v else v) for k, v in r.items()} for r in rows]
    return norm(a.to_pylist()) == norm(b.to_pylist())


# ----------------------------------------------------------------- deletion vectors
def test_purge_rewrites_files_with_deletion_vectors_without_their_deleted_rows(copy_table):
    path = copy_table("delta-golden/dv-partitioned-with-checkpoint")
    table = DeltaTable(str(path))
    rows_before = table.snapshot().to_pyarrow()
    files = table.snapshot().files()
    with_dv = sum(1 for d in files.column("deletion_vector").to_pylist() if d)
    assert with_dv > 0
    m = table.optimize(purge=True)
    assert m["operation"] == "REORG" and m["numDeletionVectorsRemoved"] == with_dv
    assert m["numDeletionVectorRowsRemoved"] > 0
    after = table.snapshot()
    assert not any(after.files().column("deletion_vector").to_pylist())
    cols = rows_before.column_names
    assert after.to_pyarrow().sort_by([(c, "ascending") for c in cols]).equals(
        rows_before.sort_by([(c, "ascending") for c in cols]))
    info = table.history(1)[0]
    assert info["operation"] == "REORG"
    assert info["operationParameters"] == {"predicate": "[]", "applyPurge": True}
    assert info["operationMetrics"]["numDeletionVectorsRemoved"] == str(with_dv)
    removes = [a["remove"] for a in table.read_commit(m["version"]) if "remove" in a]
    assert all(r["dataChange"] is False for r in removes) and all(r.get("deletionVector") for r in removes)


def test_compaction_takes_files_with_many_deleted_rows(copy_table):
    path = copy_table("delta-kernel-rs/table-with-dv-small")
    table = DeltaTable(str(path))
    rows_before = sorted(table.snapshot().to_pyarrow().column("value").to_pylist())
    # one big-enough file: not small, but 2 of its 10 rows are deleted (> 5%)
    m = table.optimize(min_file_size=1)
    assert m["numFilesRemoved"] == 1 and m["numDeletionVectorsRemoved"] == 1
    assert sorted(table.snapshot().to_pyarrow().column("value").to_pylist()) == rows_before
    stats = json.loads(table.snapshot().files().column("stats")[0].as_py())
    assert stats["numRecords"] == len(rows_before)


# --------------------------------------------------------------------- concurrency
def test_appends_during_optimize_commit_and_stay(tmp_path):
    table = _small_files_table(tmp_path / "t", appends=4)
    plan = plan_optimize(table, target_size="10mb")
    written: list[str] = []
    results = [rewrite_bin(plan.snapshot, b, plan.settings, written) for b in plan.bins]
    # two other writers append while the new files are being written
    extra = pa.table({"p": ["a", "b"], "id": pa.array([10_000, 10_001], pa.int64()), "x": [0.5, 0.5],
                      "s": ["z", "z"]})
    table.write(extra)
    DeltaTable(str(tmp_path / "t")).write(extra.set_column(1, "id", pa.array([10_002, 10_003], pa.int64())))
    m = commit_optimize(table, plan, results, written)
    assert m["version"] == plan.snapshot.version + 3
    ids = _rows(table).column("id").to_pylist()
    assert len(ids) == len(set(ids)) == 4 * 100 + 4
    assert {10_000, 10_001, 10_002, 10_003} <= set(ids)
    assert _rs_rows(tmp_path / "t").num_rows == len(ids)


def test_a_concurrent_delete_of_a_compacted_file_conflicts_and_resurrects_nothing(tmp_path):
    table = _small_files_table(tmp_path / "t", appends=4)
    plan = plan_optimize(table, target_size="10mb")
    written: list[str] = []
    results = [rewrite_bin(plan.snapshot, b, plan.settings, written) for b in plan.bins]
    victim = plan.bins[0].files[0]["path"]
    with table.transaction(operation="DELETE") as txn:
        txn.read_files()
        txn.remove_file(victim)
    expected = _rows(table)
    with pytest.raises(ConcurrentModificationError, match="ConcurrentDeleteDeleteException"):
        commit_optimize(table, plan, results, written)
    assert _rows(table).equals(expected)       # the deleted rows did not come back
    assert all(not os.path.exists(os.path.join(str(tmp_path / "t"), p)) for p in written)   # new files gone
    # a fresh OPTIMIZE then succeeds
    assert table.optimize(target_size="10mb")["version"] is not None
    assert _rows(table).equals(expected)


def test_a_concurrent_optimize_of_the_same_files_conflicts(tmp_path):
    table = _small_files_table(tmp_path / "t", appends=4)
    plan = plan_optimize(table, target_size="10mb")
    written: list[str] = []
    results = [rewrite_bin(plan.snapshot, b, plan.settings, written) for b in plan.bins]
    DeltaTable(str(tmp_path / "t")).optimize(target_size="10mb")
    expected = _rows(table)
    with pytest.raises(ConcurrentModificationError):
        commit_optimize(table, plan, results, written)
    assert _rows(table).equals(expected)


def _set_properties(uri, props):
    with DeltaTable(uri).transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties(props)


def test_a_concurrent_metadata_change_conflicts_unless_delta_spark_resolves_it(tmp_path):
    """Delta Spark's ConflictChecker (attemptToResolveMetadataConflicts, on by default): a winner's metadata
    change fails any transaction, OPTIMIZE included, unless it only sets properties on its allow list
    (e.g. turning deletion vectors on where the protocol supports them); then OPTIMIZE commits."""
    uri = str(tmp_path / "t")
    table = _small_files_table(tmp_path / "t", appends=4, properties={"delta.enableDeletionVectors": "true"})
    _set_properties(uri, {"delta.enableDeletionVectors": "false"})
    plan = plan_optimize(table, target_size="10mb")
    written: list[str] = []
    results = [rewrite_bin(plan.snapshot, b, plan.settings, written) for b in plan.bins]
    _set_properties(uri, {"delta.enableDeletionVectors": "true"})          # on the allow list
    expected = _rows(table)
    assert commit_optimize(table, plan, results, written)["version"] == plan.snapshot.version + 2
    assert _rows(table).sort_by("id").equals(expected.sort_by("id"))

    table = _small_files_table(tmp_path / "u", appends=4)
    plan = plan_optimize(table, target_size="10mb")
    written = []
    results = [rewrite_bin(plan.snapshot, b, plan.settings, written) for b in plan.bins]
    _set_properties(str(tmp_path / "u"), {"team": "data"})                  # not on it
    with pytest.raises(MetadataChangedError):
        commit_optimize(table, plan, results, written)
    assert all(not os.path.exists(os.path.join(str(tmp_path / "u"), p)) for p in written)


@pytest.mark.parametrize("name", ["delta-golden/table-with-columnmapping-mode-name",
                                  "delta-golden/table-with-columnmapping-mode-id",
                                  "delta-golden/dv-with-columnmapping"])
def test_column_mapping_tables_are_rewritten_with_physical_names_and_field_ids(copy_table, name):
    """Delta Spark optimizes column-mapped tables: the new files hold every column (nested fields too)
    under its physical name with its field id as the Parquet field id, statistics by physical names."""
    path = copy_table(name)
    table = DeltaTable(str(path))
    before = table.snapshot()
    rows = sorted(table.snapshot().to_pyarrow().to_pylist(), key=repr)
    m = table.optimize(purge=True) if name.endswith("dv-with-columnmapping") else table.optimize(min_file_size="1gb")
    assert m["version"] == before.version + 1
    after = table.snapshot()
    assert sorted(table.snapshot().to_pyarrow().to_pylist(), key=repr) == rows
    fields = {f.name: f for f in after.schema if f.name not in after.partition_columns}
    physical = {field_metadata(f)["delta.columnMapping.physicalName"]: field_metadata(f)["delta.columnMapping.id"]
                for f in fields.values()}
    new_files = [f for f in after.files().to_pylist() if not f["data_change"]]
    assert new_files
    for f in new_files:
        stored = pq.read_schema(os.path.join(str(path), f["path"]))
        assert {x.name: int(x.metadata[b"PARQUET:field_id"]) for x in stored} == physical
        stats = json.loads(f["stats"])
        assert set(stats["nullCount"]) <= set(physical)   # keyed by physical names
    assert len(rows) > 0

# ------------------------------------------------------------ Z-order: external sort, nested columns
def test_sorted_runs_spill_merge_down_and_stream_every_row_in_key_order(tmp_path):
    """The Z-order external sort: many small runs (budget 64 KB), merged three at a time."""
    from airflow_provider_delta.log.write.optimize_rewrite import _KEY, SortedRuns
    rng = np.random.default_rng(7)
    keys = rng.integers(0, 1 << 20, 60_000).astype(np.uint64)       # repeated keys too
    runs = SortedRuns(str(tmp_path), budget=64 << 10, fan_in=3)
    for start in range(0, len(keys), 5_000):
        part = keys[start:start + 5_000]
        runs.add(pa.table({"row": pa.array(np.arange(start, start + len(part))), _KEY: pa.array(part)}))
    assert len(runs.runs) > 3                                          # it did spill
    out = pa.concat_tables(list(runs.merged()))
    got = out.column(_KEY).to_numpy()
    assert (np.diff(got.astype(np.int64)) >= 0).all()
    assert sorted(out.column("row").to_pylist()) == list(range(len(keys)))
    assert (keys[out.column("row").to_numpy()] == got).all()          # each row kept its own key


def test_zorder_by_a_nested_column_with_statistics(tmp_path):
    table = DeltaTable(str(tmp_path / "t"))
    for i in range(3):
        table.write(pa.table({"id": pa.array([i, i + 10], pa.int64()),
                              "s": pa.array([{"a": 3 - i, "b": "x"}, None], pa.struct([("a", pa.int64()),
                                                                                       ("b", pa.string())]))}))
    before = table.snapshot().to_pyarrow().sort_by("id")
    m = table.optimize(z_order_by=["s.a"])
    assert (m["numFilesRemoved"], m["numFilesAdded"]) == (3, 1)
    assert table.history(1)[0]["operationParameters"]["zOrderBy"] == '["s.a"]'
    assert table.snapshot().to_pyarrow().sort_by("id").equals(before)
    assert RsTable(table.storage.root).to_pyarrow_table().sort_by("id").to_pylist() == before.to_pylist()
    with pytest.raises(InvalidArgumentError, match="not in the table schema"):
        table.optimize(z_order_by=["s.nope"])
    with pytest.raises(InvalidArgumentError, match="no order"):
        table.optimize(z_order_by=["s"])


@pytest.mark.parametrize("rows", [8193, 9000, 16_384, 16_385, 200_000, 1 << 20, 10 ** 9])
def test_the_dictionary_probe_rows_are_a_distinct_deterministic_draw_over_the_row_group(rows):
    probe = 8192
    at = probe_positions(rows, probe)
    assert len(at) == probe and at[0] >= 0 and at[-1] < rows
    assert (np.diff(at) > 0).all()                                      # distinct, sorted (take keeps order)
    # every part of the row group is seen, about equally (a draw from the first rows only is not)
    per_eighth = np.bincount(at * 8 // rows, minlength=8)
    assert per_eighth.min() > probe / 8 * 0.85, per_eighth
    if rows >= 1 << 20:
        # data repeating with a period (a catalogue cycled through) is seen at every phase, not at one
        # (a plain stride's probe of a 128-row cycle shows one value)
        assert len(np.unique(at % 128)) == 128
    if rows == 200_000:
        # like a random draw, not an even spread: rows sorted by a column of 20k values (runs of 10)
        # show about 20k * (1 - exp(-8192 / 20k)) = 6.7k of them; one row per equal slice shows ~8.2k
        assert len(np.unique(at * 20_000 // rows)) < 7_100
    assert probe_positions(rows, probe).tolist() == at.tolist()         # the same rows, the same files
    assert probe_positions(probe, probe).tolist() == list(range(probe))


def test_a_string_partition_compared_with_a_number_is_a_type_mismatch(tmp_path):
    """Delta Spark's ``OPTIMIZE ... WHERE p = 1`` on a string partition column casts the values (``'01'`` is
    selected too); a filter that compares text would select other partitions: refused, nothing written."""
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, pa.schema([("x", pa.int64()), ("p", pa.string())]), partition_by=["p"])
    for p in ("1", "01", "1", "01"):
        table.write(pa.table({"x": [1], "p": [p]}))
    before = sorted(os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs)
    for partition_filter in ([("p", "=", 1)], [("p", "in", ["1", 1])], [[("p", "=", "1")], [("p", ">", 0)]]):
        with pytest.raises(InvalidArgumentError, match="type mismatch"):
            table.optimize(partition_filter=partition_filter)
    assert sorted(os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs) == before
    assert table.optimize(partition_filter=[("p", "=", "1")])["numFilesRemoved"] == 2


def test_the_predicate_text_is_delta_sparks_for_each_kind_of_value():
    """Spark's unresolved-expression text (measured on the jars in tests/interop/test_review_s12_rv_maint_spark.py)."""
    import datetime as dt
    from decimal import Decimal

    from airflow_provider_delta.log.write.optimize_plan import delta_spark_predicate_text as text
    assert text(None) == []
    assert text([("n", ">", -1), ("b", "=", True), ("f", "<=", 1.5), ("m", "=", Decimal("2.50"))]) == \
        ["(((('n > -1) AND ('b = true)) AND ('f <= 1.5)) AND ('m = 2.50))"]
    assert text([("t", "=", dt.datetime(2024, 1, 2, 3, 4, 5, 500000, tzinfo=dt.timezone.utc))]) == \
        ["('t = 2024-01-02 03:04:05.5)"]
    assert text([("a b", "in", {"y", "x"})]) == ["'`a b` IN (x,y)"]
    assert text([[("p", "is", None)], [("p", "=", "a")], [("p", "!=", "b")]]) == \
        ["((isnull('p) OR ('p = a)) OR NOT ('p = b))"]
