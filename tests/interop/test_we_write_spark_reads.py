"""We write, Delta Spark reads, and then writes after us.

One table goes through everything our writer does: create (partitioned), append, a
transaction with an idempotent-writer txn id and a hand-made data file, overwrite,
in-commit timestamps enabled on the existing table, a classic and a multi-part
checkpoint, log compaction, metadata cleanup and vacuum. At each step Delta Spark's
answers (rows per version, txn versions, DESCRIBE HISTORY, timestampAsOf) equal ours;
then Delta Spark appends and MERGEs into the table and we read its commits back.
"""
from __future__ import annotations

import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from interop_support import assert_same, compare_table, spark_latest_version
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string()), ("amount", pa.float64())])


def _batch(ids, day: str) -> pa.Table:
    ids = list(ids)
    return pa.table({"id": pa.array(ids, pa.int64()), "day": [day] * len(ids),
                     "amount": pa.array([i * 0.5 for i in ids], pa.float64())}, schema=SCHEMA)


def _log(path: str) -> list[str]:
    return sorted(os.listdir(os.path.join(path, "_delta_log")))


def test_we_write_delta_spark_reads_and_writes_after_us(spark, tmp_path, sql_conf):
    p = str(tmp_path / "ours")
    table = DeltaTable.create(p, SCHEMA, partition_by=["day"], description="written by us")       # v0
    table.auto_checkpoint = False  # the checkpoints below are the ones this test asks for
    assert table.write(_batch(range(0, 4), "2026-11-20")) == 1                                   # v1

    # a transaction with a txn id and a data file we wrote ourselves                               # v2
    rel = "day=2026-11-21/part-00000-by-hand.parquet"
    os.makedirs(os.path.join(p, "day=2026-11-21"))
    pq.write_table(_batch(range(10, 13), "2026-11-21").drop(["day"]), os.path.join(p, rel))
    with table.transaction(operation="WRITE", operation_parameters={"mode": "Append"}) as txn:
        txn.add_file(AddFile(rel, size=os.path.getsize(os.path.join(p, rel)),
                             partition_values={"day": "2026-11-21"},
                             modification_time=int(time.time() * 1000)))
        txn.set_txn("interop-app", 7)
    assert txn.version == 2

    assert table.write(_batch(range(20, 26), "2026-11-22"), mode="overwrite") == 3                # v3
    assert table.enable_in_commit_timestamps() == 4                                              # v4
    assert table.write(_batch(range(30, 32), "2026-11-22")) == 5                                 # v5
    assert table.checkpoint() == 5
    assert table.write(_batch(range(40, 42), "2026-11-23")) == 6                                 # v6
    assert table.write(_batch(range(50, 52), "2026-11-23")) == 7                                 # v7
    assert table.checkpoint(parts=3) == 7
    table.compact_log(1, 3)
    assert table.write(_batch(range(60, 62), "2026-11-24")) == 8                                 # v8
    logs = _log(p)
    assert "00000000000000000005.checkpoint.parquet" in logs
    assert "00000000000000000007.checkpoint.0000000003.0000000003.parquet" in logs
    assert "00000000000000000001.00000000000000000003.compacted.json" in logs

    # Delta Spark reads every version as we do: rows, files, txn ids, history, timestamps
    assert_same(compare_table(spark, p, txns=[1, 2, 8]), "our table, read by Delta Spark")
    # ... and honours our txn id: the same (app, version) is skipped, a newer one is written
    df = spark.createDataFrame([(99, "2026-11-25", 1.0)], "id long, day string, amount double")
    df.write.format("delta").mode("append").option("txnAppId", "interop-app").option("txnVersion", 7).save(p)
    assert spark_latest_version(spark, p) == 8, "Delta Spark should skip a txn version we recorded"

    # metadata cleanup: everything before the checkpoint at 7 goes, for both readers
    result = table.cleanup_metadata(retention_ms=0, truncate=None)
    assert result["checkpoint_version"] == 7, result
    assert "00000000000000000000.json" not in _log(p)
    assert_same(compare_table(spark, p, versions=[7, 8], rows=False, txns=[7]), "our table after cleanup")

    # vacuum: the files the overwrite removed are gone; Delta Spark finds nothing more to delete
    sql_conf({"spark.databricks.delta.retentionDurationCheck.enabled": "false"})
    vac = table.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)
    assert vac["num_files_deleted"] >= 2, vac
    left = spark.sql(f"VACUUM delta.`{p}` RETAIN 0 HOURS DRY RUN").collect()
    assert left == [], f"Delta Spark would still delete {left} after our vacuum"
    assert spark.read.format("delta").load(p).count() == 14

    # Delta Spark writes after us: an append and a MERGE; we read its commits back
    spark.createDataFrame([(70, "2026-11-24", 7.0), (71, "2026-11-25", 7.5)],
                          "id long, day string, amount double").write.format("delta").mode("append").save(p)  # v9
    spark.sql(f"""MERGE INTO delta.`{p}` t
                  USING (SELECT 70L AS id, '2026-11-24' AS day, 70.0D AS amount UNION ALL
                         SELECT 80L, '2026-11-26', 8.0D) s
                  ON t.id = s.id AND t.day = s.day
                  WHEN MATCHED THEN UPDATE SET amount = s.amount WHEN NOT MATCHED THEN INSERT *""").collect()  # v10
    assert DeltaTable(p).latest_version() == 10
    history = {h["version"]: h for h in DeltaTable(p).history()}
    assert history[9]["operation"] == "WRITE" and history[10]["operation"] == "MERGE"
    assert history[10]["timestamp"] > history[9]["timestamp"] > history[8]["timestamp"]
    assert_same(compare_table(spark, p, versions=[8, 9, 10], txns=[10]),
                "Delta Spark's commits on our table, read by us")
    rows = DeltaTable(p).snapshot().to_pyarrow().sort_by("id").to_pylist()
    assert [r["id"] for r in rows] == [20, 21, 22, 23, 24, 25, 30, 31, 40, 41, 50, 51, 60, 61, 70, 71, 80]
    assert next(r for r in rows if r["id"] == 70)["amount"] == 70.0
