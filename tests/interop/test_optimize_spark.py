"""OPTIMIZE against Delta Spark, both directions.

- After our compaction, Z-order and purge, Delta Spark and deltalake read the same rows as
  we do at every version (and Delta Spark sees the same files, metadata and history).
- Delta Spark's OPTIMIZE, ZORDER BY and REORG ... APPLY (PURGE) tables read by us.
- Delta Spark writes (append, DELETE with deletion vectors) after our OPTIMIZE; we write
  and optimize after its OPTIMIZE.
- A Delta Spark DELETE that puts a deletion vector on a file our OPTIMIZE is rewriting
  makes our commit fail: the deleted rows never come back.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable
from deltalake import QueryBuilder

from interop_support import assert_same, compare_table, normalize_rows, spark_read
from airflow_provider_delta.log import (ConcurrentModificationError, DeltaTable, commit_optimize, plan_optimize,
                                        rewrite_bin)

pytestmark = pytest.mark.spark


def _spark_table(spark, path: str, appends: int = 6, dv: bool = False) -> None:
    for i in range(appends):
        df = spark.range(i * 100, (i + 1) * 100).selectExpr(
            "id", "cast(id % 2 as string) as p", "rand(42) as x", "concat('s', cast(id % 37 as string)) as s")
        writer = df.write.format("delta").mode("append").partitionBy("p")
        if i == 0 and dv:
            writer = writer.option("delta.enableDeletionVectors", "true")
        writer.save(path)


def _our_rows(path: str, version: int | None = None) -> list:
    return normalize_rows(DeltaTable(path).snapshot(version=version).to_pyarrow().to_pylist())


def _rs_rows(path: str, version: int) -> list:
    return normalize_rows(RsTable(path, version=version).to_pyarrow_table().to_pylist())


def test_our_optimize_and_zorder_read_the_same_by_spark_and_deltalake(spark, tmp_path):
    path = str(tmp_path / "t")
    _spark_table(spark, path)
    table = DeltaTable(path)
    m1 = table.optimize(target_size="64mb")
    assert m1["numFilesRemoved"] >= 12
    total = sum(table.snapshot().files().column("size").to_pylist())
    m2 = table.optimize(z_order_by=["x", "s"], target_size=max(1, total // 6))
    assert m2["numFilesAdded"] >= 4
    assert_same(compare_table(spark, path, timestamps=False), "after our OPTIMIZE and ZORDER")
    for v in range(table.latest_version() + 1):
        assert _rs_rows(path, v) == _our_rows(path, v), f"deltalake differs at v{v}"
    hist = {r["version"]: r for r in (row.asDict(recursive=True) for row in
                                      spark.sql(f"DESCRIBE HISTORY delta.`{path}`").collect())}
    assert hist[m2["version"]]["operation"] == "OPTIMIZE"
    assert json.loads(hist[m2["version"]]["operationParameters"]["zOrderBy"]) == ["x", "s"]
    # Delta Spark writes after our OPTIMIZE, and its change feed-free DELETE works on our files
    spark.range(5000, 5010).selectExpr("id", "'1' as p", "cast(0.5 as double) as x", "'new' as s") \
        .write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 10 = 3")
    assert_same(compare_table(spark, path, timestamps=False, history=False), "Spark writes after our OPTIMIZE")


def test_spark_optimize_zorder_and_purge_read_by_us_then_we_write(spark, tmp_path):
    path = str(tmp_path / "t")
    _spark_table(spark, path, dv=True)
    spark.sql(f"OPTIMIZE delta.`{path}`")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 7 = 0")
    spark.sql(f"OPTIMIZE delta.`{path}` ZORDER BY (x, s)")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 11 = 0")
    spark.sql(f"REORG TABLE delta.`{path}` APPLY (PURGE)")
    assert_same(compare_table(spark, path, timestamps=False), "Delta Spark's OPTIMIZE/ZORDER/REORG read by us")
    table = DeltaTable(path)
    ops = [h["operation"] for h in table.history()]
    assert ops.count("OPTIMIZE") == 2 and "REORG" in ops
    # we write and optimize after Delta Spark's OPTIMIZE
    table.write(pa.table({"id": pa.array([9000, 9001], pa.int64()), "p": ["0", "1"], "x": [0.1, 0.2],
                          "s": ["ours", "ours"]}))
    m = table.optimize(target_size="64mb", min_file_size="64mb")
    assert m["version"] is not None
    assert_same(compare_table(spark, path, timestamps=False), "our write and OPTIMIZE after Delta Spark's")


def test_our_purge_of_spark_deletion_vectors(spark, tmp_path):
    path = str(tmp_path / "t")
    _spark_table(spark, path, appends=3, dv=True)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 5 = 0")
    table = DeltaTable(path)
    with_dv = [d for d in table.snapshot().files().column("deletion_vector").to_pylist() if d]
    assert with_dv, "Delta Spark wrote no deletion vectors"
    m = table.optimize(purge=True)
    assert m["operation"] == "REORG" and m["numDeletionVectorsRemoved"] == len(with_dv)
    assert not any(table.snapshot().files().column("deletion_vector").to_pylist())
    assert_same(compare_table(spark, path, timestamps=False), "after our REORG ... PURGE")
    assert spark_read(spark, path).count() == 240


def test_spark_dv_delete_during_our_optimize_conflicts(spark, tmp_path):
    path = str(tmp_path / "t")
    _spark_table(spark, path, appends=4, dv=True)
    table = DeltaTable(path)
    plan = plan_optimize(table, target_size="64mb")
    written: list[str] = []
    results = [rewrite_bin(plan.snapshot, b, plan.settings, written) for b in plan.bins]
    # meanwhile Delta Spark deletes rows of a file being compacted, with a deletion vector
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 150")
    dv_commit = table.read_commit(table.latest_version())
    assert any("add" in a and a["add"].get("deletionVector") for a in dv_commit)
    expected = _our_rows(path)
    with pytest.raises(ConcurrentModificationError):
        commit_optimize(table, plan, results, written)
    assert _our_rows(path) == expected
    assert 150 not in {r[0] for r in expected}
    # and appends meanwhile do not stop a fresh OPTIMIZE
    plan = plan_optimize(table, target_size="64mb")
    written = []
    results = [rewrite_bin(plan.snapshot, b, plan.settings, written) for b in plan.bins]
    spark.range(7000, 7005).selectExpr("id", "'0' as p", "cast(0.5 as double) as x", "'late' as s") \
        .write.format("delta").mode("append").save(path)
    m = commit_optimize(table, plan, results, written)
    assert m["version"] == table.latest_version()
    assert_same(compare_table(spark, path, timestamps=False), "OPTIMIZE after a concurrent append")


@pytest.mark.parametrize("mode", ["name", "id"])
def test_our_optimize_of_a_column_mapped_table_read_by_delta_spark(spark, tmp_path, mode):
    """A column-mapped table (a renamed column, a nested struct, partitions) written by Delta Spark in
    small files; after our compaction and Z-order Delta Spark and deltalake read the same rows, and
    Delta Spark writes and deletes after it."""
    path = str(tmp_path / "t")
    for i in range(4):
        df = spark.range(i * 50, (i + 1) * 50).selectExpr(
            "id", "cast(id % 2 as string) as p", "rand(7) as x",
            "named_struct('a', id * 2, 'b', concat('b', cast(id as string))) as st")
        writer = df.write.format("delta").mode("append").partitionBy("p")
        if i == 0:
            writer = writer.option("delta.columnMapping.mode", mode) \
                .option("delta.minReaderVersion", "2").option("delta.minWriterVersion", "5")
        writer.save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN x TO x_renamed")
    before = _our_rows(path)
    table = DeltaTable(path)
    m = table.optimize(min_file_size="1gb")
    assert m["numFilesRemoved"] >= 8 and m["numFilesAdded"] == 2
    total = sum(table.snapshot().files().column("size").to_pylist())
    m = table.optimize(z_order_by=["x_renamed", "id"], target_size=max(1, total // 6))
    assert m["version"] is not None
    assert _our_rows(path) == before
    got = normalize_rows([r.asDict(recursive=True) for r in spark_read(spark, path).collect()])
    assert got == before
    assert_same(compare_table(spark, path, timestamps=False), f"after our OPTIMIZE of a {mode}-mapped table")
    for v in range(table.latest_version() + 1):   # deltalake's DataFusion reader (its pyarrow one ignores mapping)
        rs = RsTable(path, version=v)
        batches = QueryBuilder().register("t", rs).execute("select * from t").read_all()
        assert normalize_rows(pa.table(batches).to_pylist()) == _our_rows(path, v), f"deltalake differs at v{v}"
    spark.range(900, 905).selectExpr("id", "'1' as p", "0.5d as x_renamed",
                                     "named_struct('a', id, 'b', 'new') as st") \
        .write.format("delta").mode("append").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 10 = 3")
    assert_same(compare_table(spark, path, timestamps=False, history=False),
                f"Delta Spark writes after our OPTIMIZE of a {mode}-mapped table")
