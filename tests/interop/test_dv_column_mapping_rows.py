"""Rows of Delta Spark tables with deletion vectors and column mapping, at every version.

Three readers must agree with Delta Spark's ``versionAsOf`` read at each version: our
``to_pyarrow``, our Spark reader of pinned snapshots (``read_snapshot``, which reads the
parquet files itself), and -- where it reads the table -- deltalake's kernel-based SQL
reader. The tables are made here with DELETE / UPDATE / MERGE (file DVs with array and
bitset containers -- Delta Spark 4.4 writes no run containers, the unit tests cover those --
and checkpoints carrying DVs), a DV rewritten inline (Delta Spark
reads that form too), and column mapping ``name`` / ``id`` with renames (top-level, nested,
partition column), drops and re-adds.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from interop_support import normalize_rows
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.read.deletion_vectors import read_deletion_vector
from airflow_provider_delta.spark import read_snapshot

pytestmark = pytest.mark.spark


def _sql(spark, text: str) -> None:
    spark.sql(text).collect()


def _rows(table: pa.Table) -> list:
    return normalize_rows(table.to_pylist())


def _sorted(table: pa.Table, key: str) -> pa.Table:
    """Flat tables compared whole in Arrow (fast for many rows): sorted, plain types."""
    def plain(col):
        t = col.type
        is_text = pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t)
        return col.combine_chunks().cast(pa.large_string() if is_text else t)
    return pa.table({c: plain(table.column(c)) for c in table.column_names}).sort_by(key)


def _deltalake_table(path: str, version: int) -> pa.Table | None:
    try:
        import deltalake
    except ImportError:
        return None
    dt = deltalake.DeltaTable(path, version=version)
    return pa.table(deltalake.QueryBuilder().register("t", dt).execute("select * from t").read_all())


def _compare_every_version(spark, path: str, deltalake: bool = True, key: str | None = None) -> list[str]:
    """Differences between Delta Spark's rows and each of our readers', at every version.
    With ``key`` (a flat table) rows are compared as sorted Arrow tables, else row by row."""
    table = DeltaTable(path)
    diffs = []
    norm = (lambda t: _sorted(t, key)) if key else _rows
    for v in range(table.latest_version() + 1):
        spark_df = spark.read.format("delta").option("versionAsOf", v).load(path)
        theirs = norm(spark_df.toArrow())
        snap = table.snapshot(version=v)
        answers = {"to_pyarrow": norm(snap.to_pyarrow()),
                   "read_snapshot": norm(read_snapshot(spark, table_uri=path, version=v).toArrow())}
        if deltalake:
            dl = _deltalake_table(path, v)
            answers["deltalake"] = norm(dl.select(spark_df.columns)) if dl is not None else None
        for who, ours in answers.items():
            if key and ours is not None and not ours.equals(theirs):
                diffs.append(f"v{v} {who}: {ours.num_rows} rows vs Delta Spark {theirs.num_rows}")
            elif not key and ours is not None and ours != theirs:
                diffs.append(f"v{v} {who}: {len(ours)} rows vs Delta Spark {len(theirs)}; only ours "
                             f"{sorted(set(ours) - set(theirs), key=repr)[:3]}, only Delta Spark "
                             f"{sorted(set(theirs) - set(ours), key=repr)[:3]}")
    return diffs


def _dvs(path: str, version: int | None = None) -> list[dict]:
    files = DeltaTable(path).snapshot(version=version).files()
    return [d for d in files.column("deletion_vector").to_pylist() if d]


def test_deletion_vectors_from_delete_update_merge(spark, tmp_path):
    p = str(tmp_path / "dv")
    # one 40,000-row file: deleting every 8th row gives a bitset container (5,000 values under one key)
    _sql(spark, f"""CREATE TABLE delta.`{p}` USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true',
                    'delta.checkpointInterval' = '3')
                    AS SELECT /*+ REPARTITION(1) */ id, CAST(id % 7 AS STRING) AS s FROM range(0, 40000)""")  # v0
    _sql(spark, f"DELETE FROM delta.`{p}` WHERE id % 8 = 0")                                          # v1
    _sql(spark, f"DELETE FROM delta.`{p}` WHERE id BETWEEN 20001 AND 29999")                          # v2: a range
    _sql(spark, f"""MERGE INTO delta.`{p}` t USING (SELECT id, 'm' AS s FROM range(39990, 40010)) s
                    ON t.id = s.id WHEN MATCHED THEN UPDATE SET * WHEN NOT MATCHED THEN INSERT *""")  # v3
    _sql(spark, f"UPDATE delta.`{p}` SET s = 'u' WHERE id < 5")                                       # v4
    dvs = _dvs(p)
    assert dvs and {d["storageType"] for d in dvs} == {"u"}
    assert max(d["cardinality"] for d in dvs) > 4096 + 8000  # a bitset container (Delta Spark writes no runs)
    assert any(f.startswith("00000000000000000003.checkpoint") for f in os.listdir(os.path.join(p, "_delta_log")))
    assert DeltaTable(p).snapshot().segment.checkpoint_version == 3
    diffs = _compare_every_version(spark, p, deltalake=True, key="id")
    assert not diffs, "\n".join(diffs)


def test_inline_deletion_vector_read_by_both(spark, tmp_path):
    """A commit that re-adds a file with its DV inline (Z85 in the log) instead of in a DV
    file: Delta Spark and we both read it, with the same rows as the file DV gave."""
    p = str(tmp_path / "inline")
    _sql(spark, f"""CREATE TABLE delta.`{p}` USING delta TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')
                    AS SELECT /*+ REPARTITION(1) */ id FROM range(0, 50)""")
    _sql(spark, f"DELETE FROM delta.`{p}` WHERE id IN (3, 4, 5, 40)")
    before = _rows(spark.read.format("delta").option("versionAsOf", 1).load(p).toArrow())
    table = DeltaTable(p)
    (dv,) = _dvs(p)
    assert read_deletion_vector(table.storage, dv).tolist() == [3, 4, 5, 40]
    bitmap = _file_bitmap(p, dv)
    inline = {"storageType": "i", "pathOrInlineDv": _z85(bitmap), "offset": None, "sizeInBytes": len(bitmap),
              "cardinality": dv["cardinality"]}
    (add,) = [a["add"] for a in map(json.loads, open(os.path.join(p, "_delta_log", f"{1:020d}.json")))
              if "add" in a]
    remove = {"path": add["path"], "deletionTimestamp": add["modificationTime"] + 1, "dataChange": False,
              "partitionValues": add["partitionValues"], "size": add["size"], "deletionVector": dv}
    actions = [{"commitInfo": {"timestamp": add["modificationTime"] + 1, "operation": "REORG"}},
               {"remove": remove}, {"add": {**add, "dataChange": False, "deletionVector": inline}}]
    with open(os.path.join(p, "_delta_log", f"{2:020d}.json"), "x") as f:
        f.write("\n".join(json.dumps(a) for a in actions) + "\n")
    dv_file = os.path.join(p, "deletion_vector_" + _uuid_of(dv) + ".bin")
    os.rename(dv_file, dv_file + ".away")  # version 2 must not need the DV file
    assert _dvs(p)[0]["storageType"] == "i"
    assert _rows(DeltaTable(p).snapshot().to_pyarrow()) == before
    assert _rows(read_snapshot(spark, table_uri=p).toArrow()) == before
    assert _rows(spark.read.format("delta").option("versionAsOf", 2).load(p).toArrow()) == before


def _file_bitmap(path: str, dv: dict) -> bytes:
    data = open(os.path.join(path, "deletion_vector_" + _uuid_of(dv) + ".bin"), "rb").read()
    start = dv["offset"] + 4
    return data[start:start + dv["sizeInBytes"]]


def _uuid_of(dv: dict) -> str:
    from airflow_provider_delta.log.read.deletion_vectors import dv_file_path
    return dv_file_path(dv)[len("deletion_vector_"):-len(".bin")]


def _z85(data: bytes) -> str:
    alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
    data += b"\0" * (-len(data) % 4)
    out = []
    for i in range(0, len(data), 4):
        word = int.from_bytes(data[i:i + 4], "big")
        out.append("".join(alphabet[(word // 85 ** k) % 85] for k in range(4, -1, -1)))
    return "".join(out)


@pytest.mark.parametrize("mode", ["name", "id"])
def test_column_mapping_renames_drops_nested_and_partitions(spark, tmp_path, mode):
    p = str(tmp_path / f"cm_{mode}")
    _sql(spark, f"""CREATE TABLE delta.`{p}` (id BIGINT, a STRING, b INT, region STRING,
                    pt STRUCT<x: INT, y: INT>, tags ARRAY<STRUCT<label: STRING>>, attrs MAP<STRING, STRUCT<score: DOUBLE>>)
                    USING delta PARTITIONED BY (region)
                    TBLPROPERTIES ('delta.columnMapping.mode' = '{mode}', 'delta.enableDeletionVectors' = 'true')""")  # v0
    _sql(spark, f"""INSERT INTO delta.`{p}` VALUES
                    (1, 'one', 10, 'eu', named_struct('x', 1, 'y', 2), array(named_struct('label', 'l1')),
                     map('k', named_struct('score', 0.5))),
                    (2, 'two', 20, 'us', NULL, array(), NULL),
                    (3, 'three', 30, 'eu', named_struct('x', 3, 'y', NULL), NULL, map())""")              # v1
    _sql(spark, f"ALTER TABLE delta.`{p}` RENAME COLUMN a TO a2")                                       # v2
    _sql(spark, f"ALTER TABLE delta.`{p}` RENAME COLUMN pt.x TO x2")                                    # v3
    _sql(spark, f"ALTER TABLE delta.`{p}` RENAME COLUMN region TO area")                                # v4
    _sql(spark, f"ALTER TABLE delta.`{p}` DROP COLUMN b")                                               # v5
    _sql(spark, f"ALTER TABLE delta.`{p}` ADD COLUMN b STRING")                                         # v6
    _sql(spark, f"""INSERT INTO delta.`{p}` (id, a2, area, pt, tags, attrs, b)
                    SELECT /*+ REPARTITION(1) */ id, 'more', 'us', named_struct('x2', 4, 'y', 4), NULL, NULL, 'new b'
                    FROM range(4, 8)""")                                                                # v7
    _sql(spark, f"DELETE FROM delta.`{p}` WHERE id = 5")                                                # v8 (a DV)
    snap = DeltaTable(p).snapshot()
    assert snap.configuration.get("delta.columnMapping.mode") == mode
    assert _dvs(p), "the DELETE should have written a deletion vector"
    assert snap.files().column("partition_values").to_pylist()[0][0][0].startswith("col-")
    # Delta Spark is the reference here; deltalake is compared on the corpus mapping tables
    diffs = _compare_every_version(spark, p, deltalake=False)
    assert not diffs, "\n".join(diffs)
    ours = DeltaTable(p).snapshot(version=1).to_pyarrow(columns=["id", "a"], filter=[("region", "=", "eu")])
    assert sorted(ours.column("id").to_pylist()) == [1, 3]
