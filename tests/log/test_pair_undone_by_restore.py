"""The rule "a writer's exactly-once pair undone by a RESTORE" (log/write/pair_undone_by_restore.py, #27).

Real tables: the pair committed with its rows, then RESTOREs (by version and by timestamp), forward and back.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import (DeltaTable, PairUndone, PairUndoneByRestoreError, check_pair_not_undone,
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


def test_timestamp_restores_are_resolved(tmp_path):
    table = _table(tmp_path)
    t1, t3 = (table.snapshot(version=v).timestamp for v in (1, 3))
    table.restore(timestamp=t1)                                          # version 4: to version 1
    assert pair_undone_by_restore(table, APP, 7) == PairUndone(2, 4, 1)
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
