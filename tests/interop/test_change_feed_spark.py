"""Change data feed against Delta Spark: our ``DeltaTable.changes`` equals ``table_changes``.

Delta Spark writes the tables (INSERT, UPDATE, DELETE, MERGE, with deletion vectors off and
on). Delta Spark 4.4 writes cdc files for its DV deletes too, so the feed from a DV
difference without cdc files is checked on the kernel corpus table (tests/log). Rows are compared as sorted sets, ``_commit_timestamp`` included:
Delta Spark's is the commit file's monotonized modification time, or the in-commit timestamp
where that is enabled (the ICT table has its commit files' mtimes moved to prove it).
"""
from __future__ import annotations

import os

import pytest

from airflow_provider_delta.log import DeltaTable
from interop_support import normalize_rows

pytestmark = pytest.mark.spark

COLUMNS = ["id", "name", "part", "_change_type", "_commit_version", "_commit_timestamp"]


def _sql(spark, text: str) -> None:
    spark.sql(text).collect()


def _write_history(spark, path: str, properties: str) -> None:
    """v0 create, v1 insert, v2 update, v3 delete, v4 merge (update + insert), v5 delete of a whole partition."""
    _sql(spark, f"CREATE TABLE delta.`{path}` (id BIGINT, name STRING, part STRING) USING delta "
                f"PARTITIONED BY (part) TBLPROPERTIES ('delta.enableChangeDataFeed' = 'true', {properties})")
    _sql(spark, f"INSERT INTO delta.`{path}` VALUES (1, 'a', 'x'), (2, 'b', 'x'), (3, 'c', 'y'), (4, 'd', 'y'), "
                "(5, 'e', 'z')")
    _sql(spark, f"UPDATE delta.`{path}` SET name = upper(name) WHERE id IN (1, 3)")
    _sql(spark, f"DELETE FROM delta.`{path}` WHERE id = 2")
    _sql(spark, f"MERGE INTO delta.`{path}` t USING (SELECT 4 AS id, 'D' AS name, 'y' AS part UNION ALL "
                f"SELECT 6, 'f', 'x') s ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *")
    _sql(spark, f"DELETE FROM delta.`{path}` WHERE part = 'z'")


def _theirs(spark, path: str, start: int, end: int) -> list:
    df = (spark.read.format("delta").option("readChangeFeed", "true").option("startingVersion", start)
          .option("endingVersion", end).load(path))
    return normalize_rows([r.asDict() for r in df.select(*COLUMNS).collect()])


def _ours(path: str, start: int, end: int) -> list:
    return normalize_rows(DeltaTable(path).changes(start, end, columns=COLUMNS).to_pylist())


@pytest.mark.parametrize("dvs", [False, True], ids=["files", "deletion-vectors"])
def test_changes_equal_delta_spark(spark, tmp_path, dvs):
    path = str(tmp_path / "t")
    _write_history(spark, path, f"'delta.enableDeletionVectors' = '{str(dvs).lower()}'")
    table = DeltaTable(path)
    assert table.latest_version() == 5
    if dvs:   # the table's files carry deletion vectors (removes are read with theirs)
        assert any(a.get("add", {}).get("deletionVector") for v in range(6) for a in table.read_commit(v))
    for start, end in ((0, 5), (2, 3), (4, 5)):
        ours, theirs = _ours(path, start, end), _theirs(spark, path, start, end)
        assert ours == theirs, (start, end)
    assert {r["_change_type"] for r in DeltaTable(path).changes(0).to_pylist()} == {
        "insert", "update_preimage", "update_postimage", "delete"}


def test_commit_timestamps_are_in_commit_timestamps(spark, tmp_path):
    """With ICT on, moving the commit files' mtimes changes nothing in either reader."""
    path = str(tmp_path / "t")
    _write_history(spark, path, "'delta.enableInCommitTimestamps' = 'true'")
    log = os.path.join(path, "_delta_log")
    for name in os.listdir(log):
        if name.endswith(".json"):
            os.utime(os.path.join(log, name), (1_000_000_000, 1_000_000_000))   # 2001
    table = DeltaTable(path)
    ict = {v: next(a["commitInfo"]["inCommitTimestamp"] for a in table.read_commit(v) if "commitInfo" in a)
           for v in range(6)}
    ours = table.changes(1).to_pylist()
    assert {r["_commit_version"]: int(r["_commit_timestamp"].timestamp() * 1000) for r in ours} == {
        v: ict[v] for v in range(1, 6)}
    spark.catalog.clearCache()
    assert normalize_rows([{k: r[k] for k in COLUMNS} for r in ours]) == _theirs(spark, path, 1, 5)
