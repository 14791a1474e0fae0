"""The incremental commit watch shared by the sensor and the trigger."""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.hooks.commits import CommitWatch, summarize_commit
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import InvalidArgumentError
from airflow_provider_delta.log.base.names import commit_path

ROW = pa.table({"id": [1], "day": ["2026-01-01"]})


def commit_with_txn(table: DeltaTable, app_id: str, version: int, operation: str = "WRITE") -> int:
    with table.transaction(operation=operation) as txn:
        txn.set_txn(app_id, version)
    return int(txn.version)


def test_range_after_a_version_returns_every_commit_not_just_the_last(make_table):
    table = make_table(commits=3)  # versions 0..3
    watch = CommitWatch(after_version=0)
    assert watch.poll(table) is True
    assert [c["version"] for c in watch.commits] == [1, 2, 3]
    first = watch.commits[0]
    assert first["operation"] == "WRITE"
    assert first["operationMetrics"]["numFiles"] == "2"
    assert first["operationParameters"]["mode"] == "Append"
    history = {h["version"]: h["timestamp"] for h in table.history()}
    assert [c["timestamp"] for c in watch.commits] == [history[1], history[2], history[3]]
    assert watch.result() == {"version": 3, "count": 3, "first_version": 1, "last_version": 3,
                              "commits": watch.commits, "truncated": False}
    json.dumps(watch.to_dict())


def test_baseline_is_the_version_when_the_watch_starts(make_table):
    table = make_table(commits=1)
    watch = CommitWatch()
    assert watch.poll(table) is False
    assert watch.last_seen == 1 and watch.commits == []
    table.write(ROW)
    assert watch.poll(table) is True
    assert [c["version"] for c in watch.commits] == [2]


def test_target_version_waits_until_reached(make_table):
    table = make_table(commits=1)
    watch = CommitWatch(target_version=3)
    assert watch.poll(table) is False
    table.write(ROW)
    assert watch.poll(table) is False
    table.write(ROW)
    assert watch.poll(table) is True
    assert [c["version"] for c in watch.commits] == [3]


def test_target_with_after_version_reports_the_whole_range(make_table):
    table = make_table(commits=3)
    watch = CommitWatch(target_version=3, after_version=0)
    assert watch.poll(table) is True
    assert [c["version"] for c in watch.commits] == [1, 2, 3]
    early = CommitWatch(target_version=5, after_version=0)
    assert early.poll(table) is False and len(early.commits) == 3


def test_operation_and_app_id_filters(make_table):
    table = make_table(commits=1)
    watch = CommitWatch(after_version=1, operation=["MERGE", "OPTIMIZE"])
    table.write(ROW)
    assert watch.poll(table) is False
    v = commit_with_txn(table, "etl", 7, operation="MERGE")
    assert watch.poll(table) is True
    assert [c["version"] for c in watch.commits] == [v]

    by_app = CommitWatch(after_version=1, app_id="etl")
    assert by_app.poll(table) is True
    assert by_app.commits[0]["appId"] == "etl" and by_app.commits[0]["txnVersion"] == 7
    assert CommitWatch(after_version=1, app_id="other").poll(table) is False


def test_polls_read_only_new_commits(make_table):
    """A commit already examined is never read again: corrupting it does not disturb later polls."""
    table = make_table(commits=2)
    watch = CommitWatch(after_version=0)
    assert watch.poll(table)
    table.write(ROW)      # (a writer refuses to build on a corrupt log: corrupt the old commit after it)
    path = table.storage.path(commit_path(1))
    with open(path, "wb") as f:
        f.write(b"{not json at all\n")
    assert watch.poll(table)
    assert [c["version"] for c in watch.commits] == [1, 2, 3]


def test_a_missing_table_is_waited_for(tmp_path):
    uri = str(tmp_path / "later")
    table = DeltaTable(uri)
    watch = CommitWatch()
    assert watch.poll(table) is False and watch.last_seen == -1
    DeltaTable.create(uri, pa.schema([("id", pa.int64())]))
    assert watch.poll(table) is True
    assert watch.commits[0]["version"] == 0 and watch.commits[0]["operation"] == "CREATE TABLE"


def test_commits_removed_before_they_were_read_are_skipped(make_table):
    table = make_table(commits=3)
    table.checkpoint(3)  # keeps the table readable without the commits before it
    for v in (0, 1):  # what metadata cleanup would delete
        os.unlink(table.storage.path(commit_path(v)))
    watch = CommitWatch(after_version=0)
    assert watch.poll(table)
    assert [c["version"] for c in watch.commits] == [2, 3]


def test_state_round_trips_through_plain_kwargs(make_table):
    table = make_table(commits=1)
    watch = CommitWatch(target_version=3, after_version=0, operation="WRITE", app_id=None)
    watch.poll(table)
    clone = CommitWatch.from_dict(json.loads(json.dumps(watch.to_dict())))
    assert clone == watch
    table.write(ROW)
    table.write(ROW)
    assert clone.poll(table) is True
    assert [c["version"] for c in clone.commits] == [1, 2, 3]


@pytest.mark.parametrize("kwargs", [{"target_version": "x"}, {"after_version": -2},
                                    {"target_version": True}, {"target_version": -1}])
def test_bad_bounds_are_typed_errors(kwargs):
    with pytest.raises(InvalidArgumentError):
        CommitWatch(**kwargs)


def test_rendered_template_strings_are_accepted():
    w = CommitWatch(target_version="12", after_version="None", operation="", app_id="")
    assert (w.target_version, w.after_version, w.operation, w.app_id, w.last_seen) == (12, None, None, None, 11)


def test_summary_prefers_in_commit_timestamp_and_lists_several_txns():
    actions = [{"commitInfo": {"inCommitTimestamp": 5, "timestamp": 9, "operation": "WRITE",
                               "job": {"dag_id": "d"}}},
               {"txn": {"appId": "a", "version": 1}}, {"txn": {"appId": "b", "version": 2}}]
    s = summarize_commit(4, actions, None)
    assert s["timestamp"] == 5 and s["appId"] == "a" and [t["appId"] for t in s["txns"]] == ["a", "b"]
    assert s["job"] == {"dag_id": "d"}
    assert CommitWatch(after_version=0, app_id="b").matches(s)


def test_timestamps_follow_in_commit_timestamps_when_enabled(make_table):
    table = make_table(commits=1, properties={"delta.enableInCommitTimestamps": "true"})
    time.sleep(0.01)
    table.write(ROW)
    watch = CommitWatch(after_version=0)
    watch.poll(table)
    ict = [json.loads(line)["commitInfo"]["inCommitTimestamp"]
           for v in (1, 2) for line in open(table.storage.path(commit_path(v))) if '"commitInfo"' in line]
    assert [c["timestamp"] for c in watch.commits] == ict
