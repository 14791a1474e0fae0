"""Conflict and isolation rules of Delta Spark (ConflictChecker, TransactionHelper, DeltaConfigs) that
need no Spark to show: one test per rule of docs/writer-rules-conflicts.md that the interop suite
(tests/interop/test_conflicts_spark.py) cannot arrange. Races are made deterministic by pinning two
transactions to the same read version and committing one before the other.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_provider_delta.log import (ConcurrentAppendError, ConcurrentDeleteReadError, ConcurrentModificationError,
                                        ConcurrentTransactionError, DeltaTable, InvalidArgumentError,
                                        InvalidTableStateError, MetadataChangedError, ProtocolChangedError,
                                        UnsupportedFeatureError)
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.write.isolation import isolation_level_to_use, parse_isolation_level

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("q", pa.string())])


def add(path: str, p: str = "a", q: str | None = None, data_change: bool = True, dv: dict | None = None,
        partitioned_by_q: bool = False) -> AddFile:
    values = {"q": q} if partitioned_by_q else {"p": p}
    stats = {"numRecords": 1, **({"tightBounds": False} if dv else {})}   # a new DV loosens the bounds
    return AddFile(path, 100, values, 1, data_change, json.dumps(stats), deletion_vector=dv)


@pytest.fixture
def table(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    t.auto_checkpoint = False
    with t.transaction() as txn:
        txn.add_files([add("p=a/f1.parquet"), add("p=b/f2.parquet", "b")])
    return t


def pinned(table: DeltaTable, **kw):
    txn = table.transaction(read_version=table.latest_version(), **kw)
    return txn


def raw_commit(table: DeltaTable, actions: list[dict]) -> int:
    """Commit actions as another engine would write them (put-if-absent of the next version)."""
    version = table.latest_version() + 1
    data = "\n".join(json.dumps(a) for a in [{"commitInfo": {"operation": "FOREIGN", "isBlindAppend": False}},
                                             *actions]) + "\n"
    assert table.storage.put_if_absent(f"_delta_log/{version:020d}.json", data.encode())
    return version


def last_commit_info(table: DeltaTable) -> dict:
    return next(a["commitInfo"] for a in table.read_commit(table.latest_version()) if "commitInfo" in a)


# ----------------------------------------------------------------------- isolation levels
def test_isolation_level_names_parse_in_any_case_and_unknown_ones_are_refused():
    assert parse_isolation_level("writeserializable") == "WriteSerializable"
    assert parse_isolation_level("SNAPSHOTISOLATION") == "SnapshotIsolation"
    with pytest.raises(InvalidTableStateError, match="not an isolation level"):
        parse_isolation_level("ReadCommitted")


def test_a_table_without_the_property_commits_at_serializable(table):
    with table.transaction() as txn:
        txn.read_partitions({"p": "a"})
        txn.add_file(add("p=a/x.parquet"))
    assert last_commit_info(table)["isolationLevel"] == "Serializable"


def test_a_foreign_tables_write_serializable_is_honoured_in_any_case(table):
    meta = table.snapshot().metadata.to_json()
    meta["configuration"] = {"delta.isolationLevel": "writeSERIALIZABLE"}
    raw_commit(table, [{"metaData": meta}])
    reader, blind = pinned(table), pinned(table)
    reader.read_partitions({"p": "a"})
    reader.add_file(add("p=a/derived.parquet"))
    blind.add_file(add("p=a/blind.parquet"))
    blind.commit()
    reader.commit()                       # WriteSerializable ignores the concurrent blind append
    assert last_commit_info(table)["isolationLevel"] == "WriteSerializable"


def test_an_invalid_isolation_level_in_the_table_fails_the_commit_and_writes_nothing(table):
    meta = table.snapshot().metadata.to_json()
    meta["configuration"] = {"delta.isolationLevel": "ReadCommitted"}
    before = raw_commit(table, [{"metaData": meta}])
    with pytest.raises(InvalidTableStateError, match="ReadCommitted"):
        with table.transaction() as txn:
            txn.add_file(add("p=a/x.parquet"))
    assert table.latest_version() == before


def test_the_property_may_only_be_set_to_serializable(table):
    before = table.latest_version()
    for value in ("WriteSerializable", "SnapshotIsolation", "nonsense"):
        with pytest.raises(InvalidArgumentError, match="must be Serializable"):
            with table.transaction() as txn:
                txn.set_properties({"delta.isolationLevel": value})
    assert table.latest_version() == before
    with table.transaction() as txn:
        txn.set_properties({"delta.isolationLevel": "Serializable"})


@pytest.mark.parametrize("default,only_files,flags,operation,expected", [
    ("Serializable", True, [False, False], "WRITE", "SnapshotIsolation"),
    ("Serializable", True, [], "Manual Update", "SnapshotIsolation"),            # an empty commit
    ("Serializable", True, [False, True], "OPTIMIZE", "Serializable"),
    ("Serializable", False, [False], "OPTIMIZE", "Serializable"),                # metadata/txn/domain/protocol
    ("WriteSerializable", True, [False], "OPTIMIZE", "SnapshotIsolation"),
    ("WriteSerializable", True, [False], "WRITE", "WriteSerializable"),          # changesData operation
    ("WriteSerializable", True, [False], "merge", "WriteSerializable"),
    ("SnapshotIsolation", True, [True], "WRITE", "SnapshotIsolation"),
])
def test_downgrade_to_snapshot_isolation_as_transaction_helper_decides(default, only_files, flags, operation,
                                                                       expected):
    assert isolation_level_to_use(default, only_files, flags, operation) == expected


def test_txn_or_domain_actions_keep_a_rearranging_commit_at_the_table_level(table):
    for extra in ("txn", "domain"):
        if extra == "domain":       # domainMetadata actions need their table feature (PROTOCOL.md)
            with table.transaction() as txn:
                txn.set_properties({"delta.feature.domainMetadata": "supported"})
        rearrange, blind = pinned(table, operation="OPTIMIZE"), pinned(table)
        live = [p for p in table.snapshot().files().column("path").to_pylist() if p.startswith("p=a/")]
        rearrange.read_partitions({"p": "a"})
        rearrange.remove_files(live, data_change=False)
        rearrange.add_file(add(f"p=a/compacted-{extra}.parquet", data_change=False))
        if extra == "txn":
            rearrange.set_txn("compactor", 1)
        else:
            rearrange.set_domain_metadata("compactor", "{}")
        blind.add_file(add(f"p=a/blind-{extra}.parquet"))
        blind.commit()
        with pytest.raises(ConcurrentAppendError, match="ConcurrentAppendException"):
            rearrange.commit()


# ----------------------------------------------------------------------- the known divergence
def test_repartitioning_with_data_change_false_conflicts_with_a_concurrent_blind_append(tmp_path):
    """A metadata change is never downgraded to SnapshotIsolation, and with a metadata change even
    blind appends conflict (TransactionHelper.canDowngradeToSnapshotIsolation, ConflictChecker)."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    table.auto_checkpoint = False
    with table.transaction() as txn:
        txn.add_files([add("p=a/f1.parquet"), add("p=b/f2.parquet", "b")])
    repartition, blind = pinned(table, operation="REPLACE TABLE"), pinned(table)
    old = repartition.read_files()
    repartition.remove_files(old.column("path").to_pylist(), data_change=False)
    meta = table.snapshot().metadata
    new_meta = type(meta).from_json({**meta.to_json(), "partitionColumns": ["q"]})
    repartition.set_metadata(new_meta)
    repartition.add_file(add("q=x/all.parquet", q="x", data_change=False, partitioned_by_q=True))
    blind.add_file(add("p=a/late.parquet"))
    version = blind.commit()
    with pytest.raises(ConcurrentAppendError, match="ConcurrentAppendException"):
        repartition.commit()
    assert table.latest_version() == version
    assert list(table.snapshot().metadata.partition_columns) == ["p"]


