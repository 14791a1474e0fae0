"""s8-break-sm review of #24 (merge e28acab) against Delta Spark on the jars: OPTIMIZE of
column-mapped tables with nested maps/arrays of structs, awkward column names and
``delta.dataSkippingStatsColumns`` (statistics compared with Delta Spark's own OPTIMIZE of the
same table, data skipping checked through Delta Spark's filtered reads), and the RESTORE / CLONE
``commitInfo`` compared field by field with Delta Spark's."""
from __future__ import annotations

import json
import shutil

import pytest

from interop_support import normalize_rows, spark_read
from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark

COLUMNS = ("id", "`a b.c`", "m", "l", "st", "p")


def _cm_table(spark, path: str, mode: str) -> None:
    """Three appends by Delta Spark to a ``mode``-mapped table with nested types and a column whose
    name has a space and a dot; statistics only for the columns dataSkippingStatsColumns names."""
    for i in range(3):
        df = spark.range(i * 20, (i + 1) * 20).selectExpr(
            "id", "id * 1.5d as `a b.c`",
            "map('k', named_struct('x', id, 'y', cast(id as string))) as m",
            "array(named_struct('x', id, 'y', 'e')) as l",
            "named_struct('inner', named_struct('v', id * 3), 'w', 'w') as st",
            "cast(id % 2 as string) as p")
        writer = df.repartition(2).write.format("delta").mode("append").partitionBy("p")
        if i == 0:
            writer = (writer.option("delta.columnMapping.mode", mode)
                      .option("delta.dataSkippingStatsColumns", "id,`a b.c`,st.inner.v")
                      .option("delta.minReaderVersion", "2").option("delta.minWriterVersion", "5"))
        writer.save(path)
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN st TO st2")


def _stats_by_path(path: str) -> list[dict]:
    snap = DeltaTable(path).snapshot()
    return [json.loads(s) for s in snap.files().column("stats").to_pylist()]


def _key_shape(stats: dict) -> dict:
    """The nested key structure of one file's statistics (values dropped)."""
    def shape(v):
        return {k: shape(x) for k, x in sorted(v.items())} if isinstance(v, dict) else None
    return {k: shape(stats[k]) for k in ("minValues", "maxValues", "nullCount") if k in stats}


@pytest.mark.parametrize("mode", ["name", "id"])
def test_our_optimize_of_a_nested_column_mapped_table_matches_delta_spark(spark, tmp_path, mode):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _cm_table(spark, ours, mode)
    shutil.copytree(ours, theirs)
    before = normalize_rows([r.asDict(recursive=True) for r in spark_read(spark, ours).collect()])
    m = DeltaTable(ours).optimize()
    assert m["version"] is not None
    spark.sql(f"OPTIMIZE delta.`{theirs}`")
    got = normalize_rows([r.asDict(recursive=True) for r in spark_read(spark, ours).collect()])
    assert got == before
    assert normalize_rows(DeltaTable(ours).snapshot().to_pyarrow().to_pylist()) == before
    # data skipping by Delta Spark on our statistics gives the same answers as a full read
    for cond in ("id = 7", "`a b.c` > 80", "st2.inner.v = 21", "p = '1' and id < 5"):
        expect = sorted(r.id for r in spark.read.format("delta").load(theirs).where(cond).select("id").collect())
        got_ids = sorted(r.id for r in spark.read.format("delta").load(ours).where(cond).select("id").collect())
        assert got_ids == expect, cond
    spark.range(500, 503).selectExpr(
        "id", "0.5d as `a b.c`", "map('z', named_struct('x', id, 'y', 'n')) as m",
        "array(named_struct('x', id, 'y', 'n')) as l", "named_struct('inner', named_struct('v', id), 'w', 'n') as st2",
        "'0' as p").write.format("delta").mode("append").save(ours)
    assert len(spark.read.format("delta").load(ours).collect()) == 63


def test_our_optimize_keeps_the_statistics_delta_spark_keeps_under_column_mapping(spark, tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    _cm_table(spark, ours, "name")
    shutil.copytree(ours, theirs)
    DeltaTable(ours).optimize()
    spark.sql(f"OPTIMIZE delta.`{theirs}`")
    mine, spark_stats = _stats_by_path(ours), _stats_by_path(theirs)
    assert {json.dumps(_key_shape(s), sort_keys=True) for s in mine} == \
        {json.dumps(_key_shape(s), sort_keys=True) for s in spark_stats}


def _commit_info(path: str, version: int) -> dict:
    (info,) = [a["commitInfo"] for a in DeltaTable(path).read_commit(version) if "commitInfo" in a]
    return info


#: what differs between any two commits by nature (times, ids, engine, who ran it)
_VOLATILE = {"timestamp", "inCommitTimestamp", "txnId", "engineInfo", "userName", "userId", "clusterId",
             "notebook", "job", "userMetadata", "tags"}


def _comparable(info: dict) -> dict:
    return {k: v for k, v in info.items() if k not in _VOLATILE and k != "operationMetrics"}


def test_restore_commit_info_matches_delta_spark(spark, tmp_path):
    ours, theirs = str(tmp_path / "ours"), str(tmp_path / "theirs")
    for path in (ours, theirs):
        for i in range(3):
            spark.range(i * 5, i * 5 + 5).selectExpr("id", "id % 2 as part").write.format("delta") \
                .mode("append").partitionBy("part").save(path)
    spark.sql(f"RESTORE TABLE delta.`{theirs}` TO VERSION AS OF 1")
    DeltaTable(ours).restore(1)
    mine, ref = _comparable(_commit_info(ours, 3)), _comparable(_commit_info(theirs, 3))
    assert mine == ref
    assert set(_commit_info(ours, 3)) - _VOLATILE == set(_commit_info(theirs, 3)) - _VOLATILE


def test_clone_commit_info_matches_delta_spark(spark, tmp_path):
    src = str(tmp_path / "src")
    spark.range(0, 10).selectExpr("id", "id % 2 as part").write.format("delta").partitionBy("part").save(src)
    spark.range(10, 12).selectExpr("id", "id % 2 as part").write.format("delta").mode("append").save(src)
    theirs = str(tmp_path / "theirs")
    spark.sql(f"CREATE TABLE delta.`{theirs}` SHALLOW CLONE delta.`{src}` VERSION AS OF 0")
    ours = str(tmp_path / "ours")
    DeltaTable(src).clone(ours, version=0)
    mine, ref = _comparable(_commit_info(ours, 0)), _comparable(_commit_info(theirs, 0))
    mine.get("operationParameters", {}).pop("source", None)
    ref.get("operationParameters", {}).pop("source", None)
    assert mine == ref
    assert set(_commit_info(ours, 0)) - _VOLATILE == set(_commit_info(theirs, 0)) - _VOLATILE
