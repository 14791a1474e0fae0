"""Break review s9 (breaker 5) of the delta.* name check (property_values.checked_names): findings as
fixed here (were strict xfails). Delta Spark is the reference: DeltaConfigs.validateConfigurations / normalizeConfigKeys
lower-case a ``delta.feature.*`` name (feature names are matched without regard to case,
TableFeature.featureNameToFeature), and UNSET TBLPROPERTIES normalizes the names it removes."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

SCHEMA = pa.schema([("id", pa.int64())])


def test_removing_a_known_property_named_in_another_case_removes_it(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.appendOnly": "true"})
    with t.transaction(operation="UNSET TBLPROPERTIES") as txn:
        txn.set_properties({"DELTA.APPENDONLY": None})
    assert "delta.appendOnly" not in DeltaTable(t.uri).snapshot().metadata.configuration


def test_a_stray_name_in_another_spelling_a_table_holds_is_still_removed_by_that_spelling(tmp_path):
    """Another engine's table may hold 'delta.appendonly' (not Delta Spark's spelling): naming it as it
    is stored removes that entry, not the canonical one."""
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.appendOnly": "false"})
    with t.transaction(operation="SET TBLPROPERTIES") as txn:      # as another engine would write it
        txn.set_metadata(txn.metadata.with_configuration({"delta.appendonly": "true"}))
    with t.transaction(operation="UNSET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.appendonly": None})
    assert DeltaTable(t.uri).snapshot().metadata.configuration == {"delta.appendOnly": "false"}


@pytest.mark.parametrize("name", ["Delta.Feature.deletionVectors", "DELTA.FEATURE.DELETIONVECTORS",
                                  "delta.feature.DeletionVectors"])
def test_a_feature_property_in_another_case_enables_the_feature(tmp_path, name):
    reference = DeltaTable.create(str(tmp_path / "ref"), SCHEMA,
                                  properties={"delta.feature.deletionVectors": "supported"}).snapshot()
    assert "deletionVectors" in (reference.protocol.writer_features or ())
    snap = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={name: "supported"}).snapshot()
    assert "deletionVectors" in (snap.protocol.writer_features or ())
    assert name not in snap.metadata.configuration


def test_a_feature_property_in_another_case_enables_the_feature_on_an_existing_table(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"DELTA.FEATURE.DELETIONVECTORS": "supported"})
    snap = DeltaTable(t.uri).snapshot()
    assert "deletionVectors" in (snap.protocol.writer_features or ())
    assert not any(k.lower().startswith("delta.feature.") for k in snap.metadata.configuration)


def test_an_unknown_feature_in_any_case_is_still_refused_and_nothing_is_written(tmp_path):
    from airflow_provider_delta.log import DeltaError
    with pytest.raises(DeltaError):
        DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"Delta.Feature.noSuchFeature": "supported"})
    assert not (tmp_path / "t" / "_delta_log").exists() or not any((tmp_path / "t" / "_delta_log").iterdir())
