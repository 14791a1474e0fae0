"""The rule "a writer's exactly-once pair undone by a RESTORE" (log/write/pair_undone_by_restore.py, #27).

Real tables: the pair committed with its rows, then RESTOREs (by version and by timestamp), forward and back.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import (DeltaTable, PairRestoreUndecidedError, PairUndone, PairUndoneByRestoreError,
                                        check_pair_not_undone,
                                        pair_undone_by_restore)

APP = "dag:task@20260102T000000Z"
SCHEMA = pa.schema([("id", pa.int64())])


def _table(tmp_path) -> DeltaTable:
    """Version 0: created; 1: someone's rows; 2: the run's rows with its pair (txn(APP, 7)); 3: more rows."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    table.write(pa.table({"id": pa.array([1], pa.int64())}))
    table.write(pa.table({"id": pa.array([2], pa.int64())}), app_id=APP, app_version=7)
    table.write(pa.table({"id": pa.array([3], pa.int64())}))
    assert table.snapshot().transaction_version(APP) == 7
    return table


def test_no_restore_after_the_pair(tmp_path):
    table = _table(tmp_path)
    assert pair_undone_by_restore(table, APP, 7) is None
    check_pair_not_undone(table, APP, 7)


@pytest.mark.parametrize("target", [0, 1])
def test_a_restore_to_before_the_pairs_commit_undoes_it(tmp_path, target):
    table = _table(tmp_path)
    table.restore(version=target)                                        # version 4
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 4, target)
    log = sorted(os.listdir(os.path.join(table.storage.root, "_delta_log")))
    with pytest.raises(PairUndoneByRestoreError) as raised:
        check_pair_not_undone(table, APP, 7)
    assert "version 2" in str(raised.value) and "RESTORE at version 4" in str(raised.value)
    assert "higher app_version" in str(raised.value)
    assert sorted(os.listdir(os.path.join(table.storage.root, "_delta_log"))) == log and table.latest_version() == 4


@pytest.mark.parametrize("target", [2, 3])
def test_a_restore_to_the_pairs_version_or_later_keeps_it(tmp_path, target):
    table = _table(tmp_path)
    table.write(pa.table({"id": pa.array([4], pa.int64())}))           # version 4
    table.restore(version=target)                                        # version 5
    assert pair_undone_by_restore(table, APP, 7) is None


def test_a_restore_forward_again_to_a_version_holding_it_brings_it_back(tmp_path):
    table = _table(tmp_path)
    table.restore(version=1)                                             # version 4: undone
    table.restore(version=3)                                             # version 5: version 3 held it
    assert pair_undone_by_restore(table, APP, 7) is None
    table.restore(version=4)                                             # version 6: the undone state again
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 6, 4)


def test_a_restore_forward_to_a_version_where_it_was_undone_keeps_it_undone(tmp_path):
    """The first RESTORE that undid it is named, not the later one that kept it undone."""
    table = _table(tmp_path)
    table.restore(version=1)                                             # version 4: undone
    table.write(pa.table({"id": pa.array([5], pa.int64())}))           # version 5
    table.restore(version=5)                                             # version 6: to a version without it
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 4, 1)


def test_timestamp_restores_are_judged_by_their_files(tmp_path):
    """A RESTORE that records only a timestamp (its zone is not known: Delta Spark writes the JVM's local
    time) is judged by what it did to the pair's files; its target is not named (None)."""
    table = _table(tmp_path)
    t1, t3 = (table.snapshot(version=v).timestamp for v in (1, 3))
    table.restore(timestamp=t1)                                          # version 4: to version 1
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 4, None)
    table.restore(timestamp=t3)                                          # version 5: to version 3
    assert pair_undone_by_restore(table, APP, 7) is None


def test_an_overwrite_after_the_pair_is_not_an_undo(tmp_path):
    """Ordinary later commits (an overwrite, a delete) are the table's life: the skip stands."""
    table = _table(tmp_path)
    table.write(pa.table({"id": pa.array([9], pa.int64())}), mode="overwrite")
    assert pair_undone_by_restore(table, APP, 7) is None


