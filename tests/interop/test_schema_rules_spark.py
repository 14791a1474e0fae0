"""Schema and feature rules of the issue 22 review against Delta Spark: the same change made by both.

- A nullable field added inside a struct: our metadata-only commit gives the schema (and, under
  column mapping, the id and ``maxColumnId``) that Delta Spark's ``ALTER TABLE ADD COLUMNS (s.b ...)``
  gives the same table; Delta Spark reads our table as its own and writes the new field into it.
- ``delta.enableVariantShredding=true``: our commit adds the feature Delta Spark's ``SET TBLPROPERTIES``
  adds (``variantShredding-preview`` in both lists); Delta Spark writes to our table afterwards.
- Type change history under column mapping: a column Delta Spark widened keeps its ``delta.typeChanges``
  through a rename in both, and a new column of the dropped one's name starts without it in both.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from interop_support import spark_read
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.actions import Metadata

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())]))])
DATA = pa.table({"id": [1, 2, 3], "s": [{"a": 1}, {"a": 2}, None]}, schema=SCHEMA)


def _snapshot_json(path: Path) -> tuple[dict, dict]:
    """(protocol, metaData) of the latest version, from the log as written."""
    protocol = metadata = None
    for f in sorted((path / "_delta_log").glob("*.json")):
        for line in f.read_text().splitlines():
            action = json.loads(line) if line.strip() else {}
            protocol = action.get("protocol", protocol)
            metadata = action.get("metaData", metadata)
    return protocol, metadata


def _shape(schema_string: str, with_ids: bool) -> list:
    """Every field's path, type, nullability (and column id): physical names are random in both."""
    out: list = []

    def walk(t, prefix):
        if isinstance(t, dict) and t.get("type") == "struct":
            for f in t["fields"]:
                meta = f.get("metadata") or {}
                out.append((prefix + f["name"], f["type"] if isinstance(f["type"], str) else f["type"]["type"],
                            f["nullable"], meta.get("delta.columnMapping.id") if with_ids else None,
                            meta.get("delta.typeChanges")))
                walk(f["type"], prefix + f["name"] + ".")

    walk(json.loads(schema_string), "")
    return out


def _rows(df) -> list:
    return sorted(json.dumps(r.asDict(recursive=True), sort_keys=True, default=str) for r in df.collect())


def _set_schema(table: DeltaTable, schema: dict, operation: str) -> None:
    snap = table.snapshot()
    with table.transaction(operation=operation) as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), snap.metadata.partition_columns,
                                  dict(snap.metadata.configuration)))


@pytest.mark.parametrize("mapped", [False, True], ids=["plain", "mapped"])
def test_a_nested_field_added_by_us_is_what_delta_spark_adds(spark, tmp_path, mapped):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    table = DeltaTable.create(str(ours), SCHEMA)
    table.write(DATA)
    if mapped:
        with table.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties({"delta.columnMapping.mode": "name"})
    shutil.copytree(ours, theirs)
    schema = json.loads(table.snapshot().metadata.schema_string)
    schema["fields"][1]["type"]["fields"].append({"name": "b", "type": "string", "nullable": True, "metadata": {}})
    _set_schema(table, schema, "ADD COLUMNS")
    spark.sql(f"ALTER TABLE delta.`{theirs}` ADD COLUMNS (s.b STRING)")

    (_, our_meta), (_, their_meta) = _snapshot_json(ours), _snapshot_json(theirs)
    assert _shape(our_meta["schemaString"], mapped) == _shape(their_meta["schemaString"], mapped)
    if mapped:
        assert our_meta["configuration"]["delta.columnMapping.maxColumnId"] == \
            their_meta["configuration"]["delta.columnMapping.maxColumnId"]
    assert _rows(spark_read(spark, str(ours))) == _rows(spark_read(spark, str(theirs)))
    spark.sql(f"INSERT INTO delta.`{ours}` VALUES (4, named_struct('a', 4, 'b', 'new'))")
    got = DeltaTable(str(ours)).snapshot().to_pyarrow().sort_by("id").column("s").to_pylist()
    assert got == [{"a": 1, "b": None}, {"a": 2, "b": None}, None, {"a": 4, "b": "new"}]


