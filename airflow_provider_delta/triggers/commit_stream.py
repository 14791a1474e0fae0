"""The commit watcher's poll loop, and its ack-mode producer: positions move only once Airflow stored the event.

A watcher announces new commits as asset events and keeps its position in the asset
state store. The event and the position live in two places, so the order of the two
writes decides what a triggerer restart does:

* move the position before Airflow stored the event, and a restart in between loses
  those commits;
* move it after, and a restart in between announces them again.

Airflow 3.3's shared streams in *ack mode* give the second order with the shortest
window: the triggerer hands each raw event the :class:`CommitLogProducer` yields to
the trigger's ``filter_shared_stream``, stores the asset event it derives, confirms
the store on its next sync with the runner (a second or two), and only then calls
:meth:`CommitLogProducer.advance`, where the position moves. So a commit is never
skipped, and it is announced twice only if the triggerer stops inside that window;
the repeat then carries ``redelivered: true`` (the watcher wrote ``pending`` before
the event left, see :mod:`.watch_position`). The provider's listener closes that
window where it runs: it records each event's version in the transaction that stores
the event (:mod:`.stored_positions`), and loading the position merges that record. Consumers that read incrementally (the
Spark operators' ``input_changes=True``: changes since their own last commit) find
nothing new in such a repeat.

The producer is built by the triggerer from the trigger's kwargs, not from the trigger
instance that holds the asset state store; each subscribing trigger therefore lends
its store to the group under the watcher's position key (:func:`lend_store`) for as
long as it is subscribed.
"""
from __future__ import annotations

import asyncio
import logging
from typing import Any, AsyncIterator, Protocol, Sequence

from ..log import DeltaError
from .tables import open_table
from .watch_position import PositionStore, WatchPosition

try:  # Airflow 3.3+; before it, the trigger's own run() loop is used (no shared streams, no state store)
    from airflow.triggers.shared_stream import SharedStreamProducer
except ImportError:  # pragma: no cover - exercised only on Airflow < 3.3
    SharedStreamProducer = object  # type: ignore[assignment,misc]

log = logging.getLogger(__name__)

#: position key -> {lender id: asset state store accessors}, for the subscribers of each group
_LENT_STORES: dict[str, dict[int, Any]] = {}


def lend_store(key: str, lender: int, accessors: Any) -> None:
    """Let the group polling ``key`` keep its position in ``accessors`` while ``lender`` subscribes."""
    _LENT_STORES.setdefault(key, {})[lender] = accessors


def take_back_store(key: str, lender: int) -> None:
    lent = _LENT_STORES.get(key, {})
    lent.pop(lender, None)
    if not lent:
        _LENT_STORES.pop(key, None)


class Watcher(Protocol):
    """What the loop needs from the trigger: where to look, what matches, what an event says."""

    table_uri: str
    delta_conn_id: str | None
    poke_interval: float
    position_key: str

    async def start_version(self, table: Any) -> int: ...

    def matching(self, table: Any, after: int) -> tuple[list[dict], int]: ...

    def payloads(self, commits: list[dict], after: int, through: int,
                 announced_through: int) -> list[tuple[dict, int]]: ...


class CommitStream:
    """Poll a table's log from a stored position; yield ``(payload or None, through_version)``.

    ``None`` payloads stand for polls that examined new versions the filters leave out:
    they carry no event but still move the position once confirmed. :meth:`confirm`
    moves the stored position; the caller calls it only when the events up to that
    version are safe (stored by Airflow, or, without a durable store, handed over).
    """

    def __init__(self, watcher: Watcher, stores: list[PositionStore]) -> None:
        self.watcher = watcher
        self.stores = stores
        self.position = WatchPosition(-1)

    @property
    def durable(self) -> bool:
        return any(s.durable for s in self.stores)

    async def _load(self) -> WatchPosition | None:
        """The earliest stored position among the group's stores (never skip for any of them)."""
        found = [p for p in [await s.load() for s in self.stores] if p is not None]
        if not found:
            return None
        pendings = [p.pending for p in found if p.pending is not None]
        return WatchPosition(min(p.version for p in found), max(pendings) if pendings else None)

    async def _save(self) -> None:
        for store in self.stores:
            await store.save(self.position)

    async def confirm(self, through: int) -> None:
        self.position = self.position.confirmed_through(through)
        await self._save()

    async def batches(self) -> AsyncIterator[tuple[dict | None, int]]:
        w = self.watcher
        table = await open_table(w.table_uri, w.delta_conn_id)
        stored = await self._load()
        if not self.durable:
            log.warning("No asset state store for %s (Airflow before 3.3, or several assets watch the same "
                        "trigger): its position lives in memory only, so a triggerer restart may repeat or "
                        "miss commits", w.table_uri)
        examined = await self._resume(table, stored)
        # versions announced before the triggerer stopped may not have reached Airflow: the first
        # poll announces them again (with whatever came since), flagged redelivered
        announced = stored.pending if stored is not None and stored.pending is not None else -1
        if announced >= 0:
            log.info("Announcing versions %s..%s of %s again: the triggerer stopped before Airflow confirmed "
                     "their event", examined + 1, announced, w.table_uri)
        while True:
            async for item in self._poll(table, examined, announced):
                yield item
                examined = max(examined, item[1])
            await asyncio.sleep(w.poke_interval)

    async def _resume(self, table: Any, stored: WatchPosition | None) -> int:
        if stored is None:
            self.position = WatchPosition(await self.watcher.start_version(table))
            await self._save()
            log.info("Watching %s for commits after version %s", self.watcher.table_uri, self.position.version)
        else:
            self.position = stored
        return self.position.version

    async def _poll(self, table: Any, after: int, announced: int) -> AsyncIterator[tuple[dict | None, int]]:
        try:
            commits, newest = await asyncio.to_thread(self.watcher.matching, table, after)
        except DeltaError as e:   # a watcher outlives errors: report and poll again
            log.error("Polling %s failed: %s: %s", self.watcher.table_uri, type(e).__name__, e)
            return
        if newest <= after:
            return
        items: list[tuple[dict | None, int]] = list(self.watcher.payloads(commits, after, newest, announced))
        if not items:
            items = [(None, newest)]
        elif newest > self.position.examined:
            self.position = WatchPosition(self.position.version, pending=newest)
            await self._save()                     # written before the event leaves: see watch_position
        for item in items:
            yield item


class CommitLogProducer(SharedStreamProducer):
    """The broker side of a watcher's shared stream: the Delta log is the broker, the position its offset."""

    def __init__(self, watcher: Watcher) -> None:
        lent = list(_LENT_STORES.get(watcher.position_key, {}).values())
        self.stream = CommitStream(watcher, [PositionStore(a, watcher.position_key) for a in lent])

    async def open_stream(self) -> AsyncIterator[tuple[Any, Any]]:
        async for payload, through in self.stream.batches():
            yield payload, through

    async def advance(self, batch: Sequence[Any]) -> None:
        """Events up to the batch's last version are stored in Airflow: move the position there."""
        through = max(item.broker_payload for item in batch)
        await self.stream.confirm(through)
        log.debug("Position of %s moved to version %s", self.stream.watcher.table_uri, through)
