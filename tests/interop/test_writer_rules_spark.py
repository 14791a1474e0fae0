"""Writer rules of issue 22 against Delta Spark: it reads what we write, and refuses what we refuse.

- Column mapping turned on by us (``set_properties``) gives the same ids, physical names and
  ``maxColumnId`` as Delta Spark's own ``ALTER TABLE ... SET TBLPROPERTIES`` on the same table;
  Delta Spark and deltalake read our table, and Delta Spark can rename a column of it afterwards.
  Both refuse ``id`` mode on an existing table.
- Vacuum on a table with a live file named by an absolute ``file:/`` URI: our dry run lists
  exactly what Delta Spark's ``VACUUM ... DRY RUN`` lists, the live file is not among them,
  and the table reads the same in both after our real run.
- A new deletion vector we commit on a DV-enabled table: Delta Spark reads the rows it leaves.
- Append-only: both refuse a DELETE; both refuse a new column with a default in one commit.
"""
from __future__ import annotations

import json
import os
import shutil
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from deltalake import DeltaTable as RsTable
from column_mapping_files import PLAIN_DATA, PLAIN_SCHEMA, field_mapping
from dv_encoding import bitmap_array, z85_encode

from interop_support import spark_read
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.actions import Metadata
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.errors import InvalidArgumentError, UnsupportedFeatureError
from airflow_provider_delta.log.maintenance.vacuum import vacuum

pytestmark = pytest.mark.spark

SCHEMA, DATA = PLAIN_SCHEMA, PLAIN_DATA


def _last_metadata(path: Path) -> dict:
    meta = None
    for f in sorted((path / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            if line.strip() and "metaData" in json.loads(line):
                meta = json.loads(line)["metaData"]
    return meta


def _rows(df) -> list:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in df.collect())


def test_column_mapping_enabled_by_us_matches_delta_spark_and_both_read_it(spark, tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    DeltaTable.create(str(ours), SCHEMA, partition_by=["p"]).write(DATA)
    shutil.copytree(ours, theirs)
    table = DeltaTable(str(ours))
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.columnMapping.mode": "name"})
    spark.sql(f"ALTER TABLE delta.`{theirs}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    our_meta, their_meta = _last_metadata(ours), _last_metadata(theirs)
    assert field_mapping(our_meta["schemaString"]) == field_mapping(their_meta["schemaString"])
    assert our_meta["configuration"]["delta.columnMapping.maxColumnId"] == \
        their_meta["configuration"]["delta.columnMapping.maxColumnId"]
    assert _rows(spark_read(spark, str(ours))) == _rows(spark_read(spark, str(theirs)))
    assert RsTable(str(ours)).to_pyarrow_table().num_rows == 2
    spark.sql(f"ALTER TABLE delta.`{ours}` RENAME COLUMN s TO renamed")
    renamed = DeltaTable(str(ours)).snapshot().to_pyarrow().sort_by("id")
    assert renamed.column("renamed").to_pylist() == DATA.column("s").to_pylist()
    # and our metadata-only rename under mapping is read by Delta Spark
    table = DeltaTable(str(theirs))
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    next(f for f in schema["fields"] if f["name"] == "id")["name"] = "ident"
    with table.transaction(operation="RENAME COLUMN") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), snap.metadata.partition_columns,
                                  dict(snap.metadata.configuration)))
    assert sorted(r.ident for r in spark_read(spark, str(theirs)).collect()) == [1, 2]


def test_id_mode_on_an_existing_table_is_refused_by_both(spark, tmp_path):
    path = tmp_path / "t"
    DeltaTable.create(str(path), SCHEMA, partition_by=["p"]).write(DATA)
    with pytest.raises(Exception, match="(?i)column mapping|mapping mode"):
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'id')")
    table = DeltaTable(str(path))
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError):
        with table.transaction() as txn:
            txn.set_properties({"delta.columnMapping.mode": "id"})
    assert table.latest_version() == version