# ----------------------------------------------------------------------- metadata, protocol, domains
def test_a_winner_setting_a_property_off_the_allow_list_fails_even_a_blind_append(table):
    blind, setter = pinned(table), pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    setter.set_properties({"team": "data"})
    setter.commit()
    with pytest.raises(MetadataChangedError, match="MetadataChangedException"):
        blind.commit()


def test_a_winner_unsetting_an_allow_listed_property_is_a_conflict(table):
    with table.transaction() as txn:
        txn.set_properties({"delta.enableDeletionVectors": "true"})
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    with table.transaction() as txn:
        txn.set_properties({"delta.enableDeletionVectors": None})
    with pytest.raises(MetadataChangedError):
        blind.commit()


def test_a_winner_enabling_deletion_vectors_lets_a_blind_append_through(table):
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    with table.transaction() as txn:
        txn.set_properties({"delta.enableDeletionVectors": "true"})
    version = blind.commit()
    assert "p=a/x.parquet" in table.snapshot(version=version).files().column("path").to_pylist()


def test_an_identity_only_metadata_update_does_not_conflict(table):
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    meta = table.snapshot().metadata.to_json()
    meta["configuration"] = {"other": "1"}
    version = table.latest_version() + 1
    data = "\n".join(json.dumps(a) for a in [
        {"commitInfo": {"operation": "WRITE", "tags": {"delta.identity.schemaUpdate": "true"}}},
        {"metaData": meta}]) + "\n"
    assert table.storage.put_if_absent(f"_delta_log/{version:020d}.json", data.encode())
    assert blind.commit() == version + 1