def test_the_search_stops_at_the_pairs_commit_and_within_its_reach(tmp_path):
    """Only the commits after the pair's are read: a RESTORE before it does not count; a pair beyond the
    reach (max_commits) is not known to be undone."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    table.write(pa.table({"id": pa.array([1], pa.int64())}))
    table.restore(version=0)                                             # version 2: before the pair
    table.write(pa.table({"id": pa.array([2], pa.int64())}), app_id=APP, app_version=7)   # version 3
    assert pair_undone_by_restore(table, APP, 7) is None
    table.restore(version=2)                                             # version 4: undoes it
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(3, 4, 2)
    assert pair_undone_by_restore(table, APP, 7, max_commits=1) is None
    assert pair_undone_by_restore(table, "another", 7) is None and pair_undone_by_restore(table, APP, 8) is None


# ---------------------------------------------------------------- an incremental consumer's position
CONSUMER = "dag:apply"


def _consumer(tmp_path):
    """Source (change feed on) versions 1..3, one row each; output version 1 holds the changes up to source
    version 1 (position 1), version 2 up to 2 (position 2): process_changes, end pinned per step."""
    from airflow_provider_delta.log import process_changes
    source = DeltaTable.create(str(tmp_path / "src"), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    for i in (1, 2, 3):
        source.write(pa.table({"id": pa.array([i], pa.int64())}))
    out = DeltaTable.create(str(tmp_path / "out"), SCHEMA)
    for end in (1, 2):
        process_changes(source, out, CONSUMER, transform=lambda t: t.select(["id"]), end_version=end,
                        initial_version=1)
    assert out.snapshot().transaction_version(CONSUMER) == 2 and out.latest_version() == 2
    return source, out


def _ids(table) -> list[int]:
    return sorted(table.snapshot().to_pyarrow().column("id").to_pylist())


@pytest.mark.parametrize("target, held, restart", [(1, 1, 2), (0, None, 1)])
def test_a_position_undone_by_a_restore_is_not_taken(tmp_path, target, held, restart):
    """RESTORE to output version 1 (data up to source version 1) or 0 (none of the consumer's): the position 2 is
    kept by the RESTORE but its commit is undone; pending_changes and process_changes fail typed, naming the input
    version to start again from, and nothing is read or written; doing what the message says brings the rows back."""
    from airflow_provider_delta.log import (PositionUndone, PositionUndoneByRestoreError, pending_changes,
                                            position_undone_by_restore, process_changes)
    source, out = _consumer(tmp_path)
    out.restore(version=target)                                          # version 3
    assert out.snapshot().transaction_version(CONSUMER) == 2            # the RESTORE kept the txn
    assert position_undone_by_restore(out, CONSUMER, 2, initial_version=1) == PositionUndone(
        2, 3, target, 2, held, restart)
    log = sorted(os.listdir(os.path.join(out.storage.root, "_delta_log")))
    for call in (lambda: pending_changes(source, out, CONSUMER, initial_version=1),
                 lambda: process_changes(source, out, CONSUMER, initial_version=1)):
        with pytest.raises(PositionUndoneByRestoreError) as raised:
            call()
        e = raised.value
        assert isinstance(e, PairUndoneByRestoreError) and not e.retryable
        assert (e.app_id, e.position, e.version, e.restore_version, e.restored_version, e.restart_from) == (
            CONSUMER, 2, 2, 3, target, restart)
        assert f"another app_id with initial_version={restart}" in str(e) and "initial_version=3" in str(e)
    assert sorted(os.listdir(os.path.join(out.storage.root, "_delta_log"))) == log and out.latest_version() == 3
    process_changes(source, out, CONSUMER + "#2", transform=lambda t: t.select(["id"]), initial_version=restart)
    assert _ids(out) == [1, 2, 3]                                        # each source row once


def test_the_position_the_restored_data_holds_follows_an_earlier_restore(tmp_path):
    """Output version 4 holds position 2 (kept through the RESTORE at 3 to version 1, which undid its commit) and
    the data of version 1 plus another writer's row: a RESTORE back to version 4 holds position 1, not 2."""
    from airflow_provider_delta.log import position_undone_by_restore
    _, out = _consumer(tmp_path)
    out.restore(version=1)                                               # version 3: position 2 undone
    out.write(pa.table({"id": pa.array([10], pa.int64())}))            # version 4: another writer
    out.write(pa.table({"id": pa.array([11], pa.int64())}))            # version 5
    out.restore(version=4)                                               # version 6
    undone = position_undone_by_restore(out, CONSUMER, 2, initial_version=1)
    assert (undone.version, undone.restore_version, undone.restored_version) == (2, 3, 1)
    assert (undone.held, undone.restart_from) == (1, 2)


def test_the_position_the_restored_data_holds_is_itself_asked(tmp_path):
    """Output version 1 records position 1; the RESTORE at 2 to version 0 undid it; a writer that took the position
    anyway (an older release, Delta Spark directly) recorded position 2 at version 3; the RESTORE at 4 to version 2
    undid that: version 2 records position 1, but its data is version 0's: start again at initial_version."""
    from airflow_provider_delta.log import position_undone_by_restore
    out = DeltaTable.create(str(tmp_path / "out"), SCHEMA)
    out.write(pa.table({"id": pa.array([1], pa.int64())}), app_id=CONSUMER, app_version=1)     # version 1
    out.restore(version=0)                                                                       # version 2
    out.write(pa.table({"id": pa.array([2], pa.int64())}), app_id=CONSUMER, app_version=2)     # version 3
    out.restore(version=2)                                                                       # version 4
    assert out.snapshot(version=2).transaction_version(CONSUMER) == 1
    undone = position_undone_by_restore(out, CONSUMER, 2, initial_version=1)
    assert (undone.version, undone.restore_version, undone.restored_version, undone.held, undone.restart_from) == (
        3, 4, 2, None, 1)


@pytest.mark.parametrize("after", ["nothing", "restore-to-the-position", "restore-after-it", "forward-again",
                                   "overwrite"])
def test_a_position_not_undone_is_taken(tmp_path, after):
    """The opposite sides: the position counts, the next step processes only the changes after it."""
    from airflow_provider_delta.log import pending_changes, process_changes
    source, out = _consumer(tmp_path)
    out.write(pa.table({"id": pa.array([10], pa.int64())}))            # version 3: another writer
    if after == "restore-to-the-position":
        out.restore(version=2)
    elif after == "restore-after-it":
        out.restore(version=3)
    elif after == "forward-again":
        out.restore(version=1)                                           # version 4: undone
        out.restore(version=3)                                           # version 5: back again
    elif after == "overwrite":
        out.write(pa.table({"id": pa.array([1, 2], pa.int64())}), mode="overwrite")
    rng = pending_changes(source, out, CONSUMER, initial_version=1)
    assert (rng.processed, rng.start, rng.end) == (2, 3, 3)
    step = process_changes(source, out, CONSUMER, transform=lambda t: t.select(["id"]), initial_version=1)
    assert step.rows == 1 and out.snapshot().transaction_version(CONSUMER) == 3


def test_a_former_ids_undone_position_is_not_taken_either(tmp_path):
    """A position resumed from a former id (former_app_ids) is asked the same; the error names that id."""
    from airflow_provider_delta.log import PositionUndoneByRestoreError, pending_changes
    source, out = _consumer(tmp_path)
    out.restore(version=1)
    with pytest.raises(PositionUndoneByRestoreError) as raised:
        pending_changes(source, out, "dag:apply-new", initial_version=1, former_app_ids=[CONSUMER])
    assert raised.value.app_id == CONSUMER and raised.value.restart_from == 2


# ---------------------------------------------------------------- a RESTORE that records no version (review s11)

def _undecided(table: DeltaTable) -> None:
    """Whether the pair's commit is live cannot be told: a typed error saying so and what to check, not
    'the rows are gone'; nothing written."""
    before = sorted(os.listdir(os.path.join(table.storage.root, "_delta_log")))
    assert pair_undone_by_restore(table, APP, 7).undecided
    with pytest.raises(PairRestoreUndecidedError) as raised:
        check_pair_not_undone(table, APP, 7)
    text = str(raised.value)
    assert "does not tell" in text and "Check" in text and "holds none of its rows" not in text
    assert isinstance(raised.value, PairUndoneByRestoreError) and raised.value.restored_version is None
    assert sorted(os.listdir(os.path.join(table.storage.root, "_delta_log"))) == before


def test_a_timestamp_restore_is_judged_by_the_files_not_by_its_text(tmp_path):
    """The recorded text (a zone-less local time for Delta Spark) is not read: a RESTORE recording a timestamp
    that names another version than the one it restored is judged by what it did to the pair's files."""
    table = _table(tmp_path)
    t3 = table.snapshot(version=3).timestamp
    wrong = {"version": None, "timestamp": "1999-01-01 00:00:00.0"}       # before the table: would read as undone
    table.write(pa.table({"id": pa.array([4], pa.int64())}))              # version 4
    table.restore(timestamp=t3, operation_parameters=wrong)               # version 5: to 3, the pair kept
    assert pair_undone_by_restore(table, APP, 7) is None
    table.restore(version=1, operation_parameters={"version": None, "timestamp": "2999-01-01 00:00:00.0"})
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 6, None)   # removed its file: undone