def test_enabling_variant_shredding_adds_the_feature_delta_spark_adds(spark, tmp_path):
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    DeltaTable.create(str(ours), SCHEMA).write(DATA)
    shutil.copytree(ours, theirs)
    with DeltaTable(str(ours)).transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.enableVariantShredding": "true"})
    spark.sql(f"ALTER TABLE delta.`{theirs}` SET TBLPROPERTIES ('delta.enableVariantShredding' = 'true')")
    (our_protocol, our_meta), (their_protocol, their_meta) = _snapshot_json(ours), _snapshot_json(theirs)
    assert "variantShredding-preview" in their_protocol["readerFeatures"]
    assert (our_protocol["minReaderVersion"], our_protocol["minWriterVersion"]) == \
        (their_protocol["minReaderVersion"], their_protocol["minWriterVersion"])
    assert set(our_protocol["readerFeatures"]) == set(their_protocol["readerFeatures"])
    assert set(our_protocol["writerFeatures"]) == set(their_protocol["writerFeatures"])
    assert our_meta["configuration"]["delta.enableVariantShredding"] == "true"
    spark.sql(f"INSERT INTO delta.`{ours}` VALUES (4, named_struct('a', 4))")
    assert DeltaTable(str(ours)).snapshot().to_pyarrow().num_rows == 4


def test_type_change_history_follows_the_column_as_in_delta_spark(spark, tmp_path):
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    spark.sql(f"CREATE TABLE delta.`{theirs}` (id BIGINT, v INT) USING delta TBLPROPERTIES ("
              "'delta.enableTypeWidening' = 'true', 'delta.columnMapping.mode' = 'name')")
    spark.sql(f"INSERT INTO delta.`{theirs}` VALUES (1, 10), (2, 20)")
    spark.sql(f"ALTER TABLE delta.`{theirs}` CHANGE COLUMN v TYPE BIGINT")
    shutil.copytree(theirs, ours)
    table = DeltaTable(str(ours))
    fields = json.loads(table.snapshot().metadata.schema_string)["fields"]
    assert fields[1]["metadata"]["delta.typeChanges"]          # Delta Spark recorded the widening

    # a rename (our schema given without the history, as one built from Arrow would be) keeps it
    spark.sql(f"ALTER TABLE delta.`{theirs}` RENAME COLUMN v TO w")
    renamed = dict(fields[1], name="w", metadata={k: v for k, v in fields[1]["metadata"].items()
                                                  if k != "delta.typeChanges"})
    _set_schema(table, {"type": "struct", "fields": [fields[0], renamed]}, "RENAME COLUMN")
    assert _shape(_snapshot_json(ours)[1]["schemaString"], True) == \
        _shape(_snapshot_json(theirs)[1]["schemaString"], True)

    # dropped, and a new column of its name and type added: no history in either
    spark.sql(f"ALTER TABLE delta.`{theirs}` DROP COLUMN w")
    spark.sql(f"ALTER TABLE delta.`{theirs}` ADD COLUMNS (w BIGINT)")
    _set_schema(table, {"type": "struct", "fields": [fields[0]]}, "DROP COLUMNS")
    _set_schema(table, {"type": "struct", "fields": [
        fields[0], {"name": "w", "type": "long", "nullable": True, "metadata": {}}]}, "ADD COLUMNS")
    ours_shape = _shape(_snapshot_json(ours)[1]["schemaString"], True)
    assert ours_shape == _shape(_snapshot_json(theirs)[1]["schemaString"], True)
    assert ours_shape[1][4] is None
    assert _rows(spark_read(spark, str(ours))) == _rows(spark_read(spark, str(theirs)))
