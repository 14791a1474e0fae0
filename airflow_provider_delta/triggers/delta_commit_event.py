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
range the event covers), ``count``, ``first_version`` and ``last_version`` of the
matching commits, ``versions``, ``operations``, ``timestamps`` (epoch ms) and summaries
(``commits``) of the newest :data:`~..hooks.payloads.MAX_LISTED` of them (``truncated``
says whether older ones were left out: read the range incrementally instead),
``redelivered``, and ``position`` (the watcher's key and the version the event accounts for).

The position survives triggerer restarts in the asset state store and moves only
once Airflow has stored the event (an ack-mode shared stream, Airflow 3.3+; see
:mod:`.commit_stream`), so a restart never skips a commit; the provider's listener
also records it in the transaction that stores each event (:mod:`.stored_positions`),
so a restart does not repeat one either. Without that listener, a commit falling in
the second or two between the event being stored and its confirmation is announced
again, flagged ``redelivered``. A table that does not exist yet is waited for, and
its version 0 counts.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from ..hooks.commits import CommitWatch, as_names, as_version
from ..hooks.payloads import newest
from ..log import TableNotFoundError
from .commit_stream import CommitLogProducer, CommitStream, SharedStreamProducer, lend_store, take_back_store
from .watch_position import position_key


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
        names = as_names(operation)
        self.operation = list(names) if names else None
        self.app_id = app_id or None
        self.after_version = as_version(after_version, "after_version")
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
    def payloads(self, commits: list[dict[str, Any]], after: int, through: int,
                 announced_through: int = -1) -> list[tuple[dict[str, Any], int]]:
        """The event payloads announcing ``commits`` (matching summaries in ``(after, through]``), each
        with the version up to which it accounts for the log (the last one: ``through``).

        An event holding a version up to ``announced_through`` (an event may already have
        announced it before a restart) is flagged ``redelivered``."""
        if not commits:
            return []
        groups = [[c] for c in commits] if self.per_commit else [commits]
        out = []
        for i, group in enumerate(groups):
            lo = after if not self.per_commit else group[0]["version"] - 1
            hi = through if not self.per_commit else group[0]["version"]
            accounted = through if i == len(groups) - 1 else hi
            listed = newest(group)
            out.append(({
                "table_uri": self.table_uri, "after_version": lo, "version": hi,
                "count": len(group), "first_version": group[0]["version"], "last_version": group[-1]["version"],
                "versions": [c["version"] for c in listed], "operations": [c["operation"] for c in listed],
                "timestamps": [c["timestamp"] for c in listed], "commits": listed,
                "truncated": len(group) > len(listed),
                "redelivered": group[0]["version"] <= announced_through,
                # read by the listener that moves the position as Airflow stores this event
                "position": {"key": self.position_key, "through": accounted}},
                accounted))
        return out

    def matching(self, table: Any, after: int) -> tuple[list[dict[str, Any]], int]:
        """Matching commit summaries after ``after`` and the newest version examined."""
        watch = CommitWatch(after_version=after, operation=self.operation, app_id=self.app_id, keep=None)
        watch.poll(table)
        return watch.commits, watch.last_seen if watch.last_seen is not None else after

    async def start_version(self, table: Any) -> int:
        """Where a watcher with no stored position starts: ``after_version``, else the table's version."""
        if self.after_version is not None:
            return self.after_version
        try:
            return await asyncio.to_thread(table.latest_version)
        except TableNotFoundError:
            return -1

    # ------------------------------------------------- shared stream (ack mode)
    def shared_stream_key(self) -> tuple[str, str] | None:
        """Poll through an ack-mode shared stream whenever there is a store to keep the position in.

        The triggerer calls this once, after handing the trigger its asset state store; the
        store is lent to the group (:func:`.commit_stream.lend_store`) until the trigger leaves.
        """
        store = getattr(self, "asset_state_store", None)
        if store is None or SharedStreamProducer is object:
            return None
        lend_store(self.position_key, id(self), store)
        return ("delta_commit_watch", self.position_key)

    @classmethod
    def create_shared_stream_producer(cls, kwargs: dict[str, Any]) -> CommitLogProducer:
        return CommitLogProducer(cls(**kwargs))

    async def filter_shared_stream(self, shared_stream: AsyncIterator[Any]) -> AsyncIterator[TriggerEvent]:
        try:
            async for payload in shared_stream:
                if payload is not None:       # None: versions the filters leave out, nothing to announce
                    yield TriggerEvent(payload)
        finally:
            take_back_store(self.position_key, id(self))

    # --------------------------------------------------------------------- run
    async def run(self) -> AsyncIterator[TriggerEvent]:
        """Without shared streams (Airflow before 3.3) or a state store: the position lives in memory."""
        stream = CommitStream(self, [])
        async for payload, through in stream.batches():
            if payload is not None:
                yield TriggerEvent(payload)
            await stream.confirm(through)
