"""RESTORE and SHALLOW CLONE between us and Delta Spark, in both directions.

- our restore, on a partitioned table with deletion vectors, interleaved with Delta Spark's
  writes and Delta Spark's own ``RESTORE``: Delta Spark and we agree on the files, protocol,
  metadata, rows and history at every version; deltalake reads the same rows;
- our clone read by Delta Spark (and Delta Spark writing to it, deletion vectors included,
  without touching the source), Delta Spark's ``SHALLOW CLONE`` read by us and written by us.
"""
from __future__ import annotations


import deltalake
import pyarrow as pa
import pytest

from interop_support import assert_same, compare_table, normalize_rows
from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark


def deltalake_rows(uri: str, version: int | None = None) -> list:
    """deltalake's rows through its DataFusion reader (deletion vectors, absolute paths)."""
    dt = deltalake.DeltaTable(uri, version=version)
    batches = deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all()
    return normalize_rows(pa.table(batches).to_pylist())


def ours_rows(table: DeltaTable, version: int | None = None) -> list:
    return normalize_rows(table.snapshot(version=version).to_pyarrow().to_pylist())


def ids(table: DeltaTable, version: int | None = None) -> list[int]:
    return sorted(table.snapshot(version=version).to_pyarrow().column("id").to_pylist())


def dv_table(spark, path: str) -> None:
    """v0: ids 0..9 in two partitions with deletion vectors on; v1, v2: deletes that write DVs."""
    spark.range(0, 10).selectExpr("id", "id % 2 as part").repartition(1).write.format("delta") \
        .partitionBy("part").option("delta.enableDeletionVectors", "true").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 5")


def commit_info(table: DeltaTable, version: int) -> dict:
    (info,) = [a["commitInfo"] for a in table.read_commit(version) if "commitInfo" in a]
    return info


def test_our_restore_and_delta_spark_interleaved(spark, tmp_path):
    p = str(tmp_path / "restore")
    dv_table(spark, p)                                                        # v0..v2 (Delta Spark)
    table = DeltaTable(p)
    table.write(pa.table({"id": pa.array([100, 101], pa.int64()), "part": pa.array([0, 1], pa.int64())}))  # v3
    assert table.restore(1) == 4                        # same path, older DV: remove (f, dv2), add (f, dv1)
    acts = [a for a in table.read_commit(4) if "add" in a or "remove" in a]
    assert any("deletionVector" in a.get("add", {}) for a in acts)
    spark.createDataFrame([(200, 0)], "id long, part long").write.format("delta").mode("append").save(p)  # v5
    spark.sql(f"RESTORE TABLE delta.`{p}` TO VERSION AS OF 3")                # v6: Delta Spark's restore
    assert table.restore(timestamp=table.snapshot(version=0).timestamp) == 7  # v7: ours, by timestamp
    spark.sql(f"DELETE FROM delta.`{p}` WHERE id = 7")                         # v8: Delta Spark writes after it
    theirs = commit_info(table, 6)
    for v in (4, 7):                      # our commitInfo records what Delta Spark's RESTORE records
        mine = commit_info(table, v)
        assert mine["readVersion"] == v - 1 and theirs["readVersion"] == 5
        assert mine["isolationLevel"] == theirs["isolationLevel"] == "Serializable"
        assert mine["isBlindAppend"] is theirs["isBlindAppend"] is False
    assert_same(compare_table(spark, p), "restores interleaved with Delta Spark")
    for v in range(9):
        assert deltalake_rows(p, v) == ours_rows(table, v), f"deltalake at v{v}"
    assert ids(table, 4) == [0, 1, 2, 4, 5, 6, 7, 8, 9]          # version 1: only id 3 deleted
    assert ids(table, 7) == list(range(10))


def test_our_clone_read_and_written_by_delta_spark(spark, tmp_path, file_tree):
    src = str(tmp_path / "src")
    dv_table(spark, src)
    before = file_tree(src)
    clone = DeltaTable(src).clone(str(tmp_path / "clone"), version=1)
    c = clone.uri
    spark.createDataFrame([(300, 1)], "id long, part long").write.format("delta").mode("append").save(c)
    spark.sql(f"DELETE FROM delta.`{c}` WHERE id IN (0, 300)")     # a new DV on a source file, written by the clone
    clone.write(pa.table({"id": pa.array([400], pa.int64()), "part": pa.array([0], pa.int64())}))
    assert_same(compare_table(spark, c), "our clone, written by Delta Spark and us")
    assert file_tree(src) == before                                     # the source is untouched
    assert ids(clone) == [1, 2, 4, 5, 6, 7, 8, 9, 400]
    for v in range(clone.latest_version() + 1):
        assert deltalake_rows(clone.uri, v) == ours_rows(clone, v), f"deltalake at v{v}"


def test_delta_spark_shallow_clone_read_and_written_by_us(spark, tmp_path):
    src = str(tmp_path / "my tables" / "src")          # a path Delta Spark URL-encodes in the clone's log
    dv_table(spark, src)
    target = str(tmp_path / "my tables" / "spark-clone")
    spark.sql(f"CREATE TABLE delta.`{target}` SHALLOW CLONE delta.`{src}` VERSION AS OF 1")
    table = DeltaTable(target)
    (entry,) = table.history()
    assert entry["operation"] == "CLONE" and entry["operationParameters"]["sourceVersion"] == 1
    ours_clone = DeltaTable(src).clone(str(tmp_path / "our-clone"), version=1)
    mine = ours_clone.history()[0]
    assert mine["operationMetrics"] == entry["operationMetrics"]
    theirs, ours = commit_info(table, 0), commit_info(ours_clone, 0)
    assert ours["isolationLevel"] == theirs["isolationLevel"] and ours["isBlindAppend"] is theirs["isBlindAppend"]
    assert ours.get("readVersion") == theirs.get("readVersion"), (ours.get("readVersion"), theirs.get("readVersion"))
    assert set(mine["operationParameters"]) == set(entry["operationParameters"])
    assert ours_rows(ours_clone) == ours_rows(table) == deltalake_rows(target)
    table.write(pa.table({"id": pa.array([500], pa.int64()), "part": pa.array([1], pa.int64())}))   # v1
    assert table.restore(0) == 2                                                                     # v2
    assert_same(compare_table(spark, target), "Delta Spark's shallow clone, written by us")
    assert ids(table) == [0, 1, 2, 4, 5, 6, 7, 8, 9]
