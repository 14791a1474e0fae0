"""Delta Spark writes, we read: at every version our answers equal Delta Spark's.

Each test builds a small table with Delta Spark (4.4.0 on Spark 4.2.0, local mode) and
compares, version by version: version, live files (path, size, partition values, deletion
vector; modification time, stats, tags), protocol, metadata, schema, rows (where our reader
supports the table), history, DESCRIBE DETAIL, and the version that a timestamp just before,
at and just after every commit resolves to (``snapshot(timestamp=)`` vs ``timestampAsOf``).

Rows of tables with deletion vectors and column mapping are compared like any other
(``test_dv_column_mapping_rows.py`` goes further on both).
"""
from __future__ import annotations

import os
import re

import pytest

from interop_support import assert_same, compare_table, compare_timestamps, spark_history
from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark

#: rows of a table with most Spark types (a null here and there)
RICH_SELECT = """
SELECT id, CAST(id AS INT) AS i, IF(id % 5 = 0, NULL, concat('n', id)) AS name,
       CAST(id * 1.25 AS DECIMAL(10,2)) AS amount, id / 4.0D AS price, id % 2 = 0 AS flag,
       date_add(DATE'2026-01-01', CAST(id AS INT)) AS day, timestamp_millis(1767225600000 + id * 1001) AS ts,
       array(concat('t', id), NULL) AS tags, named_struct('a', CAST(id AS INT), 'b', 'x') AS info,
       map('k', CAST(id AS INT)) AS attrs
FROM range({lo}, {hi})
"""


def _sql(spark, text: str):
    return spark.sql(text).collect()


def _log_files(path: str) -> list[str]:
    return sorted(os.listdir(os.path.join(path, "_delta_log")))


def test_plain_table_write_dml_optimize_restore_vacuum(spark, tmp_path, sql_conf):
    """create (CTAS), append, overwrite, DELETE, UPDATE, MERGE, OPTIMIZE, RESTORE, VACUUM; no DVs."""
    p = str(tmp_path / "plain")
    _sql(spark, f"CREATE TABLE delta.`{p}` USING delta AS " + RICH_SELECT.format(lo=0, hi=6))          # v0
    _sql(spark, f"INSERT INTO delta.`{p}` " + RICH_SELECT.format(lo=6, hi=10))                         # v1
    spark.sql(RICH_SELECT.format(lo=10, hi=16)).repartition(2).write.format("delta") \
        .mode("overwrite").save(p)                                                                       # v2
    _sql(spark, f"DELETE FROM delta.`{p}` WHERE id = 11")                                               # v3
    _sql(spark, f"UPDATE delta.`{p}` SET name = 'updated', amount = amount * 2 WHERE id = 12")           # v4
    _sql(spark, f"""MERGE INTO delta.`{p}` t USING ({RICH_SELECT.format(lo=14, hi=18)}) s ON t.id = s.id
                    WHEN MATCHED THEN UPDATE SET name = 'merged' WHEN NOT MATCHED THEN INSERT *""")    # v5
    _sql(spark, f"OPTIMIZE delta.`{p}`")                                                                # v6
    _sql(spark, f"RESTORE TABLE delta.`{p}` TO VERSION AS OF 3")                                        # v7
    assert DeltaTable(p).snapshot().protocol.min_writer_version < 7  # a legacy protocol table, no DVs
    assert_same(compare_table(spark, p), "plain table")

    sql_conf({"spark.databricks.delta.retentionDurationCheck.enabled": "false",
              "spark.databricks.delta.vacuum.logging.enabled": "true"})
    _sql(spark, f"VACUUM delta.`{p}` RETAIN 0 HOURS")                                                   # v8, v9
    latest = DeltaTable(p).latest_version()
    assert latest == 9, _log_files(p)
    # older versions' data files are gone: compare the state after VACUUM, history and all timestamps
    assert_same(compare_table(spark, p, versions=[8, 9]), "plain table after VACUUM")


