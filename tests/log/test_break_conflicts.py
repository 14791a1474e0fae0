"""Findings of the review of the conflict rules (branch break-conflicts): each test shows one way the
conflict checks or their register could be broken, with real tables and pinned transactions (no Spark).
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import AddFile, ConcurrentAppendError, ConcurrentDeleteReadError, DeltaTable

from test_conflict_rules import SCHEMA, add, pinned, raw_commit, table  # noqa: F401 - the fixture

REPO = Path(__file__).resolve().parents[2]


def _spaced_table(tmp_path) -> tuple[DeltaTable, str]:
    """A table whose one file sits in partition ``p='a b'``: its path is percent-encoded in the log."""
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    t.auto_checkpoint = False
    t.write(pa.table({"id": pa.array([1], pa.int64()), "p": ["a b"], "q": ["x"]}), mode="append")
    logged = next(a["add"]["path"] for a in t.read_commit(t.latest_version()) if "add" in a)
    assert "%20" in logged
    return t, logged


def test_a_winners_remove_of_a_file_marked_read_by_its_log_path_conflicts(tmp_path):
    """mark_read() takes the path as the log spells it (percent-encoded, as Delta Spark and the
    JSON of every add hold it); a winner's remove of that file must be a ConcurrentDeleteRead,
    as Delta Spark's checkForDeletedFilesAgainstCurrentTxnReadFiles compares the log's paths."""
    t, logged = _spaced_table(tmp_path)
    loser = pinned(t)
    loser.mark_read([logged])
    loser.add_file(add("p=a%20b/derived.parquet", "a b"))
    before = raw_commit(t, [{"remove": {"path": logged, "deletionTimestamp": 5, "dataChange": True}}])
    with pytest.raises(ConcurrentDeleteReadError):
        loser.commit()
    assert t.latest_version() == before


def test_a_winners_remove_of_a_file_read_through_read_files_still_conflicts(tmp_path):
    """The same race with the path as read_files() gives it (decoded once): the fix above must keep it."""
    t, logged = _spaced_table(tmp_path)
    loser = pinned(t)
    loser.read_files({"p": "a b"})
    loser.add_file(add("p=a%20b/derived.parquet", "a b"))
    raw_commit(t, [{"remove": {"path": logged, "deletionTimestamp": 5, "dataChange": True}}])
    with pytest.raises(ConcurrentDeleteReadError):
        loser.commit()


def test_write_serializable_with_a_metadata_change_counts_a_concurrent_blind_append(table):
    """docs/writer-rules-conflicts.md row 5 (ConflictChecker: ``WriteSerializable if
    !metadataChanged`` ignores blind appends, so *with* a metadata change they count). The register's
    tests run on Serializable tables, where blind appends always count: they pass with the
    ``changes_metadata`` clause of counted_appends removed. This one does not."""
    meta = table.snapshot().metadata.to_json()
    meta["configuration"] = {"delta.isolationLevel": "WriteSerializable"}
    raw_commit(table, [{"metaData": meta}])
    reader, blind = pinned(table), pinned(table)
    reader.read_partitions({"p": "a"})
    reader.add_file(add("p=a/derived.parquet"))
    reader.set_properties({"team": "x"})
    blind.add_file(add("p=a/blind.parquet"))
    blind.commit()
    with pytest.raises(ConcurrentAppendError, match="WriteSerializable"):
        reader.commit()


def test_no_tracked_symlinks_into_a_worktree_of_this_machine():
    """HELPERS.md's worktree links (.venv, .jars, .tools -> /work/main/...) must never be committed:
    checked out in /work/main, ``.jars -> /work/main/.jars`` replaces the ignored jar folder with a
    link to itself and every Spark test fails ('jars missing')."""
    try:
        out = subprocess.run(["git", "-C", str(REPO), "ls-files", "-s"], capture_output=True, text=True,
                             check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    links = [line.split("\t", 1)[1] for line in out.splitlines() if line.startswith("120000 ")]
    assert links == []


def test_a_winner_enabling_deletion_vectors_without_the_feature_is_a_conflict(table):
    """Row 15: deletion-vector enablement is allowed only if the protocol supports the feature
    (checkConfigurationChangesForConflicts). The register's tests enable DVs with the feature, so
    they pass with the protocol clause removed; a winner that sets the property on a protocol
    without ``deletionVectors`` must fail the blind append."""
    from airflow_provider_delta.log import MetadataChangedError
    assert "deletionVectors" not in (table.snapshot().protocol.writer_features or ())
    meta = table.snapshot().metadata.to_json()
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    raw_commit(table, [{"metaData": {**meta, "configuration": {"delta.enableDeletionVectors": "true"}}}])
    with pytest.raises(MetadataChangedError):
        blind.commit()


def test_column_mapping_enablement_that_also_changes_other_field_metadata_conflicts(table):
    """Row 15: with column mapping enabled by the winner, only column-mapping keys of the field
    metadata may change (checkSchemaChangesForConflicts); a comment added at the same time is a
    schema change. The register's rename test passes with the field-metadata clause removed."""
    from airflow_provider_delta.log import MetadataChangedError
    meta = table.snapshot().metadata.to_json()
    schema = json.loads(meta["schemaString"])
    for i, f in enumerate(schema["fields"], start=1):
        f["metadata"] = {"delta.columnMapping.id": i, "delta.columnMapping.physicalName": f["name"]}
    schema["fields"][0]["metadata"]["comment"] = "added with the enablement"
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    raw_commit(table, [{"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
                       {"metaData": {**meta, "schemaString": json.dumps(schema),
                                     "configuration": {"delta.columnMapping.mode": "name"}}}])
    with pytest.raises(MetadataChangedError):
        blind.commit()


def test_a_winner_setting_checkpoint_policy_v2_without_the_feature_is_a_conflict(table):
    """Row 15: ``delta.checkpointPolicy`` is allowed only as ``v2`` on a protocol with
    ``v2Checkpoint``. The register's test sets it with the feature only, so it passes with the
    clause removed."""
    from airflow_provider_delta.log import MetadataChangedError
    meta = table.snapshot().metadata.to_json()
    blind = pinned(table)
    blind.add_file(add("p=a/x.parquet"))
    raw_commit(table, [{"metaData": {**meta, "configuration": {"delta.checkpointPolicy": "v2"}}}])
    with pytest.raises(MetadataChangedError):
        blind.commit()


def test_two_blind_appends_to_an_unpartitioned_table_both_land(tmp_path):
    """Rows 7/21: a blind append of ours never conflicts with appends (Serializable default
    included), the everyday Airflow case of two appending tasks. The register's case
    ``append_vs_blind_append`` runs on a partitioned table, where a commit that read nothing matches
    no predicate anyway: it passes with the blind-append skip removed. Unpartitioned, it does not."""
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.auto_checkpoint = False
    first, second = pinned(t), pinned(t)
    first.add_file(AddFile("a.parquet", 100, {}, 1, True, json.dumps({"numRecords": 1})))
    second.add_file(AddFile("b.parquet", 100, {}, 1, True, json.dumps({"numRecords": 1})))
    first.commit()
    second.commit()
    assert sorted(t.snapshot().files().column("path").to_pylist()) == ["a.parquet", "b.parquet"]


@pytest.mark.parametrize("column_type,read_value,winner_spelling", [
    (pa.timestamp("us", tz="UTC"), "2026-01-01 00:00:00.000000", "2026-01-01 00:00:00"),
    (pa.int32(), 1, "01"),
])
def test_a_winners_file_matches_a_read_partition_whatever_its_spelling(tmp_path, column_type, read_value,
                                                                        winner_spelling):
    """Row 24: Delta Spark compares partition values typed. The register's test spells the winner's
    value exactly as our canonical form, so it passes with the canonical comparison of the append
    check removed; these spellings (no fractional seconds, a leading zero) are the same values."""
    schema = pa.schema([("id", pa.int64()), ("k", column_type)])
    t = DeltaTable.create(str(tmp_path / "t"), schema, partition_by=["k"])
    t.auto_checkpoint = False
    reader, writer = pinned(t), pinned(t)
    reader.read_partitions({"k": read_value})
    reader.add_file(AddFile("k=x/a.parquet", 1, {"k": str(read_value)}, 1, True))
    writer.mark_read(["nothing-yet"])                 # not a blind append
    writer.add_file(AddFile("k=y/b.parquet", 1, {"k": winner_spelling}, 1, True))
    writer.commit()
    with pytest.raises(ConcurrentAppendError):
        reader.commit()


def test_a_winners_remove_conflicts_with_a_transaction_that_marked_the_whole_table_read(table):
    """Row 26: 'any remove after a whole-table read' (Delta Spark's readWholeTable). read_files()
    also records every path, so the register's tests pass with the read_all clause removed;
    mark_read("all") records no path and shows it."""
    loser = pinned(table)
    loser.mark_read("all")
    loser.add_file(add("p=a/derived.parquet"))
    raw_commit(table, [{"remove": {"path": "p=b/f2.parquet", "deletionTimestamp": 5, "dataChange": True}}])
    with pytest.raises(ConcurrentDeleteReadError):
        loser.commit()


def test_both_changing_metadata_conflicts_even_when_the_changes_agree(table):
    """Row 13 (attemptToResolveMetadataConflicts: 'cannot resolve when both transactions have
    metadata updates', checked before any allow list). The register's case ``both_change_metadata``
    still fails with the rule removed, for another reason (the winner's metadata lacks the loser's
    own property, an unset); when the winner's metadata equals ours, only this rule stops the commit."""
    from airflow_provider_delta.log import MetadataChangedError
    loser = pinned(table)
    loser.set_properties({"team": "x"})
    loser.add_file(add("p=a/x.parquet"))
    meta = table.snapshot().metadata.to_json()
    raw_commit(table, [{"metaData": {**meta, "configuration": {**meta.get("configuration", {}), "team": "x"}}}])
    with pytest.raises(MetadataChangedError):
        loser.commit()


def test_a_commit_below_a_cleaned_up_log_is_not_reported_as_committed(tmp_path):
    """An append pinned to an old version (a long job; a short delta.logRetentionDuration) races
    checkpoint + metadata cleanup: the commit must not be reported as landed when readers start
    from the newer checkpoint and never read it."""
    import time as _time
    from airflow_provider_delta.log import DeltaError
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.auto_checkpoint = False
    loser = t.transaction(read_version=0)
    assert loser.snapshot is not None                  # the job read version 0
    loser.add_file(AddFile("late.parquet", 1, {}, 1, True, json.dumps({"numRecords": 1})))
    for i in range(4):
        with t.transaction() as txn:
            txn.add_file(AddFile(f"f{i}.parquet", 1, {}, 1, True, json.dumps({"numRecords": 1})))
    t.checkpoint()
    assert t.cleanup_metadata(now_ms=int(_time.time() * 1000) + 400 * 86_400_000)["deleted"]
    try:
        version = loser.commit()
    except DeltaError:
        return                                         # refused: the caller knows it did not land
    files = DeltaTable(str(tmp_path / "t")).snapshot().files().column("path").to_pylist()
    assert "late.parquet" in files, f"commit {version} reported as landed, but no reader sees it"


def test_checks_run_in_delta_sparks_order_app_ids_before_appends(table):
    """Row 28: the app-id check runs before the append check, so a loser that both read a partition
    the winner appended to and shares its app id gets ConcurrentTransaction, as in Delta Spark. The
    register's case ``txn_app_id`` is a blind append (no append conflict), so it passes with the two
    checks swapped."""
    from airflow_provider_delta.log import ConcurrentTransactionError
    loser, winner = pinned(table), pinned(table)
    loser.transaction_version("app-1")
    loser.read_partitions({"p": "a"})
    loser.set_txn("app-1", 1)
    loser.add_file(add("p=a/derived.parquet"))
    winner.set_txn("app-1", 1)
    winner.add_file(add("p=a/winner.parquet"))
    winner.commit()
    with pytest.raises(ConcurrentTransactionError):
        loser.commit()
