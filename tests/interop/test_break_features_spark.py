"""Breaker findings against Delta Spark: properties and constraints a commit may turn on.

- ``delta.enableIcebergCompatV2=true`` / ``delta.universalFormat.enabledFormats=iceberg`` on a
  table without column mapping: Delta Spark refuses the ALTER; we commit the property with no
  feature in the protocol.
- ``delta.constraints.<name>`` on a table whose rows violate it: Delta Spark refuses (PROTOCOL.md
  "CHECK Constraints": the writer must validate existing data); we commit it unchecked.
- Column mapping enabled by us, then a nested column added and a column dropped by our
  ``set_metadata``: Delta Spark reads the same rows as from its own ALTERs, and the ids
  and physical names it would assign are the ones we assign.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from interop_support import spark_read
from test_writer_rules_spark import _last_metadata
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.actions import Metadata
from airflow_provider_delta.log.base.errors import DeltaError

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())]))])
DATA = pa.table({"id": [1, 2, 3], "s": [{"a": 1}, {"a": 2}, None]}, schema=SCHEMA)


def _twins(tmp_path: Path) -> tuple[Path, Path]:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    DeltaTable.create(str(ours), SCHEMA).write(DATA)
    shutil.copytree(ours, theirs)
    return ours, theirs


def _refused_by_us(path: Path, properties: dict) -> None:
    table = DeltaTable(str(path))
    version = table.latest_version()
    with pytest.raises(DeltaError):
        with table.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties(properties)
    assert DeltaTable(str(path)).latest_version() == version


def test_iceberg_compat_v2_without_column_mapping_is_refused_as_by_delta_spark(spark, tmp_path):
    ours, theirs = _twins(tmp_path)
    with pytest.raises(Exception, match="(?i)iceberg|column ?mapping"):
        spark.sql(f"ALTER TABLE delta.`{theirs}` SET TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true')")
    _refused_by_us(ours, {"delta.enableIcebergCompatV2": "true"})


def test_universal_format_iceberg_without_iceberg_compat_is_refused_as_by_delta_spark(spark, tmp_path):
    ours, theirs = _twins(tmp_path)
    with pytest.raises(Exception, match="(?i)iceberg|universal"):
        spark.sql(f"ALTER TABLE delta.`{theirs}` SET TBLPROPERTIES "
                  "('delta.universalFormat.enabledFormats' = 'iceberg')")
    _refused_by_us(ours, {"delta.universalFormat.enabledFormats": "iceberg"})


def test_check_constraint_violated_by_existing_rows_is_refused_as_by_delta_spark(spark, tmp_path):
    ours, theirs = _twins(tmp_path)
    with pytest.raises(Exception, match="(?i)violate|constraint"):
        spark.sql(f"ALTER TABLE delta.`{theirs}` ADD CONSTRAINT c CHECK (id > 5)")
    _refused_by_us(ours, {"delta.constraints.c": "id > 5"})


def _mapping(schema_string: str) -> list:
    """(name path, column id, physical name or 'fresh' for a generated col-<uuid>) of every field."""
    out = []

    def walk(fields, parent):
        for f in fields:
            meta = f.get("metadata") or {}
            phys = meta.get("delta.columnMapping.physicalName")
            out.append((parent + (f["name"],), meta.get("delta.columnMapping.id"),
                        "fresh" if phys and phys.startswith("col-") else phys))
            if isinstance(f["type"], dict) and f["type"].get("type") == "struct":
                walk(f["type"]["fields"], parent + (f["name"],))
    walk(json.loads(schema_string)["fields"], ())
    return out


def _change_schema(path: Path, change) -> None:
    table = DeltaTable(str(path))
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    change(schema)
    with table.transaction(operation="CHANGE COLUMN") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), snap.metadata.partition_columns,
                                  dict(snap.metadata.configuration)))


def _rows(spark, path: Path) -> tuple[list, list]:
    theirs = sorted(json.dumps(r.asDict(recursive=True), sort_keys=True) for r in spark_read(spark, str(path)).collect())
    ours = sorted(json.dumps(r, sort_keys=True) for r in DeltaTable(str(path)).snapshot().to_pyarrow().to_pylist())
    return theirs, ours


def test_column_mapping_changes_by_us_match_delta_spark_alters_step_by_step(spark, tmp_path):
    """Enable name mode, add a struct column, write (Spark), drop a column, re-add a dropped name:
    our metadata equals Delta Spark's own ALTERs (ids, physical names, maxColumnId) and Delta Spark
    and our reader read the same rows at each step. (deltalake 1.6.6 differs on both tables: it
    reads the new struct column as null, and a re-added ``id`` as the dropped column's values.)"""
    ours, theirs = _twins(tmp_path)
    with DeltaTable(str(ours)).transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.columnMapping.mode": "name"})
    spark.sql(f"ALTER TABLE delta.`{theirs}` SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name')")
    steps = [
        (lambda s: s["fields"].append({"name": "c", "type": {"type": "struct", "fields": [
            {"name": "x", "type": "long", "nullable": True, "metadata": {}}]}, "nullable": True, "metadata": {}}),
         "ADD COLUMNS (c struct<x: bigint>)"),
        (lambda s: s["fields"].pop(1), "DROP COLUMN s"),
        (lambda s: s["fields"].pop(0), "DROP COLUMN id"),
        (lambda s: s["fields"].append({"name": "id", "type": "long", "nullable": True, "metadata": {}}),
         "ADD COLUMNS (id bigint)"),
    ]
    for i, (change, alter) in enumerate(steps):
        _change_schema(ours, change)
        spark.sql(f"ALTER TABLE delta.`{theirs}` {alter}")
        if i == 0:
            for p in (ours, theirs):
                spark.sql(f"INSERT INTO delta.`{p}` VALUES (4, named_struct('a', 4), named_struct('x', 7))")
        our_meta, their_meta = _last_metadata(ours), _last_metadata(theirs)
        assert _mapping(our_meta["schemaString"]) == _mapping(their_meta["schemaString"]), alter
        assert our_meta["configuration"]["delta.columnMapping.maxColumnId"] == \
            their_meta["configuration"]["delta.columnMapping.maxColumnId"]
        spark_ours, we_ours = _rows(spark, ours)
        assert spark_ours == we_ours == _rows(spark, theirs)[0], alter