def test_partitioned_table_with_change_data_feed(spark, tmp_path):
    """Partitions (with a null and an escaped value), replaceWhere, partition DELETE, CDF files."""
    p = str(tmp_path / "partitioned")
    rows = """SELECT id, CASE WHEN id % 4 = 0 THEN NULL WHEN id % 4 = 1 THEN 'x y%z' ELSE CAST(id % 4 AS STRING) END
              AS part, CAST(id * 10 AS INT) AS v FROM range({lo}, {hi})"""
    _sql(spark, f"""CREATE TABLE delta.`{p}` USING delta PARTITIONED BY (part)
                    TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true') AS {rows.format(lo=0, hi=12)}""")  # v0
    _sql(spark, f"INSERT INTO delta.`{p}` SELECT id, 'new' AS part, 1 AS v FROM range(100, 103)")      # v1
    spark.sql("SELECT id, '2' AS part, -1 AS v FROM range(200, 202)").write.format("delta") \
        .mode("overwrite").option("replaceWhere", "part = '2'").save(p)                                # v2
    _sql(spark, f"DELETE FROM delta.`{p}` WHERE part = '3'")                                            # v3
    _sql(spark, f"UPDATE delta.`{p}` SET v = v + 1 WHERE id = 1")                                       # v4
    _sql(spark, f"""MERGE INTO delta.`{p}` t USING (SELECT 5L AS id, 'x y%z' AS part, 7 AS v UNION ALL
                    SELECT 300L, 'new', 8) s ON t.id = s.id AND t.part <=> s.part
                    WHEN MATCHED THEN UPDATE SET v = s.v WHEN NOT MATCHED THEN INSERT *""")            # v5
    assert os.path.isdir(os.path.join(p, "_change_data")), "UPDATE/MERGE with CDF on should write _change_data"
    assert_same(compare_table(spark, p), "partitioned CDF table")


def test_deletion_vectors(spark, tmp_path):
    """DELETE / UPDATE / MERGE with deletion vectors on; files carry their DV, then OPTIMIZE."""
    p = str(tmp_path / "dv")
    _sql(spark, f"""CREATE TABLE delta.`{p}` USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')
                    AS SELECT id, CAST(id % 3 AS STRING) AS s FROM range(0, 20)""")                    # v0
    _sql(spark, f"DELETE FROM delta.`{p}` WHERE id = 2")                                                # v1
    _sql(spark, f"UPDATE delta.`{p}` SET s = 'u' WHERE id = 3")                                         # v2
    _sql(spark, f"""MERGE INTO delta.`{p}` t USING (SELECT 4L AS id, 'm' AS s UNION ALL SELECT 100L, 'n') s
                    ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")   # v3
    _sql(spark, f"DELETE FROM delta.`{p}` WHERE id IN (5, 15)")                                         # v4
    _sql(spark, f"OPTIMIZE delta.`{p}`")                                                                # v5
    table = DeltaTable(p)
    dv_files = table.snapshot(version=4).files().column("deletion_vector").drop_null()
    assert len(dv_files) >= 1, "Delta Spark should have written deletion vectors"
    assert_same(compare_table(spark, p), "deletion-vector table")


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_rename_and_drop(spark, tmp_path, mode):
    p = str(tmp_path / f"cm_{mode}")
    _sql(spark, f"""CREATE TABLE delta.`{p}` (id BIGINT, a STRING, b INT) USING delta
                    TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}')""")                           # v0
    _sql(spark, f"INSERT INTO delta.`{p}` VALUES (1, 'one', 10), (2, 'two', 20)")                     # v1
    _sql(spark, f"ALTER TABLE delta.`{p}` RENAME COLUMN a TO a2")                                      # v2
    _sql(spark, f"ALTER TABLE delta.`{p}` DROP COLUMN b")                                              # v3
    _sql(spark, f"INSERT INTO delta.`{p}` VALUES (3, 'three')")                                        # v4
    snap = DeltaTable(p).snapshot()
    assert snap.configuration.get("delta.columnMapping.mode") == mode
    assert_same(compare_table(spark, p), f"column mapping '{mode}' table")


