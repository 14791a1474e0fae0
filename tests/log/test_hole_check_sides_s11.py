"""The other side of each fix to the post-put hole check in session 11 (tests/log/test_review_s11_rv_hole.py):
a real hole is still refused, and a commit built on at once, or one after a lost race on a healthy log,
still commits."""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import CommitOutcomeUnknownError, DeltaTable, InvalidCommittedVersionError
from airflow_provider_delta.log.base.commit_actions import AddFile
from built_on_store import BeforeTheNextPut, BuiltOnAtOnce, HoleBeforeThePut, idle_table
from test_hole_evidence import _table
from test_review_s11_rv_hole import (SCHEMA, _compact_with_removes_without_deletion_timestamp, _ids, _log_dir,
                                     _set_append_only_into_a_hole)


def test_a_hole_whose_later_commits_remove_other_files_without_deletion_timestamp_is_still_withdrawn(tmp_path):
    """Finding 1's other side: the commits between ours and the checkpoint remove files (no deletionTimestamp),
    but none of ours - they never saw our commit. The checkpoint names none of our new files: a hole."""
    t = _table(tmp_path)                                      # v1 (id 1), v2 (id 2)
    t.storage.files = HoleBeforeThePut(t.storage.files, t.uri, [lambda o: o.write(pa.table({"id": [50]})),
                                                                _compact_with_removes_without_deletion_timestamp])
    with pytest.raises(InvalidCommittedVersionError):
        t.write(pa.table({"id": [3]}))                        # lands as v3 below checkpoint 4
    assert not os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))      # withdrawn
    assert _ids(t.uri) == [1, 2, 50]


def test_a_commit_adding_a_known_path_and_removing_a_file_built_on_at_once_stays(tmp_path):
    """Finding 2's other side: a commit that adds a hand-made file (not fresh) and removes a live one, built on
    at once by another writer (checkpoint, cleanup below ours): the checkpoint holds our add and our
    tombstone, nothing disagrees - committed."""
    t = idle_table(str(tmp_path / "t"))                       # v0..v2 idle for 40 days, checkpoint 2
    data = os.path.join(t.storage.root, "external", "x.parquet")
    os.makedirs(os.path.dirname(data))
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), data)
    first = next(r["path"] for r in t.snapshot().files().to_pylist()                # the file of id 1
                 if pq.read_table(os.path.join(t.storage.root, r["path"])).column("id").to_pylist() == [1])
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri)
    with t.transaction(operation="WRITE") as txn:             # v3; v4 appends id 100, checkpoint 4, cleanup < 3
        txn.add_file(AddFile("external/x.parquet", os.path.getsize(data), {}, int(time.time() * 1000), True,
                             json.dumps({"numRecords": 1})))
        txn.remove_file(first)
    assert os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))
    assert _ids(t.uri) == [2, 7, 100]


def test_a_writer_that_lost_a_race_to_a_checkpointed_live_commit_still_commits(tmp_path):
    """Finding 4's other side: Y loses version 3 to a live commit whose writer checkpoints it at once; the
    checkpoint (3) is below the version Y puts (4), so the listing after the lost race finds no hole."""
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, SCHEMA)
    t.auto_checkpoint = False
    t.write(pa.table({"id": [1]}))
    t.write(pa.table({"id": [2]}))

    def other_wins_and_checkpoints() -> None:
        other = DeltaTable(root)
        other.auto_checkpoint = False
        other.write(pa.table({"id": [3]}))                    # v3
        other.checkpoint(3)
    y = DeltaTable(root)
    y.auto_checkpoint = False
    y.storage.files = BeforeTheNextPut(y.storage.files, other_wins_and_checkpoints)
    y.write(pa.table({"id": [8]}))                            # loses 3, commits 4
    assert DeltaTable(root).latest_version() == 4
    assert _ids(root) == [1, 2, 3, 8]


def test_the_unknown_outcome_of_the_hole_check_names_the_checks_that_tell(tmp_path):
    """Finding 3 (the error's advice): an undecided hole check points to the latest snapshot (txn record, or the
    change itself), and says that history lists the commit file even in a hole."""
    t = _table(tmp_path)                                      # v1 (id 1), v2 (id 2)
    with pytest.raises(CommitOutcomeUnknownError) as e:
        _set_append_only_into_a_hole(t)
    assert "snapshot().transaction_version(app_id)" in str(e.value)
    assert "history() is no proof" in str(e.value)
    assert os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))          # left in place
    assert "delta.appendOnly" not in DeltaTable(t.uri).snapshot().metadata.configuration