def test_a_winner_dropping_a_feature_fails_everyone(table):
    with table.transaction() as txn:
        txn.set_properties({"delta.feature.domainMetadata": "supported"})
    proto = table.snapshot().protocol
    assert "domainMetadata" in (proto.writer_features or ())
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    dropped = {**proto.to_json(), "writerFeatures": [f for f in proto.writer_features if f != "domainMetadata"]}
    raw_commit(table, [{"protocol": dropped}])
    with pytest.raises(ProtocolChangedError, match="ProtocolChangedException: a concurrent update dropped"):
        blind.commit()


def test_a_winner_protocol_we_cannot_write_is_an_unsupported_feature_not_a_conflict(table):
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    raw_commit(table, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                     "writerFeatures": ["appendOnly", "invariants", "rowTracking",
                                                        "domainMetadata"]}}])
    before = table.latest_version()
    with pytest.raises(UnsupportedFeatureError, match="rowTracking"):
        blind.commit()
    assert table.latest_version() == before


def test_the_same_metadata_domain_conflicts_other_domains_do_not(table):
    with table.transaction() as txn:
        txn.set_properties({"delta.feature.domainMetadata": "supported"})
    a, b, c = pinned(table), pinned(table), pinned(table)
    a.set_domain_metadata("app.watermark", '{"v": 1}')
    b.set_domain_metadata("app.watermark", '{"v": 2}')
    c.set_domain_metadata("app.other", '{"v": 3}')
    a.commit()
    with pytest.raises(ConcurrentTransactionError, match="ConcurrentTransactionException: a conflicting metadata domain"):
        b.commit()
    c.commit()


def test_setting_an_app_id_counts_as_reading_it(table):
    a, b = pinned(table), pinned(table)
    a.set_txn("job", 1)
    b.set_txn("job", 1)
    a.add_file(add("p=a/a.parquet"))
    b.add_file(add("p=a/b.parquet"))
    a.commit()
    with pytest.raises(ConcurrentTransactionError):
        b.commit()


# ----------------------------------------------------------------------- files
def test_a_winners_data_change_false_remove_of_a_read_file_conflicts(table):
    reader, compactor = pinned(table), pinned(table, operation="OPTIMIZE")
    reader.read_partitions({"p": "a"})
    reader.add_file(add("p=a/derived.parquet"))
    compactor.remove_file("p=a/f1.parquet", data_change=False)
    compactor.add_file(add("p=a/compacted.parquet", data_change=False))
    compactor.commit()
    # the compactor's adds count first (it is not a blind append), as in Delta Spark
    with pytest.raises(ConcurrentAppendError):
        reader.commit()
    reader = pinned(table)
    files = reader.read_files({"p": "b"})
    reader.remove_files(files.column("path").to_pylist())
    other = pinned(table, operation="OPTIMIZE")
    other.remove_file("p=b/f2.parquet", data_change=False)
    other.commit()
    with pytest.raises(ConcurrentDeleteReadError, match="ConcurrentDeleteReadException"):
        reader.commit()


def test_read_partitions_counts_the_partitions_files_as_read(table):
    reader, deleter = pinned(table), pinned(table)
    reader.read_partitions({"p": "a"})
    reader.add_file(AddFile("p=b/out.parquet", 1, {"p": "b"}, 1, True))
    deleter.remove_file("p=a/f1.parquet")
    deleter.commit()
    with pytest.raises(ConcurrentDeleteReadError):
        reader.commit()


