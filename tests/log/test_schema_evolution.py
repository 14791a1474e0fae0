"""Schema changes that keep existing data files: at every level of nesting, as Delta Spark's ALTER TABLE.

New nullable fields (also inside structs, array elements and map values) are metadata only and read
as null in older files; under column mapping nested fields may be renamed or dropped too; anything
else (a field that goes without mapping, a type change, NOT NULL where files may hold nulls, a
NOT NULL new field) needs all data rewritten, and is refused otherwise with nothing written.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from column_mapping_files import table_with_rows
from airflow_provider_delta.log.base.actions import Metadata
from airflow_provider_delta.log.base.errors import InvalidArgumentError

SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("s", pa.struct([("a", pa.int64()), ("c", pa.string())])),
    ("l", pa.list_(pa.struct([("x", pa.int64())]))),
    ("m", pa.map_(pa.string(), pa.struct([("y", pa.float64())]))),
])
DATA = pa.table({"id": [1, 2], "s": [{"a": 1, "c": "u"}, None], "l": [[{"x": 5}], []],
                 "m": [[("k", {"y": 1.5})], None]}, schema=SCHEMA)


def _table(tmp_path, mapped: bool) -> DeltaTable:
    return table_with_rows(str(tmp_path / "t"), DATA, mapped)


def _schema(table: DeltaTable) -> dict:
    return json.loads(table.snapshot().metadata.schema_string)


def _commit(table: DeltaTable, schema: dict, operation: str = "CHANGE COLUMN") -> None:
    snap = table.snapshot()
    with table.transaction(operation=operation) as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (), dict(snap.metadata.configuration)))


def _rows(table: DeltaTable) -> list[dict]:
    return DeltaTable(table.uri).snapshot().to_pyarrow().sort_by("id").to_pylist()


def _field(name: str, typ="string", nullable: bool = True) -> dict:
    return {"name": name, "type": typ, "nullable": nullable, "metadata": {}}


@pytest.mark.parametrize("mapped", [False, True], ids=["plain", "mapped"])
def test_nullable_fields_added_inside_structs_arrays_and_maps_read_as_null_in_older_files(tmp_path, mapped):
    table = _table(tmp_path, mapped)
    schema = _schema(table)
    fields = {f["name"]: f for f in schema["fields"]}
    fields["s"]["type"]["fields"].insert(0, _field("first"))         # in any position, as ADD COLUMNS ... FIRST
    fields["l"]["type"]["elementType"]["fields"].append(_field("x2", "long"))
    fields["m"]["type"]["valueType"]["fields"].append(_field("y2"))
    version = table.latest_version()
    _commit(table, schema, "ADD COLUMNS")
    assert table.latest_version() == version + 1
    rows = _rows(table)
    assert rows[0]["s"] == {"first": None, "a": 1, "c": "u"} and rows[1]["s"] is None
    assert rows[0]["l"] == [{"x": 5, "x2": None}] and rows[0]["m"] == [("k", {"y": 1.5, "y2": None})]
    if mapped:      # the new fields got the next ids and fresh physical names, maxColumnId follows
        meta = DeltaTable(table.uri).snapshot().metadata
        new = json.loads(meta.schema_string)["fields"][1]["type"]["fields"][0]["metadata"]
        assert new["delta.columnMapping.physicalName"].startswith("col-")
        assert int(meta.configuration["delta.columnMapping.maxColumnId"]) == new["delta.columnMapping.id"] + 2


def test_a_new_nested_field_that_is_not_nullable_is_refused_and_nothing_is_written(tmp_path):
    table = _table(tmp_path, mapped=False)
    schema = _schema(table)
    schema["fields"][1]["type"]["fields"].append(_field("b", nullable=False))
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="new column 's.b' must be nullable"):
        _commit(table, schema, "ADD COLUMNS")
    assert table.latest_version() == version


def test_without_mapping_nested_fields_may_be_reordered_but_not_dropped_or_renamed(tmp_path):
    table = _table(tmp_path, mapped=False)
    schema = _schema(table)
    schema["fields"][1]["type"]["fields"].reverse()
    _commit(table, schema)
    assert _rows(table)[0]["s"] == {"c": "u", "a": 1}
    version = table.latest_version()
    for change in ("drop", "rename"):
        schema = _schema(table)
        if change == "drop":
            schema["fields"][1]["type"]["fields"].pop()
        else:
            schema["fields"][1]["type"]["fields"][0]["name"] = "renamed"
        with pytest.raises(InvalidArgumentError, match="would be dropped"):
            _commit(table, schema)
    assert table.latest_version() == version


def test_under_mapping_nested_fields_may_be_renamed_and_dropped(tmp_path):
    table = _table(tmp_path, mapped=True)
    schema = _schema(table)
    schema["fields"][1]["type"]["fields"][0]["name"] = "renamed"            # s.a -> s.renamed
    schema["fields"][1]["type"]["fields"].pop()                             # s.c dropped
    schema["fields"][2]["type"]["elementType"]["fields"][0]["name"] = "z"   # l.element.x -> z
    _commit(table, schema)
    rows = _rows(table)
    assert rows[0]["s"] == {"renamed": 1} and rows[0]["l"] == [{"z": 5}]


@pytest.mark.parametrize("mapped", [False, True], ids=["plain", "mapped"])
@pytest.mark.parametrize("change", ["type", "not-null", "element-not-null", "value-type"])
def test_nested_type_changes_and_tightened_nullability_are_refused_while_files_remain(tmp_path, mapped, change):
    table = _table(tmp_path, mapped)
    schema = _schema(table)
    fields = {f["name"]: f for f in schema["fields"]}
    if change == "type":
        fields["s"]["type"]["fields"][0]["type"] = "string"
    elif change == "not-null":
        fields["s"]["type"]["fields"][0]["nullable"] = False
    elif change == "element-not-null":
        fields["l"]["type"]["containsNull"] = False
    else:
        fields["m"]["type"]["valueType"]["fields"][0]["type"] = "float"
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="change type|NOT NULL"):
        _commit(table, schema)
    assert table.latest_version() == version
    # with every file rewritten in the same commit any schema may follow
    snap = table.snapshot()
    with table.transaction(operation="REPLACE TABLE") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (), dict(snap.metadata.configuration)))
        for path in snap.files().column("path").to_pylist():
            txn.remove_file(path)
    assert table.latest_version() == version + 1


def test_nullability_may_be_relaxed_at_every_level(tmp_path):
    strict = pa.schema([pa.field("id", pa.int64(), nullable=False),
                        pa.field("s", pa.struct([pa.field("a", pa.int64(), nullable=False)]))])
    table = DeltaTable.create(str(tmp_path / "t"), strict)
    table.write(pa.table({"id": [1], "s": [{"a": 1}]}, schema=strict))
    schema = _schema(table)
    schema["fields"][0]["nullable"] = True
    schema["fields"][1]["type"]["fields"][0]["nullable"] = True
    _commit(table, schema)
    assert _rows(table) == [{"id": 1, "s": {"a": 1}}]
    schema["fields"][0]["nullable"] = False           # and not tightened again while the file stays
    with pytest.raises(InvalidArgumentError, match="'id' would become NOT NULL"):
        _commit(table, schema)
