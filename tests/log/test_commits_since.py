"""``DeltaTable.commits_since``: what a sensor or trigger polls for."""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CommitsSince, DeltaTable, InMemoryCommitOwner, InvalidArgumentError, SqlCommitOwner
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


def _managed(uri: str, owner_url: str, ids: list[int], backfill_batch_size: int = 1) -> DeltaTable:
    """A managed-commit table at ``uri`` (created when there is none) with one commit per id appended."""
    owner = SqlCommitOwner(owner_url, backfill_batch_size=backfill_batch_size)
    t = DeltaTable(uri, commit_owner=owner) if os.path.isdir(os.path.join(uri, "_delta_log")) else \
        DeltaTable.create(uri, SCHEMA, commit_owner=owner)
    for i in ids:
        t.write(pa.table({"id": [i]}))
    return t


def _ids(new: CommitsSince) -> list[int]:
    """The ids the commits of ``new`` added, in commit order (read from their add stats)."""
    import json
    return [json.loads(a["add"]["stats"])["minValues"]["id"] for c in new.commits for a in c.actions if "add" in a]


def test_a_fresh_reader_of_a_managed_table_lists_the_commits_after_a_version(tmp_path):
    """Review s12-rv-airflow: the table id the owner keys the table by was read from the poll's listing from
    the version on, which lacks commit 0 (and any checkpoint): 'commit 0 is gone'. The id comes from a full
    listing, once per table object; the un-backfilled tail that needs it is there."""
    uri, url = str(tmp_path / "t"), f"sqlite:///{tmp_path / 'owner.db'}"
    _managed(uri, url, [1, 2])                                       # 0..2 backfilled
    _managed(uri, url, [3, 4], backfill_batch_size=100)              # 3, 4 only with the owner
    assert not (tmp_path / "t" / commit_path(3)).exists()
    reader = DeltaTable(uri, commit_owner=SqlCommitOwner(url, backfill_batch_size=100))
    new = reader.commits_since(1)
    assert new.latest == 4 and [c.version for c in new.commits] == [2, 3, 4] and _ids(new) == [2, 3, 4]
    assert [c.version for c in reader.commits_since(3).commits] == [4]      # the next poll, same object


def test_a_fresh_reader_of_a_managed_table_after_a_checkpoint_and_cleanup(tmp_path):
    uri, url = str(tmp_path / "t"), f"sqlite:///{tmp_path / 'owner.db'}"
    t = _managed(uri, url, [1, 2, 3])
    t.checkpoint(2)
    for v in (0, 1):
        os.remove(tmp_path / "t" / commit_path(v))
    new = DeltaTable(uri, commit_owner=SqlCommitOwner(url, backfill_batch_size=1)).commits_since(2)
    assert [c.version for c in new.commits] == [3] and _ids(new) == [3]


def test_a_fresh_reader_of_a_table_recreated_at_the_location_reads_the_new_tables_commits(tmp_path):
    """The other side: the id read from the full listing is the table's now at the location, so the owner's
    tail asked for is the new table's (the old table's id would name commits that are no longer there)."""
    uri, url = str(tmp_path / "t"), f"sqlite:///{tmp_path / 'owner.db'}"
    old_id = _managed(uri, url, [1, 2, 3], backfill_batch_size=100).snapshot().metadata.id
    shutil.rmtree(uri)
    new_table = _managed(uri, url, [10, 11])                          # 0..2 backfilled
    _managed(uri, url, [12], backfill_batch_size=100)                 # 3 only with the owner
    assert new_table.snapshot().metadata.id != old_id
    new = DeltaTable(uri, commit_owner=SqlCommitOwner(url, backfill_batch_size=100)).commits_since(1)
    assert new.latest == 3 and [c.version for c in new.commits] == [2, 3] and _ids(new) == [11, 12]


def test_a_long_lived_reader_of_a_table_recreated_at_the_location(tmp_path):
    uri, url = str(tmp_path / "t"), f"sqlite:///{tmp_path / 'owner.db'}"
    _managed(uri, url, [1, 2])
    _managed(uri, url, [3], backfill_batch_size=100)
    reader = DeltaTable(uri, commit_owner=SqlCommitOwner(url, backfill_batch_size=100))
    assert [c.version for c in reader.commits_since(1).commits] == [2, 3]
    shutil.rmtree(uri)
    _managed(uri, url, [10, 11, 12])                                  # 0..3 backfilled
    _managed(uri, url, [20], backfill_batch_size=100)                 # 4 only with the owner
    new = reader.commits_since(2)
    assert new.latest == 4 and _ids(new) == [12, 20]


@pytest.mark.parametrize("bad", [None, "1", 1.5, True, -2])
def test_bad_versions_are_refused(tmp_path, bad):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(InvalidArgumentError):
        t.commits_since(bad)