def test_a_remove_must_name_the_live_files_deletion_vector(table):
    dv = {"storageType": "i", "pathOrInlineDv": "wi5b=000010000siXQKl0rr91000f", "sizeInBytes": 4, "cardinality": 1}
    with table.transaction() as txn:
        txn.set_properties({"delta.enableDeletionVectors": "true"})
    with table.transaction() as txn:
        txn.remove_file("p=a/f1.parquet", data_change=True)
        txn.add_file(add("p=a/f1.parquet", dv=dv))
    before = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="deletion vector"):
        with table.transaction() as txn:
            txn.remove_file(add("p=a/f1.parquet"))           # the logical file without its DV
    assert table.latest_version() == before
    with table.transaction() as txn:
        txn.remove_file(add("p=a/f1.parquet", dv=dv))        # path + DV: the live logical file
    assert "p=a/f1.parquet" not in table.snapshot().files().column("path").to_pylist()


def test_conflict_errors_name_delta_sparks_exception_and_are_concurrent_modifications(table):
    a, b = pinned(table), pinned(table)
    a.read_files()
    a.add_file(add("p=a/x.parquet"))
    b.add_file(add("p=b/y.parquet", "b"))
    b.commit()
    with pytest.raises(ConcurrentModificationError) as e:
        a.commit()
    assert isinstance(e.value, ConcurrentAppendError)
    assert str(e.value).startswith("ConcurrentAppendException:")
    assert e.value.retryable is False and e.value.conflict is True and e.value.winning_version == b.version


def test_a_winner_enabling_column_mapping_name_or_v2_checkpoints_lets_a_blind_append_through(table):
    """The allow list of attemptToResolveMetadataConflicts: column mapping none -> name (with only
    column mapping field metadata added) and checkpointPolicy v2."""
    meta = table.snapshot().metadata.to_json()
    schema = json.loads(meta["schemaString"])
    for i, f in enumerate(schema["fields"], start=1):
        f["metadata"] = {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f["name"]}
    mapped = {**meta, "schemaString": json.dumps(schema),
              "configuration": {"delta.columnMapping.mode": "name", "delta.columnMapping.maxColumnId": "3"}}
    v2 = {**mapped, "configuration": {**mapped["configuration"], "delta.checkpointPolicy": "v2"}}
    for protocol, metadata in (({"minReaderVersion": 2, "minWriterVersion": 5}, mapped),
                               ({"minReaderVersion": 3, "minWriterVersion": 7,
                                 "readerFeatures": ["columnMapping", "v2Checkpoint"],
                                 "writerFeatures": ["appendOnly", "invariants", "checkConstraints", "changeDataFeed",
                                                    "generatedColumns", "columnMapping", "v2Checkpoint"]}, v2)):
        blind = pinned(table)
        blind.add_file(add(f"p=a/x-{table.latest_version()}.parquet"))
        winner = raw_commit(table, [{"protocol": protocol}, {"metaData": metadata}])
        assert blind.commit() == winner + 1
    assert table.snapshot().metadata.configuration["delta.checkpointPolicy"] == "v2"


def test_column_mapping_enablement_that_also_renames_a_column_conflicts(table):
    meta = table.snapshot().metadata.to_json()
    schema = json.loads(meta["schemaString"])
    for i, f in enumerate(schema["fields"], start=1):
        f["metadata"] = {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f["name"]}
    schema["fields"][0]["name"] = "renamed"
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    raw_commit(table, [{"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
                       {"metaData": {**meta, "schemaString": json.dumps(schema),
                                     "configuration": {"delta.columnMapping.mode": "name"}}}])
    with pytest.raises(MetadataChangedError):
        blind.commit()


def test_partition_predicates_compare_values_typed_not_as_spelled(tmp_path):
    """Delta Spark evaluates partition predicates on typed values: a winner's file whose timestamp
    partition value is spelled differently still matches."""
    schema = pa.schema([("id", pa.int64()), ("ts", pa.timestamp("us", tz="UTC"))])
    table = DeltaTable.create(str(tmp_path / "t"), schema, partition_by=["ts"])
    reader, writer = pinned(table), pinned(table)
    import datetime as dt
    reader.read_partitions({"ts": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc)})
    reader.add_file(AddFile("ts=x/a.parquet", 1, {"ts": "2026-01-01 00:00:00"}, 1, True))
    writer.mark_read(["nothing-yet"])             # not a blind append
    writer.add_file(AddFile("ts=y/b.parquet", 1, {"ts": "2026-01-01 00:00:00.000000"}, 1, True))
    writer.commit()
    with pytest.raises(ConcurrentAppendError):
        reader.commit()


