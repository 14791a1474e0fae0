"""A commit owner whose state lives in this process: for tests, notebooks and single-process jobs.

Its state dies with the process, so a table it owns is only writable (and its
un-backfilled tail only readable) while the process runs; use backfill batch size
1 (the default) so ``_delta_log`` is always complete for everyone else.
"""
from __future__ import annotations

import threading

from .base import CommitOwner
from .records import ACTIVE, Commit, TableState


class InMemoryCommitOwner(CommitOwner):
    """Thread-safe, process-local commit owner (``delta.managedCommit.commitOwner = in-memory``)."""

    name = "in-memory"

    def __init__(self, backfill_batch_size: int = 1):
        super().__init__(backfill_batch_size)
        self._lock = threading.Lock()
        self._tables: dict[str, TableState] = {}
        self._commits: dict[str, dict[int, Commit]] = {}

    def __repr__(self) -> str:
        return f"InMemoryCommitOwner(backfill_batch_size={self.backfill_batch_size})"

    def owner_conf(self) -> dict[str, str]:
        return {}

    def _read_table(self, table_id: str) -> TableState | None:
        with self._lock:
            return self._tables.get(table_id)

    def _read_commits(self, table_id: str, start: int, end: int | None) -> tuple[TableState | None, list[Commit]]:
        with self._lock:
            tracked = self._commits.get(table_id, {})
            commits = [c for v, c in sorted(tracked.items()) if v >= start and (end is None or v <= end)]
            return self._tables.get(table_id), commits

    def _replace_table(self, table_id: str, expected: TableState | None, new: TableState | None,
                       clear_commits: bool = False) -> bool:
        with self._lock:
            if self._tables.get(table_id) != expected:
                return False
            if new is None:
                self._tables.pop(table_id, None)
            else:
                self._tables[table_id] = new
            if clear_commits or new is None:
                self._commits.pop(table_id, None)
            return True

    def _ratify(self, table_id: str, commit: Commit) -> bool:
        with self._lock:
            cur = self._tables.get(table_id)
            if cur is None or cur.state != ACTIVE or cur.latest_version != commit.version - 1:
                return False
            self._tables[table_id] = TableState(cur.table_id, cur.table_uri, cur.state, commit.version,
                                                cur.backfilled_version)
            self._commits.setdefault(table_id, {})[commit.version] = commit
            return True

    def _mark_backfilled(self, table_id: str, version: int) -> None:
        with self._lock:
            cur = self._tables.get(table_id)
            if cur is None or cur.backfilled_version >= version:
                return
            self._tables[table_id] = TableState(cur.table_id, cur.table_uri, cur.state, cur.latest_version,
                                                version)
            tracked = self._commits.get(table_id, {})
            for v in [v for v in tracked if v <= version]:
                del tracked[v]