def test_a_timestamp_restore_is_judged_by_the_files_a_compaction_carried_the_rows_into(tmp_path):
    """OPTIMIZE (dataChange=false) compacted the pair's file into another: the rows are followed into it. A timestamp
    RESTORE to before the pair removes that file (and adds none carrying them): undone; one to after the OPTIMIZE
    adds it back: live again (review s12: it was judged 'still undone', and re-running duplicated the rows)."""
    table = _table(tmp_path)
    table.optimize()                                                      # version 4: the files compacted
    t1, t4 = (table.snapshot(version=v).timestamp for v in (1, 4))
    table.restore(timestamp=t1)                                           # version 5: removes the compacted file
    assert DeltaTable(table.storage.root).snapshot().to_pyarrow().column("id").to_pylist() == [1]
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 5, None)
    table.restore(timestamp=t4)                                           # version 6: the compacted file back
    assert sorted(DeltaTable(table.storage.root).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]
    assert pair_undone_by_restore(table, APP, 7) is None
    check_pair_not_undone(table, APP, 7)
    table.restore(version=1)                                              # version 7: undone by version
    table.restore(timestamp=t4)                                           # version 8: back past the undo
    assert pair_undone_by_restore(table, APP, 7) is None


def test_a_timestamp_restore_after_the_pairs_files_were_rewritten_cannot_be_told(tmp_path):
    """An overwrite (a data-changing rewrite: its files may hold some of the pair's rows) replaced the pair's
    file; a timestamp RESTORE then neither removes nor adds a file carrying the rows and none is live: whether it
    went back before the pair cannot be read from it."""
    table = _table(tmp_path)
    table.write(pa.table({"id": pa.array([2, 3], pa.int64())}), mode="overwrite")   # version 4
    t1 = table.snapshot(version=1).timestamp
    table.restore(timestamp=t1)                                           # version 5: removes the overwrite's file
    assert DeltaTable(table.storage.root).snapshot().to_pyarrow().column("id").to_pylist() == [1]
    _undecided(table)