def test_a_commit_of_ours_that_drops_a_feature_is_refused(table):
    """Delta Spark re-validates a feature drop against the winners; we never drop features."""
    with table.transaction() as txn:
        txn.set_properties({"delta.feature.domainMetadata": "supported"})
    before = table.latest_version()
    proto = table.snapshot().protocol.to_json()
    from airflow_provider_delta.log import Protocol
    with pytest.raises(InvalidArgumentError, match="can only be upgraded"):
        with table.transaction() as txn:
            txn.set_protocol(Protocol.from_json({**proto, "writerFeatures": [
                f for f in proto["writerFeatures"] if f != "domainMetadata"]}))
    assert table.latest_version() == before


# Files are compared by their reconciliation key (Delta Spark's canonical path, as replay cancels adds by):
# the live file './p=a/f.parquet' and a winner's remove of 'p=a/f.parquet' are one file, either way round.
LIVE_AND_REMOVED = [("./p=a/f.parquet", "p=a/f.parquet"), ("p=a/f.parquet", "./p=a/f.parquet"),
                    ("p=a//f.parquet", "x/../p=a/f.parquet"), ("{root}/p=a/f.parquet", "file://{root}/p=a/f.parquet"),
                    ("file://{root}/p=a/f.parquet", "{root}/p=a/f.parquet")]


def _spelled_table(tmp_path, live: str) -> tuple[DeltaTable, str]:
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, SCHEMA, partition_by=["p"])
    t.auto_checkpoint = False
    raw_commit(t, [{"add": {"path": live.format(root=root), "partitionValues": {"p": "a"}, "size": 100,
                            "modificationTime": 1, "dataChange": True}}])
    return t, root


def _remove(path: str) -> dict:
    return {"remove": {"path": path, "partitionValues": {"p": "a"}, "deletionTimestamp": 1, "dataChange": True}}


@pytest.mark.parametrize("live,removed", LIVE_AND_REMOVED)
@pytest.mark.parametrize("how", ["mark_read", "read_partitions", "remove_file"])
def test_a_winners_remove_of_our_file_under_another_spelling_conflicts(tmp_path, live, removed, how):
    t, root = _spelled_table(tmp_path, live)
    txn = pinned(t)
    spelled = txn.snapshot.files().column("path").to_pylist()[0]       # decoded, as files() gives it
    if how == "mark_read":
        txn.mark_read(spelled)
    elif how == "read_partitions":
        txn.read_partitions({"p": "a"})
    else:
        txn.remove_file(spelled)
    txn.add_file(add("p=a/new.parquet"))
    raw_commit(t, [_remove(removed.format(root=root))])
    assert t.snapshot().files().num_rows == 0                          # replay: the winner removed our file
    before = t.latest_version()
    with pytest.raises(ConcurrentModificationError) as e:
        txn.commit()
    assert e.value.spark_name in ("ConcurrentDeleteReadException", "ConcurrentDeleteDeleteException")
    assert t.latest_version() == before


def test_a_winners_remove_of_another_file_does_not_conflict_whatever_the_spellings(tmp_path):
    """The key comparison matches one file only: './p=a/f.parquet' read, 'p=a/g.parquet' removed."""
    t, root = _spelled_table(tmp_path, "./p=a/f.parquet")
    raw_commit(t, [{"add": {"path": "p=a/g.parquet", "partitionValues": {"p": "a"}, "size": 100,
                            "modificationTime": 1, "dataChange": True}}])
    txn = pinned(t)
    txn.mark_read([p for p in txn.snapshot.files().column("path").to_pylist() if p.endswith("f.parquet")])
    txn.add_file(add("p=a/new.parquet"))
    raw_commit(t, [_remove("./p=a/g.parquet")])
    txn.commit()
    assert sorted(t.snapshot().files().column("path").to_pylist()) == ["./p=a/f.parquet", "p=a/new.parquet"]


def test_a_staged_commit_rebases_against_a_remove_of_its_add_under_another_spelling():
    """staged_rebase.read_set_of keeps the staged commit's raw paths; the check compares their keys."""
    from airflow_provider_delta.log.base.errors import ConcurrentDeleteDeleteError
    from airflow_provider_delta.log.write.conflicts import WinningCommit, check_conflicts
    from airflow_provider_delta.log.write.staged_rebase import read_set_of
    staged = [{"commitInfo": {"isBlindAppend": True}}, {"add": {"path": "p=a//n.parquet"}}]
    with pytest.raises(ConcurrentDeleteDeleteError):
        check_conflicts(read_set_of(staged), WinningCommit.from_actions(3, [_remove("p=a/n.parquet")]))
    check_conflicts(read_set_of(staged), WinningCommit.from_actions(3, [_remove("p=a/m.parquet")]))