def test_in_commit_timestamps_from_creation_with_classic_checkpoints(spark, tmp_path):
    p = str(tmp_path / "ict")
    _sql(spark, f"""CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta TBLPROPERTIES
                    ('delta.enableInCommitTimestamps' = 'true', 'delta.checkpointInterval' = '3')""")  # v0
    for i in range(4):                                                                                 # v1..v4
        _sql(spark, f"INSERT INTO delta.`{p}` VALUES ({i}, 'r{i}'), ({i + 10}, 's{i}')")
    logs = _log_files(p)
    assert "00000000000000000003.checkpoint.parquet" in logs, logs  # and v4 replays on top of it
    assert DeltaTable(p).snapshot().in_commit_timestamps_enabled
    assert_same(compare_table(spark, p), "ICT-from-creation table")


def test_in_commit_timestamps_enabled_mid_history(spark, tmp_path):
    p = str(tmp_path / "ict_mid")
    _sql(spark, f"CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta")                         # v0
    _sql(spark, f"INSERT INTO delta.`{p}` VALUES (1, 'a')")                                            # v1
    _sql(spark, f"INSERT INTO delta.`{p}` VALUES (2, 'b')")                                            # v2
    _sql(spark, f"ALTER TABLE delta.`{p}` SET TBLPROPERTIES ('delta.enableInCommitTimestamps' = 'true')")  # v3
    _sql(spark, f"INSERT INTO delta.`{p}` VALUES (3, 'c')")                                            # v4
    _sql(spark, f"INSERT INTO delta.`{p}` VALUES (4, 'd')")                                            # v5
    snap = DeltaTable(p).snapshot()
    assert snap.configuration.get("delta.inCommitTimestampEnablementVersion") == "3"
    assert_same(compare_table(spark, p), "ICT-enabled-mid-history table")
    # the enablement boundary, densely: every millisecond between v2's and v4's timestamps
    hist = spark_history(spark, p)
    lo, hi = hist[2]["timestamp"], hist[4]["timestamp"]
    step = max(1, (hi - lo) // 40)
    assert_same(compare_timestamps(spark, p, DeltaTable(p), {}, extra=range(lo - 2, hi + 3, step)),
                "timestamps around the ICT enablement")


def test_multi_part_checkpoints(spark, tmp_path, sql_conf):
    p = str(tmp_path / "multipart")
    sql_conf({"spark.databricks.delta.checkpoint.partSize": "2"})
    _sql(spark, f"""CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta
                    TBLPROPERTIES ('delta.checkpointInterval' = '3')""")                               # v0
    for i in range(4):                                                                                 # v1..v4
        spark.createDataFrame([(i, "a"), (i + 10, "b"), (i + 20, "c")], "id long, s string") \
            .repartition(3).write.format("delta").mode("append").save(p)
    parts = [f for f in _log_files(p) if re.fullmatch(r"00000000000000000003\.checkpoint\.\d{10}\.\d{10}\.parquet", f)]
    assert len(parts) > 1, _log_files(p)
    assert_same(compare_table(spark, p), "multi-part checkpoint table")


def test_v2_checkpoints_with_sidecars(spark, tmp_path, sql_conf):
    """delta.checkpointPolicy=v2: a JSON and then a parquet top-level checkpoint, both with sidecars."""
    p = str(tmp_path / "v2cp")
    sql_conf({"spark.databricks.delta.checkpoint.partSize": "2"})
    _sql(spark, f"""CREATE TABLE delta.`{p}` (id BIGINT, s STRING) USING delta
                    TBLPROPERTIES ('delta.checkpointPolicy' = 'v2', 'delta.checkpointInterval' = '2')""")  # v0
    for i in range(4):                                                                                 # v1..v4
        if i == 2:
            sql_conf({"spark.databricks.delta.checkpointV2.topLevelFileFormat": "parquet"})
        spark.createDataFrame([(i, "a"), (i + 10, "b"), (i + 20, "c")], "id long, s string") \
            .repartition(3).write.format("delta").mode("append").save(p)
    logs = _log_files(p)
    assert any(re.fullmatch(r"00000000000000000002\.checkpoint\.[0-9a-f-]{36}\.json", f) for f in logs), logs
    assert any(re.fullmatch(r"00000000000000000004\.checkpoint\.[0-9a-f-]{36}\.parquet", f) for f in logs), logs
    sidecars = [f for f in os.listdir(os.path.join(p, "_delta_log", "_sidecars")) if f.endswith(".parquet")]
    assert len(sidecars) >= 2, sidecars
    assert_same(compare_table(spark, p), "v2-checkpoint table")
