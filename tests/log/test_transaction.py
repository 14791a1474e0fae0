"""Transactions: commitInfo, validation before writing, retries and Delta Spark's conflict rules.

Races are made deterministic by pinning two transactions to the same read version
(touching ``txn.read_version``) and committing one before the other.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import (CommitFailedError, ConcurrentModificationError, DeltaTable,
                                        InvalidArgumentError, UnsupportedFeatureError)
from airflow_provider_delta.log.base.actions import Metadata, Protocol
from airflow_provider_delta.log.base.commit_actions import AddFile, RemoveFile
from airflow_provider_delta.log.write.transaction import Transaction

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def add(path: str, p: str | None = "a", rows: int = 1, size: int = 100, data_change: bool = True) -> AddFile:
    return AddFile(path, size, {"p": p}, 1, data_change, json.dumps({"numRecords": rows}))


def commit_actions(table: DeltaTable, version: int) -> list[dict]:
    return table.read_commit(version)


def versions_on_disk(path) -> list[int]:
    return sorted(int(n[:20]) for n in os.listdir(path / "_delta_log") if n.endswith(".json"))


@pytest.fixture
def table(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["p"])
    with t.transaction() as txn:
        txn.add_files([add("p=a/f1.parquet"), add("p=b/f2.parquet", "b"), add("p=a/f3.parquet")])
    return t


def test_commit_info_is_first_and_complete(table):
    with table.transaction(operation="MERGE", operation_parameters={"predicate": "id = 1", "n": 3, "flag": True},
                           user_metadata="um", job={"dag_id": "d", "try_number": 2}) as txn:
        txn.add_file(add("p=a/new.parquet", rows=7, size=70))
        txn.remove_file("p=b/f2.parquet")
    actions = commit_actions(table, txn.version)
    assert list(actions[0]) == ["commitInfo"]
    info = actions[0]["commitInfo"]
    assert info["operation"] == "MERGE"
    # as Delta Spark writes them: JSON numbers and booleans stay JSON values (its RESTORE writes "version":1)
    assert info["operationParameters"] == {"predicate": "id = 1", "n": 3, "flag": True}
    assert info["readVersion"] == 1 and info["isolationLevel"] == "Serializable"   # Delta Spark's default (DeltaConfigs.ISOLATION_LEVEL)
    assert info["isBlindAppend"] is False
    assert info["operationMetrics"] == {"numFiles": "1", "numOutputBytes": "70", "numOutputRows": "7",
                                        "numRemovedFiles": "1", "numRemovedBytes": "100"}
    assert info["userMetadata"] == "um" and info["job"] == {"dag_id": "d", "try_number": 2}
    assert "inCommitTimestamp" not in info
    rm = next(a["remove"] for a in actions if "remove" in a)
    # a remove by path carries the file's details from the snapshot
    assert rm["partitionValues"] == {"p": "b"} and rm["size"] == 100 and rm["dataChange"] is True
    assert table.snapshot().files().num_rows == 3


def test_blind_append_flag_and_history(table):
    with table.transaction() as txn:
        txn.add_file(add("p=a/x.parquet"))
    assert commit_actions(table, txn.version)[0]["commitInfo"]["isBlindAppend"] is True
    with table.transaction() as txn:
        txn.mark_read(["p=a/f1.parquet"])
        txn.add_file(add("p=a/y.parquet"))
    assert commit_actions(table, txn.version)[0]["commitInfo"]["isBlindAppend"] is False
    assert [h["operation"] for h in table.history()][:2] == ["WRITE", "WRITE"]


def test_context_manager_does_not_commit_on_error(table, tmp_path):
    before = versions_on_disk(tmp_path)
    with pytest.raises(RuntimeError):
        with table.transaction() as txn:
            txn.add_file(add("p=a/z.parquet"))
            raise RuntimeError("boom")
    assert versions_on_disk(tmp_path) == before
    with pytest.raises(InvalidArgumentError):
        txn.commit()


@pytest.mark.parametrize("change", [
    lambda t: t.add_file(AddFile("x.parquet", 1, {}, 1)),
    lambda t: t.add_file(AddFile("x.parquet", 1, {"p": "a", "q": "b"}, 1)),
    lambda t: t.add_file(AddFile("x.parquet", -1, {"p": "a"}, 1)),
    lambda t: t.add_file(AddFile("", 1, {"p": "a"}, 1)),
    lambda t: t.add_file(AddFile("_delta_log/evil.parquet", 1, {"p": "a"}, 1)),
    lambda t: t.remove_file("p=a/not-there.parquet"),
    lambda t: (t.add_file(add("p=a/f1.parquet")), t.remove_file("p=a/f1.parquet")),
    lambda t: t.set_protocol(Protocol(1, 1)),
    lambda t: t.set_metadata(Metadata("other-id", t.metadata.schema_string, ("p",))),
    lambda t: t.set_metadata(Metadata(t.metadata.id, t.metadata.schema_string, ("missing",))),
    lambda t: t.set_properties({"delta.enableInCommitTimestamps": "maybe"}),
    lambda t: t.set_properties({"delta.enableRowTracking": "true"}),
])
def test_invalid_changes_fail_before_anything_is_written(table, tmp_path, change):
    before = versions_on_disk(tmp_path)
    txn = table.transaction()
    with pytest.raises((InvalidArgumentError, UnsupportedFeatureError)):
        change(txn)
        txn.commit()
    assert versions_on_disk(tmp_path) == before


def test_duplicate_adds_and_removes_are_refused(table):
    txn = table.transaction()
    txn.add_file(add("p=a/d.parquet"))
    with pytest.raises(InvalidArgumentError):
        txn.add_file(add("p=a/d.parquet"))
    txn.remove_file("p=a/f1.parquet")
    with pytest.raises(InvalidArgumentError):
        txn.remove_file("p=a/f1.parquet")


def test_append_only_table_refuses_data_removal_but_allows_rearranging(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, properties={"delta.appendOnly": "true"})
    with t.transaction() as txn:
        txn.add_file(AddFile("f1.parquet", 10, {}, 1))
    with pytest.raises(InvalidArgumentError, match="append-only"):
        with t.transaction() as txn:
            txn.remove_file("f1.parquet")
    with t.transaction(operation="OPTIMIZE") as txn:
        txn.remove_file("f1.parquet", data_change=False)
        txn.add_file(AddFile("f2.parquet", 10, {}, 1, data_change=False))
    info = commit_actions(t, txn.version)[0]["commitInfo"]
    assert info["isolationLevel"] == "SnapshotIsolation"


def test_check_constraints_block_data_adds(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, properties={"delta.constraints.pos": "id > 0"})
    with pytest.raises(UnsupportedFeatureError, match="checkConstraints"):
        with t.transaction() as txn:
            txn.add_file(AddFile("f.parquet", 1, {}, 1))
    assert versions_on_disk(tmp_path) == [0]


def test_unknown_writer_feature_is_refused(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA)
    log = tmp_path / "_delta_log" / f"{1:020d}.json"
    log.write_text(json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                            "writerFeatures": ["appendOnly", "futureFeature"]}}) + "\n")
    with pytest.raises(UnsupportedFeatureError) as e:
        with t.transaction() as txn:
            txn.add_file(AddFile("f.parquet", 1, {}, 1))
    assert e.value.feature == "futureFeature"
    assert versions_on_disk(tmp_path) == [0, 1]


def test_set_properties_upgrades_protocol_when_a_feature_needs_it(table):
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.enableChangeDataFeed": True, "custom": "x"})
    snap = table.snapshot()
    assert snap.protocol == Protocol(1, 4)
    assert snap.metadata.configuration == {"delta.enableChangeDataFeed": "true", "custom": "x"}
    with table.transaction() as txn:
        txn.set_properties({"custom": None})
    assert "custom" not in table.snapshot().metadata.configuration


# ------------------------------------------------------------------ conflicts
def pinned(table: DeltaTable, **kw) -> Transaction:
    txn = table.transaction(**kw)
    assert txn.read_version == table.latest_version()
    return txn


def test_concurrent_blind_appends_both_land(table, tmp_path):
    t1, t2 = pinned(table), pinned(table)
    t1.add_file(add("p=a/c1.parquet"))
    t2.add_file(add("p=a/c2.parquet"))
    v1 = t1.commit()
    v2 = t2.commit()
    assert (v1, v2) == (2, 3) and t2.attempts == 2
    assert commit_actions(table, 3)[0]["commitInfo"]["readVersion"] == 1
    paths = set(table.snapshot().files().column("path").to_pylist())
    assert {"p=a/c1.parquet", "p=a/c2.parquet"} <= paths


def test_two_removes_of_the_same_file_conflict_naming_the_winner(table, tmp_path):
    t1, t2 = pinned(table), pinned(table)
    t1.remove_file("p=a/f1.parquet")
    t2.remove_file("p=a/f1.parquet")
    t2.add_file(add("p=a/rewritten.parquet"))
    assert t1.commit() == 2
    with pytest.raises(ConcurrentModificationError) as e:
        t2.commit()
    assert e.value.winning_version == 2 and e.value.reason == "concurrent_delete_delete"
    assert "version 2" in str(e.value)
    assert versions_on_disk(tmp_path) == [0, 1, 2]


def test_removing_a_file_we_read_conflicts(table):
    t1, t2 = pinned(table), pinned(table)
    t1.remove_file("p=b/f2.parquet")
    t2.mark_read(["p=b/f2.parquet"])
    t2.add_file(add("p=b/derived.parquet", "b"))
    t1.commit()
    with pytest.raises(ConcurrentModificationError) as e:
        t2.commit()
    assert e.value.reason == "concurrent_delete_read"


def test_read_whole_table_vs_concurrent_blind_append_depends_on_isolation(table):
    for level, conflicts in (("WriteSerializable", False), ("Serializable", True)):
        t1, t2 = pinned(table), pinned(table, isolation_level=level)
        t2.read_files()
        t2.add_file(add(f"p=a/summary-{level}.parquet"))
        t1.add_file(add(f"p=a/blind-{level}.parquet"))
        t1.commit()
        if conflicts:
            with pytest.raises(ConcurrentModificationError) as e:
                t2.commit()
            assert e.value.reason == "concurrent_append"
        else:
            t2.commit()


def test_non_blind_append_into_read_partition_conflicts_but_other_partitions_do_not(table):
    t1, t2 = pinned(table), pinned(table)
    t2.read_partitions({"p": "a"})
    t2.add_file(add("p=a/agg.parquet"))
    t1.mark_read(["p=b/f2.parquet"])           # makes t1 a non-blind append
    t1.add_file(add("p=b/other.parquet", "b"))
    t1.commit()
    t2.commit()                                # p=b is not what t2 read
    t3, t4 = pinned(table), pinned(table)
    files = t4.read_files(partitions={"p": ["a"]})
    assert set(files.column("path").to_pylist()) >= {"p=a/f1.parquet", "p=a/f3.parquet"}
    assert "p=b/f2.parquet" not in files.column("path").to_pylist()
    t4.add_file(add("p=a/agg2.parquet"))
    t3.mark_read(["p=a/f1.parquet"])
    t3.add_file(add("p=a/more.parquet"))
    t3.commit()
    with pytest.raises(ConcurrentModificationError) as e:
        t4.commit()
    assert e.value.reason == "concurrent_append"


def test_metadata_change_by_winner_conflicts_with_everyone(table):
    t1, t2 = pinned(table), pinned(table)
    t1.set_properties({"x": "1"})
    t2.add_file(add("p=a/late.parquet"))
    t1.commit()
    with pytest.raises(ConcurrentModificationError) as e:
        t2.commit()
    assert e.value.reason == "metadata_changed"


def test_protocol_changes_on_both_sides_conflict(table):
    t1, t2 = pinned(table), pinned(table)
    t1.set_protocol(Protocol(1, 3))
    t2.set_protocol(Protocol(1, 4))
    t1.commit()
    with pytest.raises(ConcurrentModificationError) as e:
        t2.commit()
    assert e.value.reason == "protocol_changed"


def test_same_app_id_conflicts_so_exactly_once_holds(table):
    t1, t2 = pinned(table), pinned(table)
    for t in (t1, t2):
        assert t.transaction_version("stream-1") is None
        t.set_txn("stream-1", 5)
        t.add_file(add(f"p=a/batch5-{id(t)}.parquet"))
    t1.commit()
    with pytest.raises(ConcurrentModificationError) as e:
        t2.commit()
    assert e.value.reason == "concurrent_transaction"
    assert table.snapshot().transaction_version("stream-1") == 5
    # a different app id does not conflict
    t3, t4 = pinned(table), pinned(table)
    t3.set_txn("a", 1)
    t4.set_txn("b", 1)
    t3.commit()
    t4.commit()


def test_retries_are_bounded(table, tmp_path):
    t1, t2 = pinned(table), pinned(table, max_retries=0)
    t1.add_file(add("p=a/r1.parquet"))
    t2.add_file(add("p=a/r2.parquet"))
    t1.commit()
    with pytest.raises(CommitFailedError) as e:
        t2.commit()
    assert e.value.retryable and not isinstance(e.value, ConcurrentModificationError)
    assert versions_on_disk(tmp_path) == [0, 1, 2]


def test_explicit_old_read_version_checks_every_later_commit(table):
    with table.transaction() as txn:
        txn.remove_file("p=a/f3.parquet")
    old = table.transaction(read_version=1)
    old.remove_file("p=a/f3.parquet")
    with pytest.raises(ConcurrentModificationError) as e:
        old.commit()
    assert e.value.winning_version == 2


def test_remove_file_accepts_add_and_remove_actions(table):
    snap_add = AddFile("p=a/f1.parquet", 100, {"p": "a"}, 1)
    with table.transaction() as txn:
        txn.remove_file(snap_add)
        txn.remove_file(RemoveFile("p=a/f3.parquet", None, data_change=True, partition_values={"p": "a"}))
    rms = [a["remove"] for a in commit_actions(table, txn.version) if "remove" in a]
    assert sorted(r["path"] for r in rms) == ["p=a/f1.parquet", "p=a/f3.parquet"]
    assert all(r["deletionTimestamp"] > 0 for r in rms)


def test_layout_changes_need_all_data_replaced(table, tmp_path):
    from airflow_provider_delta.log.base.schema import schema_string
    meta = table.snapshot().metadata
    repartitioned = Metadata(meta.id, meta.schema_string, (), meta.configuration)
    with pytest.raises(InvalidArgumentError, match="partition columns cannot change"):
        with table.transaction() as txn:
            txn.set_metadata(repartitioned)
    dropped = Metadata(meta.id, schema_string(pa.schema([("p", pa.string()), ("q", pa.string())])), ("p",),
                       meta.configuration)
    with pytest.raises(InvalidArgumentError, match="'id' would be dropped"):
        with table.transaction() as txn:
            txn.set_metadata(dropped)
    required = Metadata(meta.id, schema_string(SCHEMA.append(pa.field("r", pa.int32(), nullable=False))),
                        ("p",), meta.configuration)
    with pytest.raises(InvalidArgumentError, match="must be nullable"):
        with table.transaction() as txn:
            txn.set_metadata(required)
    assert versions_on_disk(tmp_path) == [0, 1]
    # additive change: a new nullable column
    wider = Metadata(meta.id, schema_string(SCHEMA.append(pa.field("extra", pa.float64()))), ("p",),
                     meta.configuration)
    with table.transaction(operation="ADD COLUMNS") as txn:
        txn.set_metadata(wider)
    assert table.snapshot().schema.names == ["id", "p", "extra"]
    # a new partitioning is fine when every file is replaced in the same commit
    with table.transaction(operation="REPLACE TABLE") as txn:
        txn.remove_files(txn.read_files().column("path").to_pylist())
        txn.set_metadata(Metadata(meta.id, wider.schema_string, (), meta.configuration))
        txn.add_file(AddFile("new.parquet", 1, {}, 1))
    assert table.snapshot().partition_columns == ()


def test_managed_tables_keep_in_commit_timestamps(tmp_path):
    from airflow_provider_delta.log import InMemoryCommitOwner
    t = DeltaTable.create(str(tmp_path), SCHEMA, commit_owner=InMemoryCommitOwner())
    with pytest.raises(InvalidArgumentError, match="in-commit timestamps"):
        with t.transaction() as txn:
            txn.set_properties({"delta.enableInCommitTimestamps": "false"})
    assert t.latest_version() == 0


def test_a_transaction_reads_the_snapshot_its_caller_loaded(tmp_path):
    """``read_snapshot``: the caller's snapshot (file list loaded once, as restore does) is the read
    snapshot; one of another table, or at another version than ``read_version``, is refused."""
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.write(pa.table({"id": [1], "p": ["a"]}, schema=SCHEMA))
    snap = t.snapshot()
    snap.files()
    txn = Transaction(t, read_snapshot=snap)
    assert txn.snapshot is snap
    txn.remove_files(snap.files().column("path").to_pylist())
    assert txn.commit() == 2 and t.snapshot().files().num_rows == 0
    other = DeltaTable.create(str(tmp_path / "other"), SCHEMA)
    for bad in ({"read_snapshot": other.snapshot()}, {"read_snapshot": snap, "read_version": 0},
                {"read_snapshot": "snap"}):
        with pytest.raises(InvalidArgumentError, match="read_snapshot"):
            Transaction(t, **bad)
    assert t.latest_version() == 2
