"""Turning on Iceberg compatibility / UniForm Iceberg (base/iceberg_compat.py) and adding CHECK constraints
(write/check_constraints.py): refused where Delta Spark refuses, and where we cannot keep the rule;
allowed where nothing needs checking. Nothing is committed by a refused transaction."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError, UnsupportedFeatureError

SCHEMA = pa.schema([("id", pa.int64())])


def _table(tmp_path, rows: bool = True, **properties) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=properties or None)
    if rows:
        t.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    return t


def _set(t: DeltaTable, properties: dict, error: type) -> str:
    """Commit ``properties``, expecting ``error``; returns its message."""
    version = t.latest_version()
    with pytest.raises(error) as e:
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties(properties)
    assert DeltaTable(t.uri).latest_version() == version
    return str(e.value)


def test_iceberg_compat_without_column_mapping_names_column_mapping(tmp_path):
    assert "columnMapping.mode" in _set(_table(tmp_path), {"delta.enableIcebergCompatV2": "true"},
                                        InvalidArgumentError)


def test_uniform_iceberg_without_compat_names_iceberg_compat(tmp_path):
    assert "enableIcebergCompatV2" in _set(_table(tmp_path), {"delta.universalFormat.enabledFormats": "iceberg"},
                                           InvalidArgumentError)


def test_iceberg_compat_with_column_mapping_is_refused_as_unsupported(tmp_path):
    """Delta Spark would go on here; we do not keep icebergCompat's rules, so we refuse."""
    t = _table(tmp_path)
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.columnMapping.mode": "name"})
    _set(t, {"delta.enableIcebergCompatV2": "true", "delta.universalFormat.enabledFormats": "iceberg"},
         UnsupportedFeatureError)


def test_a_new_table_with_iceberg_compat_is_refused(tmp_path):
    with pytest.raises(UnsupportedFeatureError):
        DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableIcebergCompatV2": "true"})
    assert not (tmp_path / "t" / "_delta_log" / f"{0:020d}.json").exists()


def test_a_check_constraint_on_a_table_with_rows_is_refused(tmp_path):
    _set(_table(tmp_path), {"delta.constraints.c": "id > 5"}, UnsupportedFeatureError)


def test_changing_a_constraint_on_an_empty_table_is_committed(tmp_path):
    t = _table(tmp_path, rows=False, **{"delta.constraints.c": "id > 0"})
    with t.transaction(operation="SET TBLPROPERTIES") as txn:     # no rows: nothing to validate
        txn.set_properties({"delta.constraints.c": "id > 5"})
    assert DeltaTable(t.uri).snapshot().configuration["delta.constraints.c"] == "id > 5"


def test_a_check_constraint_on_an_empty_table_is_committed(tmp_path):
    t = _table(tmp_path, rows=False)
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.constraints.c": "id > 5"})
    assert DeltaTable(t.uri).snapshot().configuration["delta.constraints.c"] == "id > 5"


def test_other_property_changes_on_a_table_with_a_constraint_are_unaffected(tmp_path):
    t = _table(tmp_path, rows=False, **{"delta.constraints.c": "id > 0"})
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"team": "x"})
    assert DeltaTable(t.uri).snapshot().configuration["team"] == "x"


def test_turning_on_the_change_data_feed_at_writer_7_lists_the_feature(tmp_path):
    """PROTOCOL "Writer Requirements for AddCDCFile": at writer 7 the property counts only with
    ``changeDataFeed`` in writerFeatures, so the commit that sets it adds the feature."""
    t = _table(tmp_path, **{"delta.feature.domainMetadata": "supported"})
    assert t.snapshot().protocol.min_writer_version == 7
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.enableChangeDataFeed": "true"})
    protocol = DeltaTable(t.uri).snapshot().protocol
    assert protocol.min_writer_version == 7 and "changeDataFeed" in protocol.writer_features


def test_in_commit_timestamps_stay_on_a_catalog_managed_table(tmp_path):
    """PROTOCOL "Catalog-managed tables": they use in-commit timestamps, so a commit turning them off
    is refused and nothing is ratified."""
    from airflow_provider_delta.log import SqlCatalog
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/catalog.db", publish_grace_ms=0)
    try:
        t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, catalog=catalog)
        assert t.snapshot().configuration["delta.enableInCommitTimestamps"] == "true"
        version = t.latest_version()
        with pytest.raises(InvalidArgumentError, match="in-commit timestamps"):
            with t.transaction(operation="SET TBLPROPERTIES") as txn:
                txn.set_properties({"delta.enableInCommitTimestamps": "false"})
        assert catalog.latest_versions([t.uri]) == {t.uri: version}
    finally:
        catalog.dispose()
