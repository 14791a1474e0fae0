"""A commit lands only as the successor of the log it read (write/commit_successor.py): a transaction
pinned to a version whose successors metadata cleanup removed is refused before its put, and one whose
put raced the cleanup (v - 1 gone and an older checkpoint above v) withdraws its commit file; in both
cases InvalidCommittedVersionError."""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import AddFile, CommitFailedError, DeltaTable, InvalidCommittedVersionError

DAY_MS = 86_400_000


def _add(path: str) -> AddFile:
    return AddFile(path, 1, {}, 1, True, json.dumps({"numRecords": 1}))


def _table_with_commits(tmp_path, n: int) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.auto_checkpoint = False
    for i in range(n):
        with t.transaction() as txn:
            txn.add_file(_add(f"f{i}.parquet"))
    return t


def _log_names(t: DeltaTable) -> set[str]:
    return set(os.listdir(os.path.join(t.uri.removeprefix("file://"), "_delta_log")))


def test_a_transaction_whose_successors_were_cleaned_up_is_refused_before_writing(tmp_path):
    t = _table_with_commits(tmp_path, 0)
    loser = t.transaction(read_version=0)
    assert loser.snapshot is not None                       # the job read version 0
    loser.add_file(_add("late.parquet"))
    for i in range(4):
        with t.transaction() as txn:
            txn.add_file(_add(f"f{i}.parquet"))
    t.checkpoint()
    t.cleanup_metadata(now_ms=int(time.time() * 1000) + 400 * DAY_MS)
    before = _log_names(t)
    assert "00000000000000000001.json" not in before       # the hole the loser would fill
    with pytest.raises(InvalidCommittedVersionError) as e:
        loser.commit()
    assert isinstance(e.value, CommitFailedError) and not e.value.retryable
    assert e.value.version == 1 and e.value.current_version == 4
    assert _log_names(t) == before                          # nothing written
    assert DeltaTable(t.uri).latest_version() == 4


def test_a_put_that_raced_the_cleanup_into_a_hole_is_withdrawn(tmp_path):
    """The pre-check saw version 0 (still there), then cleanup removed versions 0-3 (oldest first) below
    checkpoint 4, and the put found version 1 free: the commit fails, its file is withdrawn, and the
    table reads as before."""
    t = _table_with_commits(tmp_path, 4)
    t.checkpoint()
    log_dir = os.path.join(t.uri.removeprefix("file://"), "_delta_log")
    past = time.time() - 3600
    for name in os.listdir(log_dir):                         # written well before our put
        os.utime(os.path.join(log_dir, name), (past, past))
    loser = t.transaction(read_version=0)
    loser.add_file(_add("late.parquet"))
    import airflow_provider_delta.log.write.committer as committer_module
    real_check = committer_module.check_commit_follows_log

    def cleanup_races_the_put(storage, version):
        real_check(storage, version)                        # passes: version 0 is still there
        for v in (0, 1, 2, 3):                              # what the racing cleanup removes, oldest first
            os.remove(os.path.join(log_dir, f"{v:020d}.json"))
    committer_module.check_commit_follows_log = cleanup_races_the_put
    try:
        with pytest.raises(InvalidCommittedVersionError) as e:
            loser.commit()
    finally:
        committer_module.check_commit_follows_log = real_check
    assert e.value.version == 1 and e.value.current_version == 4
    assert f"{1:020d}.json" not in _log_names(t)             # withdrawn
    fresh = DeltaTable(t.uri)
    assert fresh.latest_version() == 4
    assert "late.parquet" not in fresh.snapshot().files().column("path").to_pylist()


def test_a_neighbour_on_a_skewed_clock_does_not_make_a_landed_commit_fail(tmp_path):
    """Files above ours with older times are no evidence of a hole while version v - 1 is still there."""
    t = _table_with_commits(tmp_path, 2)
    log_dir = os.path.join(t.uri.removeprefix("file://"), "_delta_log")
    with t.transaction() as txn:
        txn.add_file(_add("ours.parquet"))
    other = DeltaTable(t.uri)
    other.auto_checkpoint = False
    with other.transaction() as txn:
        txn.add_file(_add("neighbour.parquet"))
    other.checkpoint()
    back = time.time() - 3600
    for name in os.listdir(log_dir):
        if name.startswith(f"{4:020d}"):
            os.utime(os.path.join(log_dir, name), (back, back))
    from airflow_provider_delta.log.write.commit_successor import landed_below_newer_log
    assert landed_below_newer_log(t.storage, 3) is None


def test_a_commit_after_a_checkpoint_whose_commit_was_cleaned_up_lands(tmp_path):
    """Version v - 1 may survive only as a checkpoint: a commit on top of it is the successor."""
    t = _table_with_commits(tmp_path, 3)
    t.checkpoint()
    os.remove(os.path.join(t.uri.removeprefix("file://"), "_delta_log", f"{3:020d}.json"))
    fresh = DeltaTable(t.uri)
    with fresh.transaction() as txn:
        txn.add_file(_add("next.parquet"))
    assert DeltaTable(t.uri).latest_version() == 4
    assert "next.parquet" in DeltaTable(t.uri).snapshot().files().column("path").to_pylist()


def test_ordinary_commits_and_lost_races_are_unaffected(tmp_path):
    t = _table_with_commits(tmp_path, 2)
    a, b = t.transaction(), t.transaction()
    a.add_file(_add("a.parquet"))
    b.add_file(_add("b.parquet"))
    assert a.commit() == 3
    assert b.commit() == 4                                   # blind appends: retried after the race
    assert len(DeltaTable(t.uri).snapshot().files()) == 4
