"""Breaker findings: schema changes Delta Spark makes that our transaction refuses, or refuses unclearly."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from column_mapping_files import table_with_rows
from airflow_provider_delta.log.base.actions import Metadata
from airflow_provider_delta.log.base.errors import DeltaError

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())]))])
DATA = pa.table({"id": [1, 2, 3], "s": [{"a": 1}, {"a": 2}, None]}, schema=SCHEMA)


def _table(tmp_path, mapped: bool) -> DeltaTable:
    return table_with_rows(str(tmp_path / "t"), DATA, mapped)


@pytest.mark.parametrize("mapped", [False, True])
def test_adding_a_nested_nullable_field_is_metadata_only(tmp_path, mapped):
    table = _table(tmp_path, mapped)
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"][1]["type"]["fields"].append({"name": "b", "type": "string", "nullable": True, "metadata": {}})
    with table.transaction(operation="ADD COLUMNS") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), snap.metadata.partition_columns,
                                  dict(snap.metadata.configuration)))
    rows = DeltaTable(table.uri).snapshot().to_pyarrow().sort_by("id").column("s").to_pylist()
    assert rows == [{"a": 1, "b": None}, {"a": 2, "b": None}, None]


def test_partition_columns_given_as_a_list_are_the_same_partitioning(tmp_path):
    """Metadata(..., partition_columns=[]) on an unpartitioned table was refused with
    'partition columns cannot change from [] to []' (a list compared with the stored tuple)."""
    table = _table(tmp_path, mapped=False)
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"].append({"name": "c", "type": "string", "nullable": True, "metadata": {}})
    with table.transaction(operation="ADD COLUMNS") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), [], dict(snap.metadata.configuration)))
    assert DeltaTable(table.uri).snapshot().to_pyarrow().column_names == ["id", "s", "c"]


def test_a_dropped_highest_column_id_is_never_reused(tmp_path):
    """Register row M2 ("maxColumnId never lower"): its test kept every id in the schema, so the
    table's own maxColumnId was never what stopped the id going down (a mutant that ignores it
    passed). Here the columns with the highest ids are dropped: only maxColumnId remembers its id."""
    table = _table(tmp_path, mapped=True)                       # ids: id=1, s=2, s.a=3; maxColumnId 3
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"][1] = {"name": "c", "type": "long", "nullable": True, "metadata": {}}   # s (ids 2, 3) out, c in
    conf = {k: v for k, v in snap.metadata.configuration.items() if k != "delta.columnMapping.maxColumnId"}
    with table.transaction(operation="CHANGE COLUMN") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), snap.metadata.partition_columns, conf))
    meta = DeltaTable(table.uri).snapshot().metadata
    new_field = json.loads(meta.schema_string)["fields"][1]
    assert new_field["metadata"]["delta.columnMapping.id"] == 4
    assert meta.configuration["delta.columnMapping.maxColumnId"] == "4"


def test_a_replaced_column_does_not_inherit_the_type_change_history_of_the_old_one(tmp_path):
    """keep_type_changes restored delta.typeChanges by field path, so a column replaced by a new one
    of another type inherited the old column's history (integer->long on a string column)."""
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("v", pa.int64())]),
                              properties={"delta.enableTypeWidening": "true"})
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"][0]["metadata"] = {"delta.typeChanges": [{"fromType": "integer", "toType": "long"}]}
    with table.transaction() as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (), dict(snap.metadata.configuration)))
    snap = table.snapshot()
    replaced = {"type": "struct", "fields": [{"name": "v", "type": "string", "nullable": True, "metadata": {}}]}
    with table.transaction(operation="REPLACE TABLE") as txn:      # no data files: any schema may follow
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(replaced), (), dict(snap.metadata.configuration)))
    field = json.loads(DeltaTable(table.uri).snapshot().metadata.schema_string)["fields"][0]
    changes = field["metadata"].get("delta.typeChanges")
    assert changes is None or changes[-1]["toType"] == field["type"]


def _mapped_widened_table(tmp_path) -> DeltaTable:
    """id, v (long, widened from integer) with data, under column mapping."""
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.int64())]),
                              properties={"delta.enableTypeWidening": "true"})
    table.write(pa.table({"id": [1, 2], "v": [10, 20]}))
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.columnMapping.mode": "name"})
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"][1]["metadata"]["delta.typeChanges"] = [{"fromType": "integer", "toType": "long"}]
    with table.transaction() as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (), dict(snap.metadata.configuration)))
    return table


def _commit_fields(table: DeltaTable, fields: list[dict]) -> list[dict]:
    snap = table.snapshot()
    schema = {"type": "struct", "fields": fields}
    with table.transaction(operation="CHANGE COLUMN") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (), dict(snap.metadata.configuration)))
    return json.loads(DeltaTable(table.uri).snapshot().metadata.schema_string)["fields"]