def test_after_an_undo_a_timestamp_restore_touching_no_file_of_the_pair_keeps_it_undone_only_when_shown(tmp_path):
    """Undone by version; a timestamp RESTORE after it that touches no file carrying the rows: still undone when
    no rewrite could have carried them elsewhere, undecided when an overwrite's files may hold them."""
    table = _table(tmp_path)
    table.restore(version=1)                                              # version 4: undone
    table.write(pa.table({"id": pa.array([5], pa.int64())}))              # version 5
    table.restore(timestamp=table.snapshot(version=4).timestamp)          # version 6: drops version 5's file
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 4, 1)
    other = _table(tmp_path / "other")
    other.write(pa.table({"id": pa.array([2, 3], pa.int64())}), mode="overwrite")   # version 4: the pair's rows?
    other.restore(version=1)                                              # version 5: undone
    other.write(pa.table({"id": pa.array([5], pa.int64())}))              # version 6
    other.restore(timestamp=other.snapshot(version=4).timestamp)          # version 7: the overwrite's file back
    assert pair_undone_by_restore(other, APP, 7).undecided


def test_a_pair_commit_without_files(tmp_path):
    """A pair committed with no files: a timestamp RESTORE cannot be told; a version RESTORE by its number."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    table.write(pa.table({"id": pa.array([1], pa.int64())}))              # version 1
    with table.transaction(operation="WRITE") as txn:                     # version 2: the pair, no files
        txn.set_txn(APP, 7)
    table.write(pa.table({"id": pa.array([3], pa.int64())}))              # version 3
    table.restore(timestamp=table.snapshot(version=2).timestamp)          # version 4
    _undecided(table)
    table.restore(version=3)                                              # version 5: to after the pair
    assert pair_undone_by_restore(table, APP, 7) is None
    table.restore(version=1)                                              # version 6: to before it
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 6, 1)


def test_a_timestamp_restore_taking_a_deletion_vector_off_the_pairs_file_keeps_it(tmp_path):
    """A DELETE put a DV on the pair's file; a timestamp RESTORE to before that DELETE (after the pair) removes the
    file with its DV and adds the same path back without: the pair is kept, not undone (its rows are there)."""
    from airflow_provider_delta.log.base.commit_actions import AddFile
    from tests.dv_encoding import bitmap_array, z85_encode
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    table.write(pa.table({"id": pa.array([1], pa.int64())}))                                    # version 1
    table.write(pa.table({"id": pa.array([2, 3], pa.int64())}), app_id=APP, app_version=7)     # version 2
    before = {r["path"] for r in table.snapshot(version=1).files().to_pylist()}
    row = next(r for r in table.snapshot().files().to_pylist() if r["path"] not in before)
    bitmap = bitmap_array([0])
    dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap), "cardinality": 1}
    with table.transaction(operation="DELETE") as txn:                                         # version 3
        txn.remove_file(row["path"])
        stats = json.dumps({**json.loads(row["stats"]), "tightBounds": False})
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, stats, deletion_vector=dv))
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3]
    table.restore(timestamp=table.snapshot(version=2).timestamp)                                # version 4
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]
    assert pair_undone_by_restore(table, APP, 7) is None
    check_pair_not_undone(table, APP, 7)


def _dv_delete_pair(tmp_path) -> tuple[DeltaTable, str]:
    """Version 1: ids 1, 2, 3 in one file, DVs on; version 2: the pair's DELETE of id 2 as Delta Spark writes it
    with deletion vectors: the file removed and added again under the same path with a DV."""
    from airflow_provider_delta.log.base.commit_actions import AddFile
    from tests.dv_encoding import bitmap_array, z85_encode
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableDeletionVectors": "true"})
    table.write(pa.table({"id": pa.array([1, 2, 3], pa.int64())}))                              # version 1
    row = table.snapshot().files().to_pylist()[0]
    bitmap = bitmap_array([1])
    dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap), "cardinality": 1}
    with table.transaction(operation="DELETE") as txn:                                          # version 2
        txn.set_txn(APP, 7)
        txn.remove_file(row["path"])
        stats = json.dumps({**json.loads(row["stats"]), "tightBounds": False})
        txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, stats, deletion_vector=dv))
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3]
    return table, row["path"]


def test_a_dv_delete_pair_undone_by_a_timestamp_restore_is_undone(tmp_path):
    """Review s12: a RESTORE TO TIMESTAMP before a DV DELETE holding the pair removes the file with the DV and adds
    the same path back without: files are told apart by (path, DV id), as Delta Spark does, so it is undone (it
    was judged live by the path: the retry skipped and the deleted row stayed)."""
    table, _ = _dv_delete_pair(tmp_path)
    table.restore(timestamp=table.snapshot(version=1).timestamp)                                # version 3
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 3, None)
    with pytest.raises(PairUndoneByRestoreError):
        check_pair_not_undone(table, APP, 7)


def test_a_dv_delete_pair_restored_to_after_it_is_live(tmp_path):
    """The other side: a write after the DV DELETE, then a timestamp RESTORE to the DELETE's version (drops the
    write, keeps the file with the DV): live."""
    table, _ = _dv_delete_pair(tmp_path)
    table.write(pa.table({"id": pa.array([9], pa.int64())}))                                    # version 3
    table.restore(timestamp=table.snapshot(version=2).timestamp)                                # version 4
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3]
    assert pair_undone_by_restore(table, APP, 7) is None
    table.restore(version=1)                                                                    # version 5
    table.restore(timestamp=table.snapshot(version=2).timestamp)                                # version 6: back
    assert pair_undone_by_restore(table, APP, 7) is None


# ---------------------------------------------------------------- the pair's commit cleaned up (review s12)

def _cleanup(table: DeltaTable, checkpoint: int) -> list[str]:
    import time
    table.checkpoint(checkpoint)
    return table.cleanup_metadata(retention_ms=0, now_ms=int(time.time() * 1000) + 3 * 86_400_000)["deleted"]


def test_a_cleaned_up_pair_commit_and_a_timestamp_restore_that_may_have_undone_it_is_undecided(tmp_path):
    """The pair's commit is gone; a RESTORE TO TIMESTAMP after it whose files afterwards hold nothing the readable
    log wrote may have gone back before it: undecided, nothing written."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)                                      # 0
    table.write(pa.table({"id": pa.array([1], pa.int64())}), app_id=APP, app_version=7)        # 1: the pair
    table.restore(timestamp=table.snapshot(version=0).timestamp)                                # 2: undoes it
    table.write(pa.table({"id": pa.array([5], pa.int64())}))                                    # 3
    assert len(_cleanup(table, 2)) == 2
    undone = pair_undone_by_restore(table, APP, 7)
    assert undone.undecided and undone.version is None and undone.restore_version == 2
    with pytest.raises(PairRestoreUndecidedError) as raised:
        check_pair_not_undone(table, APP, 7)
    assert "no longer in the log" in str(raised.value) and table.latest_version() == 3


