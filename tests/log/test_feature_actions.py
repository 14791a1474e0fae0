"""Actions a table feature governs are written only where the protocol declares the feature (issue 22),
and append-only is checked against the table as read (and the latest, through the conflict check).

Each test checks the typed error and that nothing was written, and the happy path next to it.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable
from dv_encoding import bitmap_array, z85_encode

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.actions import Protocol
from airflow_provider_delta.log.base.commit_actions import AddFile, DomainMetadata
from airflow_provider_delta.log.base.errors import (ConcurrentModificationError, InvalidArgumentError,
                                                    UnsupportedFeatureError)
from airflow_provider_delta.log.base.feature_actions import check_domains

from test_conflict_rules import raw_commit

SCHEMA = pa.schema([("id", pa.int64())])


def _table(tmp_path, **props) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=props or None)
    t.write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    return t


def _live(table: DeltaTable) -> dict:
    return table.snapshot().files().to_pylist()[0]


def _inline_dv(rows: list[int]) -> dict:
    bitmap = bitmap_array(rows)
    return {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap),
            "cardinality": len(rows)}


def _with_dv(table: DeltaTable, dv: dict, stats: dict | None = None) -> int:
    row = _live(table)
    base = json.loads(row["stats"])
    with table.transaction(operation="DELETE") as txn:
        txn.remove_file(row["path"])
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True,
                             json.dumps({**base, **(stats if stats is not None else {"tightBounds": False})}),
                             deletion_vector=dv))
    return txn.version


# ----------------------------------------------------------------------------- deletion vectors
def test_a_deletion_vector_needs_the_feature(tmp_path):
    table = _table(tmp_path)
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError) as e:
        _with_dv(table, _inline_dv([0]))
    assert e.value.feature == "deletionVectors"
    assert table.latest_version() == version


def test_a_new_deletion_vector_needs_the_property_too(tmp_path):
    table = _table(tmp_path, **{"delta.feature.deletionVectors": "supported"})
    assert "deletionVectors" in table.snapshot().protocol.writer_features
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError, match="delta.enableDeletionVectors"):
        _with_dv(table, _inline_dv([0]))
    assert table.latest_version() == version


def test_a_new_deletion_vector_on_an_enabled_table_commits(tmp_path):
    """(Delta Spark reads it too: tests/interop/test_writer_rules_spark.py; this deltalake has no DV reader.)"""
    table = _table(tmp_path, **{"delta.enableDeletionVectors": "true"})
    _with_dv(table, _inline_dv([1]))
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3]


@pytest.mark.parametrize("stats,match", [({"tightBounds": True}, "tightBounds=false"), ({}, "tightBounds=false")])
def test_a_new_deletion_vector_needs_wide_bounds(tmp_path, stats, match):
    table = _table(tmp_path, **{"delta.enableDeletionVectors": "true"})
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match=match):
        _with_dv(table, _inline_dv([1]), stats)
    assert table.latest_version() == version


def test_a_deletion_vector_needs_num_records(tmp_path):
    table = _table(tmp_path, **{"delta.enableDeletionVectors": "true"})
    row = _live(table)
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="numRecords"):
        with table.transaction() as txn:
            txn.remove_file(row["path"])
            txn.add_file(AddFile(row["path"], row["size"], {}, 1, True, json.dumps({"tightBounds": False}),
                                 deletion_vector=_inline_dv([0])))
    assert table.latest_version() == version


def test_recommitting_a_live_deletion_vector_is_not_adding_one(tmp_path):
    """Delta Spark's in-place metadata updates: the same logical file again (e.g. new tags)."""
    table = _table(tmp_path, **{"delta.enableDeletionVectors": "true"})
    _with_dv(table, _inline_dv([1]))
    with table.transaction() as txn:
        txn.set_properties({"delta.enableDeletionVectors": "false"})
    row = _live(table)
    dv = {k: v for k, v in row["deletion_vector"].items() if v is not None}
    with table.transaction(operation="UPDATE TAGS") as txn:
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], False, row["stats"],
                             {"k": "v"}, deletion_vector=dv))
    assert _live(table)["tags"] == [("k", "v")] or dict(_live(table)["tags"]) == {"k": "v"}


# ----------------------------------------------------------------------------- domain metadata
def test_domain_metadata_needs_the_feature(tmp_path):
    table = _table(tmp_path)
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError) as e:
        with table.transaction() as txn:
            txn.set_domain_metadata("app.domain", "{}")
    assert e.value.feature == "domainMetadata"
    assert table.latest_version() == version


def test_a_commit_may_add_the_domain_metadata_feature_itself(tmp_path):
    table = _table(tmp_path)
    with table.transaction() as txn:
        txn.set_properties({"delta.feature.domainMetadata": "supported"})
        txn.set_domain_metadata("app.domain", '{"a":1}')
    snap = table.snapshot()
    assert "domainMetadata" in snap.protocol.writer_features
    assert snap.domain_metadata()["app.domain"] == '{"a":1}'
    assert RsTable(table.storage.root).version() == snap.version


@pytest.mark.parametrize("domain,feature", [("delta.rowTracking", "rowTracking"), ("delta.clustering", "clustering"),
                                            ("delta.somethingNew", None)])
def test_system_domains_are_never_written(domain, feature):
    protocol = Protocol(3, 7, ("deletionVectors",), ("domainMetadata", "rowTracking", "clustering", "deletionVectors"))
    with pytest.raises(UnsupportedFeatureError) as e:
        check_domains(protocol, [DomainMetadata(domain, "{}")])
    assert e.value.feature == feature