def test_under_column_mapping_a_new_column_of_a_dropped_ones_name_and_type_starts_without_history(tmp_path):
    """The history belongs to the column (its id), as in Delta Spark, where it is the field's own
    metadata: ``v`` dropped and a new ``v`` of the same type added gets none; the old data stays unread."""
    table = _mapped_widened_table(tmp_path)
    old = json.loads(table.snapshot().metadata.schema_string)["fields"]
    fields = _commit_fields(table, [old[0], {"name": "v", "type": "long", "nullable": True, "metadata": {}}])
    assert fields[1]["metadata"]["delta.columnMapping.id"] != old[1]["metadata"]["delta.columnMapping.id"]
    assert "delta.typeChanges" not in fields[1]["metadata"]
    assert DeltaTable(table.uri).snapshot().to_pyarrow().column("v").to_pylist() == [None, None]


def test_under_column_mapping_a_renamed_column_keeps_its_history_when_a_schema_update_drops_it(tmp_path):
    table = _mapped_widened_table(tmp_path)
    old = json.loads(table.snapshot().metadata.schema_string)["fields"]
    meta = {k: v for k, v in old[1]["metadata"].items() if k != "delta.typeChanges"}
    fields = _commit_fields(table, [old[0], {"name": "w", "type": "long", "nullable": True, "metadata": meta}])
    assert fields[1]["metadata"]["delta.typeChanges"] == [{"fromType": "integer", "toType": "long"}]
    assert DeltaTable(table.uri).snapshot().to_pyarrow().column("w").to_pylist() == [10, 20]


def _drop_v_then_add(table: DeltaTable, new_field: dict) -> None:
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.columnMapping.mode": "name"})
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"] = [f for f in schema["fields"] if f["name"] != "v"]
    with table.transaction(operation="DROP COLUMN") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (), dict(snap.metadata.configuration)))
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"].append(new_field)
    with table.transaction(operation="ADD COLUMNS") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (), dict(snap.metadata.configuration)))


def _id_v_table(tmp_path) -> DeltaTable:
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    table.write(pa.table({"id": [1, 2], "v": [10, 20]}))
    return table


def test_a_new_column_reusing_a_dropped_physical_name_resurrects_its_data(tmp_path):
    table = _id_v_table(tmp_path)
    version = None
    try:
        _drop_v_then_add(table, {"name": "w", "type": "long", "nullable": True,
                                 "metadata": {"delta.columnMapping.id": 3, "delta.columnMapping.physicalName": "v"}})
    except DeltaError:
        version = table.latest_version()
    if version is None:           # committed: the new column must not show the dropped column's values
        assert DeltaTable(table.uri).snapshot().to_pyarrow().column("w").to_pylist() == [None, None]


def test_a_non_integer_column_mapping_id_is_an_untyped_error(tmp_path):
    table = _id_v_table(tmp_path)
    with pytest.raises(DeltaError):
        _drop_v_then_add(table, {"name": "w", "type": "long", "nullable": True,
                                 "metadata": {"delta.columnMapping.id": "abc", "delta.columnMapping.physicalName": "z"}})


def test_enabling_variant_shredding_adds_its_feature(tmp_path):
    """delta.enableVariantShredding=true was committed without the feature (PROTOCOL.md Variant
    Shredding: writers add it when enabling). The commit adds it as Delta Spark 4.4 does: under the
    name ``variantShredding-preview`` (its ``forceUsePreviewTableFeature`` defaults to true), a
    reader-writer feature (interop/test_writer_rules_spark.py shows Delta Spark's protocol)."""
    table = _id_v_table(tmp_path)
    version = table.latest_version()
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.enableVariantShredding": "true"})
    assert table.latest_version() == version + 1
    protocol = DeltaTable(table.uri).snapshot().protocol
    assert (protocol.min_reader_version, protocol.min_writer_version) == (3, 7)
    assert "variantShredding-preview" in protocol.writer_features
    assert "variantShredding-preview" in protocol.reader_features
    table.write(pa.table({"id": [3], "v": [30]}))          # the table stays writable (we never shred)
    assert DeltaTable(table.uri).snapshot().to_pyarrow().num_rows == 3


def test_enabling_shredding_where_the_feature_is_supported_changes_no_protocol(tmp_path):
    """Delta Spark adds the feature only where the protocol lacks it (under either name)."""
    table = _id_v_table(tmp_path)
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.feature.variantShredding-preview": "supported"})
    before = table.snapshot().protocol
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.enableVariantShredding": "true"})
    assert DeltaTable(table.uri).snapshot().protocol == before
