"""Commits read into one buffer (``commit_reader.read_blobs``) hold exactly the commit files.

Local commit files are read straight into their places in one buffer, sized from the
listing; every commit with bytes ends in a newline there. These tests check the bytes
against the files for the shapes logs really have (no final newline, an empty file,
a file that grew after it was listed, one that vanished) and that replay over the
buffer equals replay over the files given one by one.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, VersionNotFoundError
from airflow_provider_delta.log.read.commit_reader import CommitBlobs, read_blobs
from airflow_provider_delta.log.read.listing import list_backfilled
from airflow_provider_delta.log.read.replay import parse_json_logs


@pytest.fixture
def log(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("day", pa.string())]),
                          partition_by=["day"])
    for i in range(4):
        t.write(pa.table({"id": [i, i + 10], "day": [f"d{i}", "x"]}), mode="append")
    return t


def _files(t: DeltaTable) -> list:
    listing = list_backfilled(t.storage)
    return [listing.commits[v] for v in sorted(listing.commits)]


def _expected(commits) -> list[tuple[int, bytes, str]]:
    out = []
    for c in commits:
        with open(c.path, "rb") as f:
            data = f.read()
        out.append((c.version, data + b"\n" if data and not data.endswith(b"\n") else data, c.path))
    return out


def test_one_buffer_holds_each_commit_newline_terminated(log):
    commits = _files(log)
    with open(commits[2].path, "rb+") as f:       # a writer that left out the final newline
        data = f.read().rstrip(b"\n")
        f.seek(0)
        f.truncate()
        f.write(data)
    blobs = read_blobs(log.storage, _files(log))
    assert isinstance(blobs.buffer, bytearray)    # the local path, not a join
    assert list(blobs) == _expected(_files(log))
    assert blobs[-1] == _expected(_files(log))[-1]
    assert [v for v, _, _ in blobs.since(2)] == [3, 4]
    assert [v for v, _, _ in blobs.since(2) + blobs.since(3)] == [3, 4, 4]


def test_an_empty_commit_file_and_one_that_grew_after_listing(log):
    commits = _files(log)
    open(commits[1].path, "wb").close()               # empty
    listed = _files(log)
    with open(commits[3].path, "ab") as f:            # grew after it was listed
        f.write(b'{"commitInfo":{"grown":true}}\n')
    blobs = read_blobs(log.storage, listed)
    assert list(blobs) == _expected(listed)
    assert b'"grown"' in blobs[3][1] and blobs[1][1] == b""


def test_a_commit_that_vanished_is_a_version_error(log):
    commits = _files(log)
    os.remove(commits[2].path)
    with pytest.raises(VersionNotFoundError, match="disappeared"):
        read_blobs(log.storage, commits)


def test_replay_of_the_buffer_equals_replay_of_separate_files(log):
    commits = _files(log)
    blobs = read_blobs(log.storage, commits)
    joined = parse_json_logs(CommitBlobs.join(_expected(commits)), ["day"])
    one = parse_json_logs(blobs, ["day"])
    assert one.file_actions.equals(joined.file_actions)
    assert one.others == joined.others
    as_list = parse_json_logs(_expected(commits), ["day"])
    assert as_list.file_actions.equals(one.file_actions) and as_list.others == one.others
    assert one.file_actions.num_rows == 8 and len(one.others) > 4