# ----------------------------------------------------------------------------- row tracking fields
def test_row_tracking_fields_need_row_tracking(tmp_path):
    table = _table(tmp_path)
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError) as e:
        with table.transaction() as txn:
            txn.add_file(AddFile("x.parquet", 1, {}, 1, True, None, base_row_id=0, default_row_commit_version=1))
    assert e.value.feature == "rowTracking"
    assert table.latest_version() == version


# ----------------------------------------------------------------------------- append-only
def _remove_one(table: DeltaTable, **txn_kwargs) -> None:
    with table.transaction(operation="DELETE", **txn_kwargs) as txn:
        txn.remove_file(_live(table)["path"])


def test_append_only_as_read_refuses_a_commit_that_unsets_it_and_deletes(tmp_path):
    """Delta Spark's assertRemovable checks the snapshot the commit is based on."""
    table = _table(tmp_path, **{"delta.appendOnly": "true"})
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="append-only"):
        with table.transaction(operation="DELETE") as txn:
            txn.set_properties({"delta.appendOnly": "false"})
            txn.remove_file(_live(table)["path"])
    assert table.latest_version() == version
    with table.transaction() as txn:                     # unset first, then delete: allowed
        txn.set_properties({"delta.appendOnly": "false"})
    _remove_one(table)
    assert table.snapshot().files().num_rows == 0


def test_append_only_allows_rearranging(tmp_path):
    table = _table(tmp_path, **{"delta.appendOnly": "true"})
    row = _live(table)
    with table.transaction(operation="OPTIMIZE") as txn:
        txn.remove_file(row["path"], data_change=False)
        txn.add_file(AddFile(row["path"] + ".moved", row["size"], {}, 1, False, row["stats"]))
    assert table.snapshot().files().num_rows == 1


def test_append_only_turned_on_by_a_concurrent_commit_fails_the_delete(tmp_path):
    """The latest table: the winner's metaData fails the loser's conflict check; nothing written."""
    table = _table(tmp_path)
    loser = table.transaction(operation="DELETE")
    loser.remove_file(_live(table)["path"])
    loser.validate()
    with table.transaction() as winner:
        winner.set_properties({"delta.appendOnly": "true"})
    version = table.latest_version()
    with pytest.raises(ConcurrentModificationError):
        loser.commit()
    assert table.latest_version() == version
    assert table.snapshot().files().num_rows == 1


def test_check_constraint_added_by_a_concurrent_commit_fails_the_append(tmp_path):
    table = _table(tmp_path)
    loser = table.transaction(operation="WRITE")
    row = _live(table)
    loser.add_file(AddFile("other.parquet", row["size"], {}, 1, True, row["stats"]))
    loser.validate()                                        # reads the table before the winner
    # the winner is an engine that validated the rows first (Delta Spark's ADD CONSTRAINT; we refuse
    # to add a constraint to a table with rows, test_enablement_rules.py)
    snap = table.snapshot()
    meta = snap.metadata.to_json()
    meta["configuration"] = {**meta.get("configuration", {}), "delta.constraints.positive": "id > 0"}
    protocol = Protocol(snap.protocol.min_reader_version, max(3, snap.protocol.min_writer_version),
                        snap.protocol.reader_features, snap.protocol.writer_features)
    version = raw_commit(table, [{"protocol": protocol.to_json()}, {"metaData": meta}])
    with pytest.raises(ConcurrentModificationError):
        loser.commit()
    assert table.latest_version() == version
    with pytest.raises(UnsupportedFeatureError) as e:       # and a fresh attempt is refused outright
        with table.transaction() as txn:
            txn.add_file(AddFile("other.parquet", row["size"], {}, 1, True, row["stats"]))
    assert e.value.feature == "checkConstraints"
    assert table.latest_version() == version




def test_upgrading_an_existing_table_to_catalog_managed_is_refused(tmp_path):
    """Delta Spark: "Upgrading to CatalogOwned table is not yet supported" (updateMetadataInternal)."""
    table = _table(tmp_path)
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError) as e:
        with table.transaction() as txn:
            txn.set_properties({"delta.feature.catalogManaged": "supported"})
    assert e.value.feature == "catalogManaged"
    assert table.latest_version() == version


def test_restore_re_adds_deletion_vectors_without_the_bounds_check(tmp_path):
    """Delta Spark asks wide bounds of operations that make DVs, not of RESTORE or CLONE."""
    table = _table(tmp_path, **{"delta.enableDeletionVectors": "true"})
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="tightBounds"):
        _with_dv(table, _inline_dv([1]), {"tightBounds": True})
    assert table.latest_version() == version
    row = _live(table)
    with table.transaction(operation="RESTORE") as txn:
        txn.remove_file(row["path"])
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True,
                             json.dumps({**json.loads(row["stats"]), "tightBounds": True}),
                             deletion_vector=_inline_dv([1])))
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3]


def test_a_transaction_cannot_write_a_system_domain(tmp_path):
    table = _table(tmp_path, **{"delta.feature.domainMetadata": "supported"})
    version = table.latest_version()
    with pytest.raises(UnsupportedFeatureError, match="controlled by Delta"):
        with table.transaction() as txn:
            txn.set_domain_metadata("delta.clustering", '{"clusteringColumns":[]}')
    assert table.latest_version() == version