def _age(root: Path, days: int) -> None:
    old = time.time() - days * 86_400
    for d, _dirs, files in os.walk(root):
        if "_delta_log" in d:
            continue
        for f in files:
            os.utime(Path(d) / f, (old, old))


def test_vacuum_agrees_with_delta_spark_on_an_absolute_file_uri(spark, tmp_path):
    path = tmp_path / "v"
    spark.range(0, 4).selectExpr("id", "cast(id % 2 as string) as p").write.format("delta") \
        .partitionBy("p").save(str(path))
    src = next(path.rglob("*.parquet"))
    live = path / "abs dir" / "live.parquet"
    live.parent.mkdir()
    live.write_bytes(src.read_bytes())
    stats = json.dumps({"numRecords": pq.ParquetFile(src).metadata.num_rows})
    table = DeltaTable(str(path))
    with table.transaction(operation="WRITE") as txn:
        txn.add_file(AddFile("file:" + str(live), live.stat().st_size, {"p": src.parent.name.split("=")[1]}, 1,
                             True, stats))
    (path / "stray.parquet").write_bytes(b"x")
    _age(path, 30)
    ours = vacuum(DeltaTable(str(path)), dry_run=True)["files_deleted"]
    theirs = spark.sql(f"VACUUM delta.`{path}` DRY RUN").collect()
    theirs_rel = sorted(os.path.relpath(r[0].replace("file:", ""), path) for r in theirs)
    assert ours == theirs_rel == ["stray.parquet"]
    expected = sorted(r.id for r in spark_read(spark, str(path)).collect())
    vacuum(DeltaTable(str(path)), dry_run=False)
    assert live.exists()
    assert sorted(r.id for r in spark_read(spark, str(path)).collect()) == expected
    assert sorted(DeltaTable(str(path)).snapshot().to_pyarrow().column("id").to_pylist()) == expected
    assert len(expected) == 4 + pq.ParquetFile(src).metadata.num_rows


def test_a_deletion_vector_we_add_is_read_by_delta_spark(spark, tmp_path):
    path = tmp_path / "dv"
    table = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]),
                              properties={"delta.enableDeletionVectors": "true"})
    table.write(pa.table({"id": [1, 2, 3]}))
    row = table.snapshot().files().to_pylist()[0]
    bitmap = bitmap_array([1])
    dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap), "cardinality": 1}
    with table.transaction(operation="DELETE") as txn:
        txn.remove_file(row["path"])
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True,
                             json.dumps({**json.loads(row["stats"]), "tightBounds": False}), deletion_vector=dv))
    assert sorted(r.id for r in spark_read(spark, str(path)).collect()) == [1, 3]


def test_append_only_delete_is_refused_by_both(spark, tmp_path):
    path = tmp_path / "ao"
    table = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]), properties={"delta.appendOnly": "true"})
    table.write(pa.table({"id": [1, 2]}))
    with pytest.raises(Exception, match="(?i)append"):
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="append-only"):
        with table.transaction(operation="DELETE") as txn:
            txn.remove_file(table.snapshot().files().column("path")[0].as_py())
    assert table.latest_version() == version




def test_a_new_column_with_a_default_is_refused_by_both(spark, tmp_path):
    path = tmp_path / "defaults"
    table = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]),
                              properties={"delta.feature.allowColumnDefaults": "supported"})
    table.write(pa.table({"id": [1]}))
    with pytest.raises(Exception, match="(?i)default"):
        spark.sql(f"ALTER TABLE delta.`{path}` ADD COLUMN c INT DEFAULT 42")
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"].append({"name": "c", "type": "integer", "nullable": True, "metadata": {"CURRENT_DEFAULT": "42"}})
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="default value in the same commit"):
        with table.transaction(operation="ADD COLUMNS") as txn:
            txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), snap.metadata.partition_columns,
                                      dict(snap.metadata.configuration)))
    assert table.latest_version() == version
