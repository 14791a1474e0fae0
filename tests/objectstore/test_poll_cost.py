"""A poll that finds nothing new costs the same on a long log as on a short one.

The sensor and trigger ask ``commits_since(last_seen)``; a reused table object's
``latest_version()`` also lists from what it saw last. The cost is counted, not timed:
storage calls plus the directory entries they return (local), and HTTP requests plus
returned keys (S3 on the moto server). Timings are in tests/benchmarks/bench_sensor_poll.py.
"""
from __future__ import annotations

import os
import shutil

import pyarrow as pa
import pytest

from airflow_provider_delta.hooks.commits import CommitWatch
from airflow_provider_delta.log.base.names import commit_path
from log_growth import SCHEMA, add_recent_checkpoint, commit_info_only, make_long_table

LONG_LOCAL = int(os.environ.get("DELTA_POLL_LONG_VERSIONS", "100000"))
LONG_S3 = int(os.environ.get("DELTA_POLL_LONG_S3_VERSIONS", "1200"))
SHORT = 100
COUNTED = ("list_dir", "list_dir_from", "file_info", "read_bytes", "exists", "isdir", "open")


class StorageCounter:
    """Counts calls of the table's Storage methods and the entries listings return."""

    def __init__(self, monkeypatch, storage):
        self.calls = 0
        self.entries = 0
        for name in COUNTED:
            monkeypatch.setattr(storage, name, self._wrap(getattr(storage, name)))

    def _wrap(self, fn):
        def counted(*args, **kwargs):
            self.calls += 1
            out = fn(*args, **kwargs)
            if isinstance(out, list):
                self.entries += len(out)
            return out
        return counted

    @property
    def cost(self) -> int:
        return self.calls + self.entries


class S3RequestCounter:
    """Counts S3 requests (and keys listed) made through the table's s3fs instance."""

    def __init__(self, monkeypatch, fs):
        self.requests = 0
        self.keys = 0
        inner = fs._call_s3

        async def counted(method, *args, **kwargs):
            self.requests += 1
            out = await inner(method, *args, **kwargs)
            if isinstance(out, dict):
                self.keys += len(out.get("Contents", []))
            return out
        monkeypatch.setattr(fs, "_call_s3", counted)

    @property
    def cost(self) -> int:
        return self.requests + self.keys


def poll_cost(monkeypatch, table, counter_of) -> tuple[int, CommitWatch]:
    latest = table.latest_version()
    watch = CommitWatch(after_version=latest)
    with monkeypatch.context() as m:
        counter = counter_of(m, table)
        assert watch.poll(table) is False
        assert table.latest_version() == latest
    assert counter.cost > 0, "the counter saw no storage access: it would prove nothing"
    return counter.cost, watch


@pytest.mark.slow
def test_local_poll_on_a_long_log_costs_at_most_twice_a_short_one(tmp_path, monkeypatch):
    counter_of = lambda m, t: StorageCounter(m, t.storage)  # noqa: E731
    short = make_long_table(str(tmp_path / "short"), SHORT, {})
    long = make_long_table(str(tmp_path / "long"), LONG_LOCAL, {})
    for recent_checkpoint in (False, True):
        if recent_checkpoint:
            add_recent_checkpoint(short.storage, SHORT - 1)
            add_recent_checkpoint(long.storage, LONG_LOCAL - 1)
        short_cost, _ = poll_cost(monkeypatch, short, counter_of)
        long_cost, watch = poll_cost(monkeypatch, long, counter_of)
        assert long_cost <= 2 * short_cost, (recent_checkpoint, short_cost, long_cost)
    # and the cheap poll still sees the next commit, with its timestamp
    assert long.storage.put_if_absent(commit_path(LONG_LOCAL), commit_info_only(LONG_LOCAL))
    assert watch.poll(long) is True
    assert [c["version"] for c in watch.commits] == [LONG_LOCAL]
    # without in-commit timestamps a commit's time is its file's mtime, monotonized only over
    # the commits the poll listed (docs/guides/object-stores.md)
    assert watch.commits[0]["timestamp"] == long.storage.mtime_ms(commit_path(LONG_LOCAL))
    shutil.rmtree(tmp_path / "long")


def test_poll_falls_back_to_a_full_listing_when_the_seen_version_is_gone(tmp_path):
    table = make_long_table(str(tmp_path / "t"), 10, {})
    watch = CommitWatch(after_version=5)
    os.unlink(table.storage.path(commit_path(5)))      # e.g. the table was replaced by hand
    assert watch.poll(table) is True
    assert [c["version"] for c in watch.commits] == [6, 7, 8, 9]


def test_s3_poll_on_a_long_log_costs_at_most_twice_a_short_one(object_stores, monkeypatch):
    s3 = object_stores("s3")
    counter_of = lambda m, t: S3RequestCounter(m, t.storage.fs)  # noqa: E731
    short = make_long_table(s3.uri("short"), SHORT, s3.table_kwargs, checkpoint_near_end=True)
    long = make_long_table(s3.uri("long"), LONG_S3, s3.table_kwargs, checkpoint_near_end=True)
    short_cost, _ = poll_cost(monkeypatch, short, counter_of)
    long_cost, watch = poll_cost(monkeypatch, long, counter_of)
    assert long_cost <= 2 * short_cost, (short_cost, long_cost)
    # a full listing of the long log would return every key: the poll did not
    assert long_cost < LONG_S3 / 10
    long.write(pa.table({"id": [7]}, schema=SCHEMA))
    assert watch.poll(long) is True
    assert [c["version"] for c in watch.commits] == [LONG_S3]