def test_a_cleaned_up_pair_commit_with_restores_inside_the_readable_log_still_skips(tmp_path):
    """The other side: the pair's commit is gone, the RESTOREs after it went back to versions the log still has
    (by version; by timestamp, its files afterwards holding one a readable commit wrote): the skip stands. A table
    that does not record the pair is not asked about."""
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)                                      # 0
    table.write(pa.table({"id": pa.array([1], pa.int64())}), app_id=APP, app_version=7)        # 1: the pair
    table.write(pa.table({"id": pa.array([2], pa.int64())}))                                    # 2
    table.write(pa.table({"id": pa.array([3], pa.int64())}))                                    # 3
    table.write(pa.table({"id": pa.array([4], pa.int64())}))                                    # 4
    assert len(_cleanup(table, 3)) == 3
    table.restore(version=3)                                                                    # 5
    assert pair_undone_by_restore(table, APP, 7) is None
    table.write(pa.table({"id": pa.array([6], pa.int64())}))                                    # 6
    table.restore(timestamp=table.snapshot(version=4).timestamp)                                # 7
    assert pair_undone_by_restore(table, APP, 7) is None
    check_pair_not_undone(table, APP, 7)
    assert pair_undone_by_restore(table, "another", 7) is None and pair_undone_by_restore(table, APP, 8) is None


def test_a_cleaned_up_position_commit_with_a_restore_past_the_log_is_undecided(tmp_path):
    """An incremental consumer's position whose commit cleanup deleted, with a RESTORE in the output's log that went
    back to a version no longer there: the position is not taken (undecided, saying the commit is gone); nothing
    read or written."""
    from airflow_provider_delta.log import pending_changes
    source, out = _consumer(tmp_path)                                    # output: 1 position 1, 2 position 2
    out.restore(version=1)                                               # version 3: undoes position 2's commit
    out.write(pa.table({"id": pa.array([9], pa.int64())}))               # version 4
    assert len(_cleanup(out, 3)) == 3                                    # 0..2 gone
    log = sorted(os.listdir(os.path.join(out.storage.root, "_delta_log")))
    with pytest.raises(PairRestoreUndecidedError) as raised:
        pending_changes(source, out, CONSUMER, initial_version=1)
    assert "no longer in the log" in str(raised.value) and "went back to version 1" in str(raised.value)
    assert sorted(os.listdir(os.path.join(out.storage.root, "_delta_log"))) == log and out.latest_version() == 4
