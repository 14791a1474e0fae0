"""``DeltaCommitEventTrigger``: schedule DAGs on Delta commits (Airflow 3 ``AssetWatcher``).

Only triggers that subclass ``BaseEventTrigger`` may watch an asset. This one polls
the table's log the way :class:`DeltaCommitTrigger` does (one listing per poll, only
new commits read, the same ``operation`` and ``app_id`` filters through
:class:`~airflow_provider_delta.hooks.commits.CommitWatch`) and, instead of firing
once, fires for every batch of new matching commits (or every commit, with
``per_commit=True``) for as long as the asset is watched::

    orders = Asset("delta:///data/orders", watchers=[AssetWatcher(
        name="orders_commits",
        trigger=DeltaCommitEventTrigger(table_uri="/data/orders", operation="WRITE"))])

    with DAG("on_orders", schedule=[orders]): ...

The asset event's extra is ``{"from_trigger": True, "payload": <event payload>}``; the
payload carries ``table_uri``, ``after_version`` (exclusive) and ``version`` (the
range the event covers), ``versions``, ``operations``, ``timestamps`` (epoch ms) of
the matching commits, their summaries under ``commits``, and ``redelivered``.

The position survives triggerer restarts in the asset state store (see
:mod:`.watch_position` for the order of writes that never skips a commit); a table
that does not exist yet is waited for, and its version 0 counts.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, AsyncIterator

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from ..hooks.commits import CommitWatch, _as_names, _as_version
from ..log import DeltaError, TableNotFoundError
from .tables import open_table
from .watch_position import PositionStore, WatchPosition, position_key

# AssetStateStoreAccessors refuses to guess which asset is meant when several watch one trigger
_MULTI_ASSET_ERROR = "concrete inlets and outlets"


class DeltaCommitEventTrigger(BaseEventTrigger):
    """Emit an event for each batch (or each) of new matching commits of a Delta table.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param delta_conn_id: ``delta`` connection (optional for absolute URIs)
    :param operation: only commits with this commitInfo.operation count (a name or a list)
    :param app_id: only commits carrying a ``txn`` action with this appId count
    :param after_version: where a watcher with no stored position starts: commits after it
        count (default: the table's version when the watcher first runs; -1 for every commit)
    :param per_commit: one event per matching commit instead of one per poll
    :param poke_interval: seconds between polls
    """

    def __init__(self, table_uri: str, delta_conn_id: str | None = None,
                 operation: str | list[str] | None = None, app_id: str | None = None,
                 after_version: int | str | None = None, per_commit: bool = False,
                 poke_interval: float = 60.0, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table_uri = table_uri
        self.delta_conn_id = delta_conn_id
        names = _as_names(operation)
        self.operation = list(names) if names else None
        self.app_id = app_id or None
        self.after_version = _as_version(after_version, "after_version")
        self.per_commit = bool(per_commit)
        self.poke_interval = float(poke_interval)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return f"{type(self).__module__}.{type(self).__qualname__}", {
            "table_uri": self.table_uri, "delta_conn_id": self.delta_conn_id, "operation": self.operation,
            "app_id": self.app_id, "after_version": self.after_version, "per_commit": self.per_commit,
            "poke_interval": self.poke_interval}

    @property
    def position_key(self) -> str:
        return position_key(table_uri=self.table_uri, delta_conn_id=self.delta_conn_id,
                            operation=self.operation, app_id=self.app_id, per_commit=self.per_commit)

    # ------------------------------------------------------------------ events
    def events_for(self, commits: list[dict[str, Any]], after: int, through: int,
                   redelivered: bool) -> list[TriggerEvent]:
        """The events announcing ``commits`` (matching summaries in ``(after, through]``)."""
        if not commits:
            return []
        groups = [[c] for c in commits] if self.per_commit else [commits]
        out = []
        for group in groups:
            lo = after if not self.per_commit else group[0]["version"] - 1
            hi = through if not self.per_commit else group[0]["version"]
            out.append(TriggerEvent({
                "table_uri": self.table_uri, "after_version": lo, "version": hi,
                "versions": [c["version"] for c in group], "operations": [c["operation"] for c in group],
                "timestamps": [c["timestamp"] for c in group], "commits": group,
                "redelivered": redelivered}))
        return out

    def _matching(self, table: Any, after: int, through: int | None = None) -> tuple[list[dict[str, Any]], int]:
        """Matching commit summaries after ``after`` (up to ``through``) and the newest version examined."""
        watch = CommitWatch(after_version=after, operation=self.operation, app_id=self.app_id)
        watch.poll(table)
        newest = watch.last_seen if watch.last_seen is not None else after
        if through is not None:
            return [c for c in watch.commits if c["version"] <= through], min(newest, through)
        return watch.commits, newest

    # --------------------------------------------------------------------- run
    async def _store(self) -> tuple[PositionStore, WatchPosition | None]:
        store = PositionStore(getattr(self, "asset_state_store", None), self.position_key)  # Airflow 3.3+
        try:
            return store, await store.load()
        except ValueError as e:
            if _MULTI_ASSET_ERROR not in str(e):
                raise
            self.log.warning("%s is watched by several assets with the same trigger arguments: its position "
                             "is kept in memory only, so a triggerer restart may repeat or miss commits",
                             self.table_uri)
            return PositionStore(None, store.key), None

    async def _start_version(self, table: Any) -> int:
        if self.after_version is not None:
            return self.after_version
        try:
            return await asyncio.to_thread(table.latest_version)
        except TableNotFoundError:
            return -1

    async def run(self) -> AsyncIterator[TriggerEvent]:
        table = await open_table(self.table_uri, self.delta_conn_id)
        store, position = await self._store()
        if not store.durable:
            self.log.warning("no asset state store (Airflow before 3.3, or several assets): the position of "
                             "%s lives in memory only", self.table_uri)
        if position is None:
            position = WatchPosition(await self._start_version(table))
            await store.save(position)
            self.log.info("Watching %s for commits after version %s", self.table_uri, position.version)
        elif position.pending is not None:
            # An event was on its way when the triggerer stopped: emit it again (see watch_position).
            self.log.info("Re-emitting versions %s..%s of %s: the triggerer stopped before their event was "
                          "confirmed", position.version + 1, position.pending, self.table_uri)
            commits, _ = await asyncio.to_thread(self._matching, table, position.version, position.pending)
            for event in self.events_for(commits, position.version, position.pending, redelivered=True):
                yield event
            position.emitted_at = time.monotonic()
        while True:
            if position.confirmable():
                position = WatchPosition(position.examined)
                await store.save(position)
            if position.pending is None:
                try:
                    commits, newest = await asyncio.to_thread(self._matching, table, position.version)
                except DeltaError as e:   # a watcher outlives errors: report and poll again
                    self.log.error("Polling %s failed: %s: %s", self.table_uri, type(e).__name__, e)
                    commits, newest = [], position.version
                if newest > position.version:
                    events = self.events_for(commits, position.version, newest, redelivered=False)
                    if events:
                        position = WatchPosition(position.version, pending=newest)
                        await store.save(position)
                        for event in events:
                            yield event
                        position.emitted_at = time.monotonic()
                    else:          # only commits the filters leave out: nothing to announce
                        position = WatchPosition(newest)
                        await store.save(position)
            await asyncio.sleep(self.poke_interval)
