"""Path spelling against Delta Spark (issues #22/#24): Delta Spark writes non-ASCII characters of
its data paths raw (``city=München/...``) and matches a remove to its add by the path string.
Our overwrite, DELETE, RESTORE, OPTIMIZE and VACUUM of its files must leave Delta Spark (and
deltalake) reading exactly our rows, and Delta Spark's own removes of files we re-added must
cancel them for us. The log-layer side is tests/log/test_path_spelling.py.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark

CITIES = ["München", "São Paulo", "東京", "Oslo", "a b%c"]


@pytest.fixture
def spark_table(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        spark.createDataFrame([(i * 10 + j, city) for j, city in enumerate(CITIES)],
                              "id long, city string").write.format("delta").mode("append").partitionBy("city").save(path)
    return path


def _ours(path) -> list[int]:
    return sorted(DeltaTable(path).snapshot().to_pyarrow().column("id").to_pylist())


def _spark(spark, path) -> list[int]:
    return sorted(r["id"] for r in spark.read.format("delta").load(path).collect())


def _rs(path) -> list[int]:
    return sorted(RsTable(path).to_pyarrow_table().column("id").to_pylist())


def _agree(spark, path) -> list[int]:
    ours = _ours(path)
    assert _spark(spark, path) == ours
    assert _rs(path) == ours
    return ours


def _log_paths(path, version: int, kind: str) -> set[str]:
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json"), encoding="utf-8") as f:
        return {a[kind]["path"] for a in map(json.loads, f) if kind in a}


def test_spark_spells_non_ascii_raw_so_the_test_means_something(spark_table):
    assert any("München" in p for p in _log_paths(spark_table, 0, "add"))


def test_our_overwrite_of_spark_files(spark, spark_table):
    table = DeltaTable(spark_table)
    table.write(pa.table({"id": pa.array([100, 101], pa.int64()), "city": ["München", "x"]}), mode="overwrite")
    assert _agree(spark, spark_table) == [100, 101]


def test_our_delete_of_spark_files(spark, spark_table):
    table = DeltaTable(spark_table)
    files = table.snapshot().files().to_pylist()
    doomed = [f["path"] for f in files if dict(f["partition_values"])["city"] in ("München", "東京", "a b%c")]
    txn = table.transaction(operation="DELETE")
    txn.remove_files(doomed)
    txn.commit()
    assert len(_agree(spark, spark_table)) == 6


def test_our_restore_then_a_spark_delete(spark, spark_table):
    table = DeltaTable(spark_table)
    before = table.latest_version()
    table.write(pa.table({"id": pa.array([100], pa.int64()), "city": ["Oslo"]}), mode="overwrite")
    table.restore(before)
    assert len(_agree(spark, spark_table)) == 15
    spark.sql(f"DELETE FROM delta.`{spark_table}` WHERE city = 'München'")   # Spark removes our re-adds
    assert len(_agree(spark, spark_table)) == 12


def test_a_spark_delete_after_our_optimize_then_our_vacuum(spark, spark_table):
    table = DeltaTable(spark_table)
    m = table.optimize()
    assert (m["numFilesRemoved"], m["numFilesAdded"]) == (15, 5)
    spark.sql(f"DELETE FROM delta.`{spark_table}` WHERE city IN ('東京', 'a b%c')")   # Spark removes our adds
    expected = _agree(spark, spark_table)
    assert len(expected) == 9
    DeltaTable(spark_table).vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert _agree(spark, spark_table) == expected


def test_a_log_mixing_spellings_reads_as_delta_spark_reads_it(spark, spark_table):
    """The old bug's output (a percent-encoded remove of Spark's raw add): Delta Spark keeps the
    add live, and so do we now; before, we read 14 rows where Delta Spark read 15."""
    table = DeltaTable(spark_table)
    munich = [f for f in table.snapshot().files().to_pylist() if f["path"].startswith("city=München/")][0]
    txn = table.transaction(operation="DELETE")
    txn.remove_files([munich["path"]])
    version = txn.commit()
    log = os.path.join(spark_table, "_delta_log", f"{version:020d}.json")
    with open(log, encoding="utf-8") as f:
        actions = [json.loads(line) for line in f if line.strip()]
    [remove] = [a["remove"] for a in actions if "remove" in a]
    assert remove["path"] == munich["log_path"]               # spelled as Spark's add
    remove["path"] = munich["log_path"].replace("München", "M%C3%BCnchen")
    with open(log, "w", encoding="utf-8") as f:
        f.write("\n".join(json.dumps(a) for a in actions) + "\n")
    assert len(_agree(spark, spark_table)) == 15
