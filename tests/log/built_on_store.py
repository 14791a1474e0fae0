"""Store wrappers for the hole check after the put (write/commit_successor.py): another writer builds on our
commit right after it lands, before our post-put check runs (:class:`BuiltOnAtOnce`), or cleanup races our
put into a hole (:class:`HoleBeforeThePut`)."""
from __future__ import annotations

import os
import time
from typing import Any, Callable

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable

DAY_S = 86_400


def append_one_row(table: DeltaTable) -> Any:
    return table.write(pa.table({"id": [100]}))


class BuiltOnAtOnce:
    """The table's own store; right after the next commit-file put lands, another writer builds on it
    within the same second: ``build_on`` commits the next version (an append, OPTIMIZE compacting our new
    file...), checkpoints it and runs Delta Spark's metadata cleanup (MetadataCleanup.listExpiredDeltaLogs:
    every commit and checkpoint below the checkpoint older than the cutoff goes - here 0..ours-1, idle for
    40 days; ours is new and stays), all before the committer's post-put check. On a store with
    whole-second file times (S3's LastModified) the checkpoint carries the very time of our commit file
    (less ``skew_ns``: another writer's clock); os.utime gives it that time here."""

    def __init__(self, inner, uri: str, build_on: Callable[[DeltaTable], Any] = append_one_row, skew_ns: int = 0,
                 **checkpoint_kwargs):
        self.inner, self.uri, self.armed, self.checkpoint_kwargs = inner, uri, True, checkpoint_kwargs
        self.build_on, self.skew_ns = build_on, skew_ns

    def put_if_absent(self, target: str, data: bytes) -> bool:
        landed = self.inner.put_if_absent(target, data)
        if not (landed and self.armed and "_delta_log" in target and target.endswith(".json")):
            return landed
        self.armed = False
        ours = int(os.path.basename(target).split(".")[0])
        other = DeltaTable(self.uri)
        other.auto_checkpoint = False
        self.build_on(other)                                     # version ours + 1, built on ours
        other.checkpoint(ours + 1, **self.checkpoint_kwargs)
        log_dir = os.path.dirname(target)
        own_ns = os.stat(target).st_mtime_ns - self.skew_ns
        for name in os.listdir(log_dir):
            if name.startswith(f"{ours + 1:020d}.checkpoint"):
                os.utime(os.path.join(log_dir, name), ns=(own_ns, own_ns))
        cutoff = time.time() - 30 * DAY_S
        for name in os.listdir(log_dir):
            head = name.split(".")[0]
            if head.isdigit() and int(head) < ours and os.stat(os.path.join(log_dir, name)).st_mtime < cutoff:
                os.remove(os.path.join(log_dir, name))
        return landed

    def __getattr__(self, name):
        return getattr(self.inner, name)


class HoleBeforeThePut:
    """The table's own store; right before the next commit-file put (version v) lands, another writer commits
    v and on (``others``: callables on its DeltaTable), checkpoints its last version, and cleanup removes
    every commit below ``v + keep_from`` (the commits being past log retention; checkpoints stay) - so our put
    lands in the hole. ``tie``: the checkpoint gets our commit file's very time (a whole-second store);
    ``after``: called with the log folder once cleanup is done."""

    def __init__(self, inner, uri: str, others: list[Callable[[DeltaTable], Any]], keep_from: int = 1,
                 tie: bool = False, after: Callable[[str], Any] | None = None):
        self.inner, self.uri, self.others, self.keep_from, self.tie = inner, uri, others, keep_from, tie
        self.after, self.armed = after, True

    def put_if_absent(self, target: str, data: bytes) -> bool:
        if not (self.armed and "_delta_log" in target and target.endswith(".json")):
            return self.inner.put_if_absent(target, data)
        self.armed = False
        ours = int(os.path.basename(target).split(".")[0])
        other = DeltaTable(self.uri)
        other.auto_checkpoint = False
        for step in self.others:
            step(other)
        top = other.latest_version()
        other.checkpoint(top)
        log_dir = os.path.dirname(target)
        for name in os.listdir(log_dir):
            head = name.split(".")[0]
            if head.isdigit() and int(head) < ours + self.keep_from and ".checkpoint." not in name:
                os.remove(os.path.join(log_dir, name))                  # cleanup: below the checkpoint
        if self.after is not None:
            self.after(log_dir)
        landed = self.inner.put_if_absent(target, data)
        if self.tie:
            own_ns = os.stat(target).st_mtime_ns
            os.utime(os.path.join(log_dir, f"{top:020d}.checkpoint.parquet"), ns=(own_ns, own_ns))
        return landed

    def __getattr__(self, name):
        return getattr(self.inner, name)
