"""The hole check after the put (write/commit_successor.py): what proves that a checkpoint was built on our
commit, what proves that our commit lies in a hole below it, and that anything else leaves the commit file
in place as an unknown outcome. Both sides for each kind of evidence: a live commit is never withdrawn, and a
commit in a real hole is never reported committed."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CommitOutcomeUnknownError, DeltaTable, InvalidCommittedVersionError
from airflow_provider_delta.log.base.commit_actions import RemoveFile
from airflow_provider_delta.log.base.errors import DeltaError
from built_on_store import BuiltOnAtOnce, HoleBeforeThePut
from test_break_s10_commit import SCHEMA, _idle_table, _log_dir

HOUR_MS = 3_600_000


def _ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


def _delete_first_file(t: DeltaTable, **remove_kwargs) -> str:
    """A DELETE of a whole file: a commit with a remove and no add."""
    first = sorted(r["path"] for r in t.snapshot().files().to_pylist())[0]
    try:
        with t.transaction(operation="DELETE") as txn:
            txn.remove_file(RemoveFile(first, **remove_kwargs) if remove_kwargs else first)
        return "committed"
    except DeltaError as e:
        return type(e).__name__


def _commit_file(t: DeltaTable, version: int) -> str:
    return os.path.join(_log_dir(t), f"{version:020d}.json")


# ------------------------------------------------------------------ built on: the commit stays
@pytest.mark.parametrize("skew_ns", [0, 2_000_000_000], ids=["same-second", "older-clock"])
def test_a_remove_only_commit_built_on_is_kept_by_its_tombstone(tmp_path, skew_ns):
    """Another writer builds on our DELETE, checkpoints (with our very file time or 2 s older) and cleans up
    v-1: its checkpoint holds our remove as a tombstone with our deletionTimestamp - built on ours."""
    t = _idle_table(tmp_path)
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri, skew_ns=skew_ns)
    assert _delete_first_file(t) == "committed"
    assert len(_ids(t.uri)) == 2                                 # [other row, 100]
    assert os.path.exists(_commit_file(t, 3))


def test_a_remove_only_commit_built_on_under_a_checkpoint_without_tombstones_is_never_withdrawn(tmp_path):
    """With delta.deletedFileRetentionDuration at zero the builder's checkpoint drops our tombstone: nothing
    tells, so the commit file stays and the outcome is unknown - never 'failed, redo it'."""
    t = _idle_table(tmp_path, {"delta.deletedFileRetentionDuration": "interval 0 seconds"})
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri, skew_ns=2_000_000_000)
    assert _delete_first_file(t) in ("committed", "CommitOutcomeUnknownError")
    assert os.path.exists(_commit_file(t, 3))
    assert len(_ids(t.uri)) == 2


def test_a_hand_made_add_built_on_is_never_withdrawn_when_its_path_cannot_be_told_new(tmp_path):
    """A file added by hand (not written by this writer under a new name) counts as evidence only when the
    read snapshot shows its path unknown to the log; cleanup removed what that snapshot was built from, so
    nothing tells: kept, outcome unknown (never withdrawn)."""
    import json
    import time

    import pyarrow.parquet as pq

    from airflow_provider_delta.log.base.commit_actions import AddFile
    t = _idle_table(tmp_path)
    data = os.path.join(t.storage.root, "y.parquet")
    pq.write_table(pa.table({"id": [3]}, schema=SCHEMA), data)
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri, skew_ns=2_000_000_000)
    try:
        with t.transaction() as txn:
            txn.add_file(AddFile("y.parquet", os.path.getsize(data), {}, int(time.time() * 1000), True,
                                 json.dumps({"numRecords": 1})))
        outcome = "committed"
    except DeltaError as e:
        outcome = type(e).__name__
    assert outcome in ("committed", "CommitOutcomeUnknownError")
    assert os.path.exists(_commit_file(t, 3))
    assert _ids(t.uri) == [1, 2, 3, 100]


# ------------------------------------------------------------------ a real hole: never "committed"
def _table(tmp_path) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.auto_checkpoint = False
    t.write(pa.table({"id": [1]}))                          # v1
    t.write(pa.table({"id": [2]}))                          # v2
    return t


def _append(n: int):
    return lambda other: other.write(pa.table({"id": [n]}))


def test_a_remove_only_commit_in_a_hole_whose_file_is_still_live_there_is_withdrawn(tmp_path):
    """The other writer appended (v3, v4); its checkpoint holds our removed file as live, and the commit
    after ours (v4, still there) did not add it back: the checkpoint does not hold our remove - a hole."""
    t = _table(tmp_path)
    t.storage.files = HoleBeforeThePut(t.storage.files, t.uri, [_append(50), _append(60)])
    assert _delete_first_file(t) == "InvalidCommittedVersionError"
    assert not os.path.exists(_commit_file(t, 3))             # withdrawn
    assert _ids(t.uri) == [1, 2, 50, 60]


def test_a_remove_only_commit_in_a_hole_under_another_writers_remove_of_the_file_is_not_committed(tmp_path):
    """The other writer removed the same file (an overwrite): the checkpoint holds a tombstone of our path,
    but with its deletionTimestamp, not ours - no evidence of our commit; never reported committed."""
    t = _table(tmp_path)
    overwrite = lambda other: other.write(pa.table({"id": [60]}), mode="overwrite")   # noqa: E731
    t.storage.files = HoleBeforeThePut(t.storage.files, t.uri, [_append(50), overwrite])
    with pytest.raises((CommitOutcomeUnknownError, InvalidCommittedVersionError)):
        with t.transaction(operation="DELETE") as txn:
            txn.remove_file(sorted(r["path"] for r in t.snapshot().files().to_pylist())[0])
    assert _ids(t.uri) == [60]


def test_a_tombstone_with_our_millisecond_from_a_commit_above_ours_is_not_taken_for_ours(tmp_path):
    """Another writer's remove of our file carrying our very deletionTimestamp (here: both given the same
    one) in a commit above ours that is still in the log: that commit, not ours, made the tombstone."""
    import time
    t = _table(tmp_path)
    first = sorted(r["path"] for r in t.snapshot().files().to_pylist())[0]
    ts = int(time.time() * 1000)

    def remove_first(other):
        with other.transaction(operation="DELETE") as txn:
            txn.remove_file(RemoveFile(first, ts))
    t.storage.files = HoleBeforeThePut(t.storage.files, t.uri, [_append(50), remove_first])
    outcome = _delete_first_file(t, deletion_timestamp=ts)
    assert outcome in ("CommitOutcomeUnknownError", "InvalidCommittedVersionError")
    assert len(_ids(t.uri)) == 2 and 50 in _ids(t.uri)


def test_a_commit_without_file_evidence_is_withdrawn_when_a_commit_above_it_is_gone(tmp_path):
    """A commit that adds and removes nothing (a property change) tells nothing by content; but cleanup
    removed v4 (above ours, below the checkpoint at v5) while ours is there: cleanup removes the oldest
    commits first and never a commit built on ours (newer than ours, well within the log retention)."""
    t = _table(tmp_path)
    t.storage.files = HoleBeforeThePut(t.storage.files, t.uri, [_append(50), _append(60), _append(70)],
                                        keep_from=2)
    with pytest.raises(InvalidCommittedVersionError):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_metadata(t.snapshot().metadata.with_configuration({"delta.appendOnly": "false"}))
    assert not os.path.exists(_commit_file(t, 3))
    assert _ids(t.uri) == [1, 2, 50, 60, 70]


def test_a_commit_without_file_evidence_in_a_hole_with_every_commit_above_it_is_not_committed(tmp_path):
    """The same property change where the commits above ours survive: nothing proves either way - the commit
    file stays and the outcome is unknown."""
    t = _table(tmp_path)
    t.storage.files = HoleBeforeThePut(t.storage.files, t.uri, [_append(50), _append(60)])
    with pytest.raises(CommitOutcomeUnknownError):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_metadata(t.snapshot().metadata.with_configuration({"delta.appendOnly": "false"}))
    assert os.path.exists(_commit_file(t, 3))
    assert _ids(t.uri) == [1, 2, 50, 60]


def test_a_landed_commit_whose_hole_check_fails_is_reported_as_an_unknown_outcome(tmp_path):
    """The checkpoint the check must read is damaged (CorruptLogError): the commit landed, so the write is
    neither failed nor committed but unknown, and its commit file stays (it surfaced as CorruptLogError, a
    plain failure)."""
    t = _table(tmp_path)

    def damage(log_dir):
        with open(os.path.join(log_dir, f"{4:020d}.checkpoint.parquet"), "r+b") as f:
            f.truncate(100)
    t.storage.files = HoleBeforeThePut(t.storage.files, t.uri, [_append(50), _append(60)], after=damage)
    with pytest.raises(CommitOutcomeUnknownError):
        t.write(pa.table({"id": [3]}))
    assert os.path.exists(_commit_file(t, 3))


def test_a_file_added_back_by_a_commit_that_was_built_on_is_never_withdrawn(tmp_path):
    """The other side of test_final_s10_lead's re-added file: our commit adds back a file the table removed
    and another writer builds on it at once. Its path tells nothing (a checkpoint written before our put
    names it too), so the commit is kept - committed or unknown, never withdrawn."""
    import json
    import time

    import pyarrow.parquet as pq

    from airflow_provider_delta.log.base.commit_actions import AddFile
    from test_break_s10_commit import DAY_S
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.auto_checkpoint = False
    data = os.path.join(t.storage.root, "x.parquet")
    pq.write_table(pa.table({"id": [3]}, schema=SCHEMA), data)
    add = AddFile("x.parquet", os.path.getsize(data), {}, int(time.time() * 1000), True, json.dumps({"numRecords": 1}))
    with t.transaction() as txn:
        txn.add_file(add)                                                   # v1
    t.write(pa.table({"id": [2]}, schema=SCHEMA), mode="overwrite")         # v2: x.parquet removed
    t.checkpoint(2)
    old = time.time() - 40 * DAY_S
    for name in os.listdir(_log_dir(t)):
        os.utime(os.path.join(_log_dir(t), name), (old, old))
    t = DeltaTable(t.uri)
    t.auto_checkpoint = False
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri)
    try:
        with t.transaction() as txn:
            txn.add_file(add)                                               # v3, built on by v4
        outcome = "committed"
    except DeltaError as e:
        outcome = type(e).__name__
    assert outcome in ("committed", "CommitOutcomeUnknownError")
    assert os.path.exists(_commit_file(t, 3))
    assert _ids(t.uri) == [2, 3, 100]
