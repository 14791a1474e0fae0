"""Column mapping: physical names and ids of new columns are the writer's to assign.

PROTOCOL.md "Writer Requirements for Column Mapping": a new column's physical field path is unique
across all versions of the table, and ``maxColumnId`` grows with every new column. Delta Spark
never takes either from the user (ALTER TABLE ADD COLUMNS builds bare fields; writes strip
column mapping metadata from the data's schema), so a new column that brings its own is refused,
and nothing is written. RESTORE brings back an earlier version's own columns and is allowed.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.actions import Metadata
from airflow_provider_delta.log.base.errors import InvalidArgumentError

ID_KEY, NAME_KEY = "delta.columnMapping.id", "delta.columnMapping.physicalName"


def _fields(table: DeltaTable) -> list[dict]:
    return json.loads(table.snapshot().metadata.schema_string)["fields"]


def _commit(table: DeltaTable, fields: list[dict], operation: str = "CHANGE COLUMN") -> None:
    snap = table.snapshot()
    with table.transaction(operation=operation) as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps({"type": "struct", "fields": fields}), (),
                                  dict(snap.metadata.configuration)))


@pytest.fixture
def dropped_v(tmp_path) -> DeltaTable:
    """id, v (data 10, 20) under column mapping (physical names id, v; ids 1, 2), then v dropped."""
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    table.write(pa.table({"id": [1, 2], "v": [10, 20]}))
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.columnMapping.mode": "name"})
    _commit(table, _fields(table)[:1], "DROP COLUMNS")
    return table


@pytest.mark.parametrize("metadata", [
    {NAME_KEY: "v"},                                    # the dropped column's physical name
    {ID_KEY: 3, NAME_KEY: "v"},
    {NAME_KEY: "col-chosen-by-the-caller"},             # any name not the writer's own
    {ID_KEY: 2},                                        # the dropped column's id
    {ID_KEY: 1},                                        # an id in use (also a duplicate)
], ids=["dropped-name", "dropped-name-new-id", "own-name", "dropped-id", "live-id"])
def test_a_new_column_bringing_a_physical_name_or_an_old_id_is_refused_and_nothing_is_written(dropped_v, metadata):
    version = dropped_v.latest_version()
    with pytest.raises(InvalidArgumentError, match="new column 'w'|assigned twice"):
        _commit(dropped_v, [*_fields(dropped_v), {"name": "w", "type": "long", "nullable": True,
                                                  "metadata": metadata}], "ADD COLUMNS")
    assert dropped_v.latest_version() == version
    assert dropped_v.snapshot().to_pyarrow().column_names == ["id"]


def test_a_new_nested_field_bringing_a_physical_name_is_refused(tmp_path):
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("s", pa.struct([("a", pa.int64())]))]))
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.columnMapping.mode": "name"})
    fields = _fields(table)
    fields[0]["type"]["fields"].append({"name": "b", "type": "long", "nullable": True, "metadata": {NAME_KEY: "x"}})
    with pytest.raises(InvalidArgumentError, match="new column 's.b'"):
        _commit(table, fields, "ADD COLUMNS")


def test_a_new_column_without_mapping_metadata_gets_a_fresh_name_and_id_and_reads_as_null(dropped_v):
    _commit(dropped_v, [*_fields(dropped_v), {"name": "v", "type": "long", "nullable": True, "metadata": {}}],
            "ADD COLUMNS")
    new = _fields(dropped_v)[1]["metadata"]
    assert new[ID_KEY] == 3 and new[NAME_KEY].startswith("col-")
    assert dropped_v.snapshot().to_pyarrow().column("v").to_pylist() == [None, None]


def test_existing_columns_keep_their_physical_names_through_renames(dropped_v):
    fields = _fields(dropped_v)
    fields[0]["name"] = "key"
    _commit(dropped_v, fields, "RENAME COLUMN")
    assert dropped_v.snapshot().to_pyarrow().column("key").to_pylist() == [1, 2]


def test_restore_brings_back_the_dropped_column_under_its_own_physical_name(dropped_v):
    dropped_v.restore(version=dropped_v.latest_version() - 1)
    got = dropped_v.snapshot().to_pyarrow().sort_by("id")
    assert got.column("v").to_pylist() == [10, 20]


def test_turning_mapping_on_with_a_physical_name_other_than_the_current_name_is_refused(tmp_path):
    """Existing files hold each column under its current name, which becomes its physical name."""
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": [1]}))
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    schema["fields"][0]["metadata"] = {NAME_KEY: "elsewhere"}
    with pytest.raises(InvalidArgumentError, match="physical name 'elsewhere'"):
        with table.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (),
                                      {**snap.metadata.configuration, "delta.columnMapping.mode": "name"}))
    assert table.latest_version() == snap.version
    schema["fields"][0]["metadata"] = {NAME_KEY: "id"}          # its current name: what the writer assigns
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), (),
                                  {**snap.metadata.configuration, "delta.columnMapping.mode": "name"}))
    assert DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist() == [1]
