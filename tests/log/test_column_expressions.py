"""Generated, identity and default columns on metadata changes, and one txn version per app id (issue 22).

Delta Spark drops generation/identity definitions from the new schema of a table whose
protocol does not support them (``updateMetadataInternal``), refuses a new column with a
default in the same commit (PROTOCOL.md "Default Columns"), and refuses two versions of one
app id in one commit (``checkForSetTransactionConflictAndDedup``). Data is never added where
such expressions are active: this package evaluates no SQL.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.actions import Metadata
from airflow_provider_delta.log.base.errors import InvalidArgumentError, UnsupportedFeatureError

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.int64())])


def _table(tmp_path, **props) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=props or None)
    t.write(pa.table({"id": [1], "v": [2]}, schema=SCHEMA))
    return t


def _set_field_metadata(table: DeltaTable, field: str, meta: dict, new_field: bool = False) -> int:
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    if new_field:
        schema["fields"].append({"name": field, "type": "long", "nullable": True, "metadata": meta})
    else:
        next(f for f in schema["fields"] if f["name"] == field)["metadata"] = meta
    with table.transaction(operation="CHANGE COLUMN") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), snap.metadata.partition_columns,
                                  dict(snap.metadata.configuration)))
    return txn.version


def _field_meta(table: DeltaTable, field: str) -> dict:
    schema = json.loads(table.snapshot().metadata.schema_string)
    return next(f for f in schema["fields"] if f["name"] == field).get("metadata") or {}


@pytest.mark.parametrize("meta", [{"delta.generationExpression": "id + 1"},
                                  {"delta.identity.start": 1, "delta.identity.step": 1,
                                   "delta.identity.allowExplicitInsert": False}])
def test_expressions_the_protocol_does_not_support_are_dropped_as_delta_spark_does(tmp_path, meta):
    table = _table(tmp_path)
    protocol = table.snapshot().protocol
    _set_field_metadata(table, "v", {**meta, "comment": "kept"})
    assert _field_meta(table, "v") == {"comment": "kept"}
    assert table.snapshot().protocol == protocol                 # no upgrade for them
    table.write(pa.table({"id": [2], "v": [3]}, schema=SCHEMA))  # and data can still be added


@pytest.mark.parametrize("writer,meta,feature", [
    (4, {"delta.generationExpression": "id + 1"}, "generatedColumns"),
    (6, {"delta.identity.start": 1, "delta.identity.step": 1, "delta.identity.allowExplicitInsert": False},
     "identityColumns"),
])
def test_supported_expressions_are_kept_and_then_no_data_is_added(tmp_path, writer, meta, feature):
    table = _table(tmp_path, **{"delta.minWriterVersion": str(writer)})
    _set_field_metadata(table, "v", meta)
    assert _field_meta(table, "v") == meta
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError) as e:
        table.write(pa.table({"id": [2], "v": [3]}, schema=SCHEMA))
    assert e.value.feature == feature
    assert table.latest_version() == version


def test_a_new_column_with_a_default_is_refused(tmp_path):
    table = _table(tmp_path)
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="default value in the same commit"):
        _set_field_metadata(table, "extra", {"CURRENT_DEFAULT": "42"}, new_field=True)
    assert table.latest_version() == version


def test_a_default_on_an_existing_column_enables_the_feature_and_stops_data_adds(tmp_path):
    table = _table(tmp_path)
    _set_field_metadata(table, "v", {"CURRENT_DEFAULT": "42"})
    assert "allowColumnDefaults" in table.snapshot().protocol.writer_features
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError) as e:
        table.write(pa.table({"id": [2], "v": [3]}, schema=SCHEMA))
    assert e.value.feature == "allowColumnDefaults"
    assert table.latest_version() == version


def test_one_version_per_app_id_in_a_commit(tmp_path):
    table = _table(tmp_path)
    txn = table.transaction()
    txn.set_txn("app", 3)
    txn.set_txn("app", 3)                      # the same again: deduplicated
    with pytest.raises(InvalidArgumentError, match="one version per app id"):
        txn.set_txn("app", 4)
    txn.commit()
    assert table.snapshot().transaction_version("app") == 3


def test_type_change_history_survives_a_schema_update(tmp_path):
    """PROTOCOL.md Type Widening: writers preserve delta.typeChanges when the schema is updated."""
    table = _table(tmp_path, **{"delta.enableTypeWidening": "true"})
    history = [{"fromType": "integer", "toType": "long"}]
    _set_field_metadata(table, "v", {"delta.typeChanges": history})
    _set_field_metadata(table, "extra", {}, new_field=True)       # a schema update that ...
    snap = table.snapshot()
    schema = json.loads(snap.metadata.schema_string)
    for f in schema["fields"]:
        f["metadata"] = {}                                         # ... and one that forgets the history
    with table.transaction(operation="CHANGE COLUMN") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps(schema), snap.metadata.partition_columns,
                                  dict(snap.metadata.configuration)))
    assert _field_meta(table, "v") == {"delta.typeChanges": history}
