"""Break review s9 against Delta Spark: OPTIMIZE with the Spark engine on a column-mapped table (name
mode, renamed columns, stats columns by logical name) read back by Delta Spark."""
from __future__ import annotations

import json

import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.spark.optimize_engine import spark_optimize

pytestmark = pytest.mark.spark


def _renamed_table(spark, path: str, partitioned: bool) -> None:
    part = "PARTITIONED BY (p)" if partitioned else ""
    spark.sql(f"""CREATE TABLE delta.`{path}` (p STRING, id BIGINT, s STRUCT<x: BIGINT, y: STRING>, v STRING)
                  USING delta {part}
                  TBLPROPERTIES ('delta.columnMapping.mode' = 'name', 'delta.minReaderVersion' = '2',
                                 'delta.minWriterVersion' = '5')""")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN id TO ident")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN s.x TO xx")
    spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN v TO `v w`")
    if partitioned:
        spark.sql(f"ALTER TABLE delta.`{path}` RENAME COLUMN p TO part")
    spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES "
              "('delta.dataSkippingStatsColumns' = 'ident,s.xx,`v w`')")
    for i in range(4):
        spark.sql(f"INSERT INTO delta.`{path}` VALUES ('{'ab'[i % 2]}', {i}, named_struct('xx', {10 + i}, 'y', 'y{i}'), "
                  f"'w{i}')")


def _theirs(spark, path: str) -> list[dict]:
    return sorted((r.asDict(recursive=True) for r in spark.read.format("delta").load(path).collect()),
                  key=lambda r: r["ident"])


@pytest.mark.parametrize("partitioned", [False, True], ids=["flat", "partitioned"])
def test_spark_engine_optimizes_a_renamed_column_mapped_table_as_delta_spark_reads_it(spark, tmp_path, partitioned):
    path = str(tmp_path / "cm")
    _renamed_table(spark, path, partitioned)
    before = _theirs(spark, path)
    table = DeltaTable(path)
    m = spark_optimize(spark, table, target_size="64mb")
    assert m["numFilesRemoved"] == 4 and m["numFilesAdded"] == (2 if partitioned else 1)
    assert _theirs(spark, path) == before
    assert sorted(table.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["ident"]) == before
    # statistics keyed by physical names, for the stats columns only, as Delta Spark keys them
    snap = table.snapshot()
    fields = json.loads(snap.metadata.schema_string)["fields"]
    phys = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"] for f in fields}
    inner = {f["name"]: f["metadata"]["delta.columnMapping.physicalName"]
             for f in next(f for f in fields if f["name"] == "s")["type"]["fields"]}
    for stats in snap.files().column("stats").to_pylist():
        st = json.loads(stats)
        assert set(st["minValues"]) == {phys["ident"], phys["s"], phys["v w"]}
        assert set(st["minValues"][phys["s"]]) == {inner["xx"]}
    # Delta Spark skips files by those statistics: a filter on a renamed column prunes
    if partitioned:
        df = spark.read.format("delta").load(path).where("ident = 3")
        assert [r["ident"] for r in df.collect()] == [3]
    spark.sql(f"OPTIMIZE delta.`{path}`")                  # Delta Spark accepts the table afterwards
    assert _theirs(spark, path) == before


def test_delta_spark_reads_the_clone_of_a_catalog_managed_table(spark, tmp_path):
    import pyarrow as pa

    from airflow_provider_delta.log import SqlCatalog
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db", publish_grace_ms=0)
    src = DeltaTable.create(str(tmp_path / "src"), pa.schema([("id", pa.int64())]), catalog=catalog)
    DeltaTable(src.uri, catalog=catalog).write(pa.table({"id": [1, 2]}))
    clone = DeltaTable(src.uri, catalog=catalog).clone(str(tmp_path / "clone"))
    path = clone.storage.root
    assert sorted(r["id"] for r in spark.read.format("delta").load(path).collect()) == [1, 2]
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (3)")
    assert sorted(DeltaTable(path).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]


def test_delta_spark_resolves_a_dotdot_path_lexically(spark, tmp_path):
    """Delta Spark reads x.parquet for ln/../x.parquet (Hadoop's Path resolves '..' lexically), where the
    operating system reaches realdir/x.parquet (measured before the fix: Delta Spark [1], ours [2]); our
    reader now resolves lexically too. Vacuum keeps both files (another reader may follow the link)."""
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq

    root = str(tmp_path / "t")
    t = DeltaTable.create(root, pa.schema([("id", pa.int64())]))
    os.makedirs(f"{root}/realdir/sub")
    os.symlink(f"{root}/realdir/sub", f"{root}/ln")
    pq.write_table(pa.table({"id": [1]}), f"{root}/x.parquet")
    pq.write_table(pa.table({"id": [2]}), f"{root}/realdir/x.parquet")
    _commit_add_as_another_writer(root, "ln/../x.parquet", os.path.getsize(f"{root}/x.parquet"))
    assert [r["id"] for r in spark.read.format("delta").load(root).collect()] == [1]
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [1]      # ours reads the same file


def _commit_add_as_another_writer(root: str, path: str, size: int) -> None:
    """Version 1 adding ``path`` as another writer spells it (add_file refuses '.'/'..' segments, 543cee5)."""
    import time
    now = int(time.time() * 1000)
    add = {"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": now, "dataChange": True,
                   "stats": json.dumps({"numRecords": 1})}}
    with open(f"{root}/_delta_log/{1:020d}.json", "x") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": now, "operation": "WRITE"}}) + "\n" + json.dumps(add) + "\n")


@pytest.mark.parametrize("raw", ["x.parquet/", "../t/x.parquet", "a/../../t/x.parquet"])
def test_delta_spark_reads_the_file_under_the_root_that_vacuum_now_keeps(spark, tmp_path, raw):
    """Spellings vacuum placed outside the root or matched to no file (tests/log/test_break_s9_paths.py):
    Delta Spark reads x.parquet under the root for each, as our reader does, and vacuum keeps it."""
    import os
    import time

    import pyarrow as pa
    import pyarrow.parquet as pq
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, pa.schema([("id", pa.int64())]))
    pq.write_table(pa.table({"id": [7]}), f"{root}/x.parquet")
    _commit_add_as_another_writer(root, raw, os.path.getsize(f"{root}/x.parquet"))
    assert [r["id"] for r in spark.read.format("delta").load(root).collect()] == [7]
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]
    t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=int(time.time() * 1000) + 60_000)
    assert [r["id"] for r in spark.read.format("delta").load(root).collect()] == [7]
