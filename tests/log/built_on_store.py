"""Store wrappers for the hole check after the put (write/commit_successor.py): another writer builds on our
commit right after it lands, before our post-put check runs (:class:`BuiltOnAtOnce`), or cleanup races our
put into a hole (:class:`HoleBeforeThePut`)."""
from __future__ import annotations

import os
import time
from typing import Any, Callable, Iterable

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable

DAY_S = 86_400


def append_one_row(table: DeltaTable) -> Any:
    return table.write(pa.table({"id": [100]}))


def age_log(table: DeltaTable, days: float = 40) -> None:
    """Give every file of ``table``'s log a time ``days`` ago: an idle table, its log past retention (30 days
    by default), so metadata cleanup after a newer checkpoint removes it."""
    log_dir = os.path.join(table.storage.root, "_delta_log")
    old = time.time() - days * DAY_S
    for name in os.listdir(log_dir):
        os.utime(os.path.join(log_dir, name), (old, old))


def idle_table(uri: str, properties: dict[str, str] | None = None) -> DeltaTable:
    """A table (one ``id`` column) of two appends (ids 1 and 2) and a checkpoint of version 2, idle for 40
    days (:func:`age_log`), automatic checkpoints off: the set-up of the same-second tie tests, whose next
    commit (version 3) :class:`BuiltOnAtOnce` builds on."""
    table = DeltaTable.create(uri, pa.schema([("id", pa.int64())]), properties=properties)
    table.auto_checkpoint = False
    table.write(pa.table({"id": [1]}))
    table.write(pa.table({"id": [2]}))
    table.checkpoint(2)
    age_log(table)
    return table


class BuiltOnAtOnce:
    """The table's own store; right after the next commit-file put lands, another writer builds on it
    within the same second: ``build_on`` commits the next version (an append, OPTIMIZE compacting our new
    file...), checkpoints it and runs a metadata cleanup that deletes file by file below the checkpoint (every
    commit and checkpoint older than the cutoff goes - here 0..ours-1, idle for 40 days; ours is new and
    stays), all before the committer's post-put check. That is delta-rs's way and stricter than Delta
    Spark's MetadataCleanup, which deletes only whole checkpoint-to-checkpoint stretches whose last file
    has expired, and so would keep 0..ours-1 here (they share a stretch with our new commit). On a store with
    whole-second file times (S3's LastModified) the checkpoint carries the very time of our commit file
    (less ``skew_ns``: another writer's clock); os.utime gives it that time here. ``maintain=False``: the
    checkpoint and cleanup are ``build_on``'s writer's own (Delta Spark: :meth:`by_delta_spark`).
    ``names_after``: the log's file names once the other writer is done."""

    def __init__(self, inner, uri: str, build_on: Callable[[DeltaTable], Any] = append_one_row, skew_ns: int = 0,
                 maintain: bool = True, **checkpoint_kwargs):
        self.inner, self.uri, self.armed, self.checkpoint_kwargs = inner, uri, True, checkpoint_kwargs
        self.build_on, self.skew_ns, self.maintain = build_on, skew_ns, maintain
        self.names_after: list[str] = []

    @classmethod
    def by_delta_spark(cls, inner, uri: str, spark: Any, rows: list[tuple], ddl: str) -> "BuiltOnAtOnce":
        """Delta Spark builds on our commit: it appends ``rows`` (of schema ``ddl``) to the table at ``uri`` (a
        path), then checkpoints and cleans up by the table's own properties (``delta.checkpointInterval``)."""
        def append(_other: DeltaTable) -> None:
            spark.createDataFrame(rows, ddl).write.format("delta").mode("append").save(uri)
        return cls(inner, uri, build_on=append, maintain=False)

    def put_if_absent(self, target: str, data: bytes) -> bool:
        landed = self.inner.put_if_absent(target, data)
        if not (landed and self.armed and "_delta_log" in target and target.endswith(".json")):
            return landed
        self.armed = False
        ours = int(os.path.basename(target).split(".")[0])
        other = DeltaTable(self.uri)
        other.auto_checkpoint = False
        self.build_on(other)                                     # version ours + 1, built on ours
        if self.maintain:
            other.checkpoint(ours + 1, **self.checkpoint_kwargs)
        log_dir = os.path.dirname(target)
        own_ns = os.stat(target).st_mtime_ns - self.skew_ns
        for name in os.listdir(log_dir):
            if name.startswith(f"{ours + 1:020d}.checkpoint"):
                os.utime(os.path.join(log_dir, name), ns=(own_ns, own_ns))
        cutoff = time.time() - 30 * DAY_S
        for name in os.listdir(log_dir) if self.maintain else ():
            head = name.split(".")[0]
            if head.isdigit() and int(head) < ours and os.stat(os.path.join(log_dir, name)).st_mtime < cutoff:
                os.remove(os.path.join(log_dir, name))
        self.names_after = sorted(os.listdir(log_dir))
        return landed

    def __getattr__(self, name):
        return getattr(self.inner, name)


class HoleBeforeThePut:
    """The table's own store; right before the next commit-file put (version v) lands, another writer commits
    v and on (``others``: callables on its DeltaTable), checkpoints its last version, and cleanup removes
    every commit below ``v + keep_from`` (the commits being past log retention; checkpoints stay) - so our put
    lands in the hole. ``gone(v, C)``: instead, the versions whose commit files cleanup removed (any order a
    cleaner deletes in). ``tie``: the checkpoint gets our commit file's very time (a whole-second store);
    ``checkpoint_ahead_ms``: that time plus so much (the cleaner's clock ahead of ours); ``after``: called with
    the log folder once cleanup is done."""

    def __init__(self, inner, uri: str, others: list[Callable[[DeltaTable], Any]], keep_from: int = 1,
                 tie: bool = False, after: Callable[[str], Any] | None = None,
                 gone: Callable[[int, int], Iterable[int]] | None = None, checkpoint_ahead_ms: int | None = None):
        self.inner, self.uri, self.others, self.keep_from = inner, uri, others, keep_from
        self.after, self.gone, self.armed = after, gone, True
        self.checkpoint_ahead_ms = 0 if tie and checkpoint_ahead_ms is None else checkpoint_ahead_ms

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
        if self.gone is not None:
            for v in self.gone(ours, top):
                os.remove(os.path.join(log_dir, f"{v:020d}.json"))
        else:
            for name in os.listdir(log_dir):
                head = name.split(".")[0]
                if head.isdigit() and int(head) < ours + self.keep_from and ".checkpoint." not in name:
                    os.remove(os.path.join(log_dir, name))              # cleanup: below the checkpoint
        if self.after is not None:
            self.after(log_dir)
        landed = self.inner.put_if_absent(target, data)
        if self.checkpoint_ahead_ms is not None:
            ns = os.stat(target).st_mtime_ns + self.checkpoint_ahead_ms * 1_000_000
            os.utime(os.path.join(log_dir, f"{top:020d}.checkpoint.parquet"), ns=(ns, ns))
        return landed

    def __getattr__(self, name):
        return getattr(self.inner, name)


class BeforeTheNextPut:
    """The table's own store; right before the next commit-file put, ``before()`` runs once (another writer's
    commit, a checkpoint...), then the put goes ahead."""

    def __init__(self, inner, before: Callable[[], Any]):
        self.inner, self.before, self.armed = inner, before, True

    def put_if_absent(self, target: str, data: bytes) -> bool:
        if self.armed and "_delta_log" in target and target.endswith(".json"):
            self.armed = False
            self.before()
        return self.inner.put_if_absent(target, data)

    def __getattr__(self, name):
        return getattr(self.inner, name)
