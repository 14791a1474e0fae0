"""Breaker: our vacuum dry run against Delta Spark's ``VACUUM ... RETAIN 0 HOURS DRY RUN`` on one table
holding every path form Delta Spark itself writes: partition values that need escaping (space, ``%``,
``+``, ``=``, unicode), deletion vector files (Spark's DELETE), change data files (CDF on), files
removed by DELETE/UPDATE, an add named by an absolute ``file:`` URI, and strays in every kind of folder.
We must never list a file Delta Spark keeps (listing fewer is fine)."""
from __future__ import annotations

import json
import os

import pyarrow.parquet as pq
import pytest

from test_writer_rules_spark import _age
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.maintenance.vacuum import vacuum

pytestmark = pytest.mark.spark


def test_vacuum_never_lists_a_file_delta_spark_keeps(spark, tmp_path):
    path = tmp_path / "v t"
    spark.sql("SET spark.databricks.delta.retentionDurationCheck.enabled = false")
    df = spark.createDataFrame(
        [(i, p) for i, p in enumerate(["a b", "x%y", "c+d", "e=f", "é", "plain", "_under"] * 3)], "id long, p string")
    df.write.format("delta").partitionBy("p").option("delta.enableDeletionVectors", "true") \
        .option("delta.enableChangeDataFeed", "true").save(str(path))
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.enableDeletionVectors' = 'true', "
              "'delta.enableChangeDataFeed' = 'true')")
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 3 = 0")            # DVs
    spark.sql(f"UPDATE delta.`{path}` SET id = id + 100 WHERE id % 3 = 1")  # CDC files, rewrites
    src = next(path.rglob("part-*.parquet"))
    live = path / "abs dir" / "live%20x.parquet"
    live.parent.mkdir()
    live.write_bytes(src.read_bytes())
    table = DeltaTable(str(path))
    with table.transaction(operation="WRITE") as txn:
        txn.add_file(AddFile("file:" + str(live), live.stat().st_size, {"p": "plain"}, 1, True,
                             json.dumps({"numRecords": pq.ParquetFile(src).metadata.num_rows})))
    for stray in ["stray.parquet", "p=a b/stray.parquet", "_change_data/stray.parquet", "abs dir/stray.parquet",
                  "deletion_vector_00000000-0000-0000-0000-000000000000.bin", "_hidden/stray.parquet"]:
        (path / stray).parent.mkdir(parents=True, exist_ok=True)
        (path / stray).write_bytes(b"x")
    _age(path, 30)
    theirs = sorted(os.path.relpath(r[0].replace("file:", "", 1), str(path))
                    for r in spark.sql(f"VACUUM delta.`{path}` RETAIN 0 HOURS DRY RUN").collect())
    ours = sorted(vacuum(DeltaTable(str(path)), retention_hours=0, enforce_retention=False,
                         dry_run=True)["files_deleted"])
    only_ours = sorted(set(ours) - set(theirs))
    assert only_ours == [], f"we would delete files Delta Spark keeps: {only_ours}; theirs={theirs}"
    print("only theirs:", sorted(set(theirs) - set(ours)))
    expected = spark.read.format("delta").load(str(path)).count()
    vacuum(DeltaTable(str(path)), retention_hours=0, enforce_retention=False, dry_run=False)
    assert spark.read.format("delta").load(str(path)).count() == expected
    assert DeltaTable(str(path)).snapshot().to_pyarrow().num_rows == expected
