"""``DeltaTable.commits_since``: what a sensor or trigger polls for."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CommitsSince, DeltaTable, InMemoryCommitOwner, InvalidArgumentError
from airflow_provider_delta.log.base.names import commit_path

SCHEMA = pa.schema([("id", pa.int64())])


def test_no_table_yet_has_no_latest_version(tmp_path):
    assert DeltaTable(str(tmp_path / "missing")).commits_since(-1) == CommitsSince(None, [])


def test_commits_after_a_version_oldest_first_with_actions_and_timestamps(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    for i in range(3):
        t.write(pa.table({"id": [i]}))
    new = t.commits_since(1)
    assert new.latest == 3
    assert [c.version for c in new.commits] == [2, 3]
    assert all(any("add" in a for a in c.actions) for c in new.commits)
    history = {h["version"]: h["timestamp"] for h in t.history()}
    assert [c.timestamp for c in new.commits] == [history[2], history[3]]
    assert [c.version for c in t.commits_since(-1).commits] == [0, 1, 2, 3]
    assert t.commits_since(3).commits == [] and t.commits_since(3).latest == 3


def test_in_commit_timestamps_come_from_the_commits(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.enableInCommitTimestamps": "true"},
                          clock=lambda: 1_000)
    t.write(pa.table({"id": [1]}), clock=lambda: 5_000)
    assert [c.timestamp for c in t.commits_since(-1).commits] == [1_000, 5_000]


def test_a_commit_cleaned_up_before_it_was_read_is_left_out(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.write(pa.table({"id": [1]}))
    t.checkpoint()
    os.remove(tmp_path / "t" / commit_path(0))
    new = t.commits_since(-1)
    assert new.latest == 1 and [c.version for c in new.commits] == [1]


def test_un_backfilled_commits_of_a_managed_table_are_seen(tmp_path):
    owner = InMemoryCommitOwner(backfill_batch_size=10)
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    t.write(pa.table({"id": [1]}))
    assert not (tmp_path / "t" / commit_path(1)).exists()
    new = t.commits_since(0)
    assert [c.version for c in new.commits] == [1] and new.commits[0].timestamp is not None
    assert DeltaTable(str(tmp_path / "t")).commits_since(0).latest == 0     # without the owner: backfilled only


@pytest.mark.parametrize("bad", [None, "1", 1.5, True, -2])
def test_bad_versions_are_refused(tmp_path, bad):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(InvalidArgumentError):
        t.commits_since(bad)
