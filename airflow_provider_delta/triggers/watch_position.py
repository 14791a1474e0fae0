"""Where a commit watcher stands, kept in Airflow's asset state store across triggerer restarts.

Airflow re-creates an event trigger from the kwargs it was registered with, so
anything the trigger learns while running is lost on a restart unless it is stored.
The store is the asset state store the triggerer hands every ``BaseEventTrigger``
(Airflow 3.3+; the Iceberg provider's snapshot trigger keeps its watermark there).

A position is the newest table version the watcher has dealt with (``version``: the
events covering every commit up to it are stored in Airflow's database), plus
``pending``: the newest version an event already left for, not yet known to be
stored. ``pending`` is written *before* the event leaves, and ``version`` moves up
only once Airflow confirmed the event persisted (see :mod:`.commit_stream`). A
watcher that starts and finds ``pending`` set announces those commits again,
flagged ``redelivered``: they may or may not have reached Airflow before it stopped.
Where the provider's listener runs in the triggerer (:mod:`.stored_positions`), the
version each stored event accounts for is also written in the very transaction that
stores the event, under :func:`stored_key`; loading merges it, so a pending
announcement that Airflow did store is not repeated.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

#: store key prefix; the rest is a digest of what the watcher watches (table and filters)
KEY_PREFIX = "delta_commit_watch_"
#: suffix of the key the listener writes in the transaction that stores each event (:mod:`.stored_positions`)
STORED_SUFFIX = ".stored"


def stored_key(key: str) -> str:
    """The key that says up to which version Airflow stored this watcher's events."""
    return key + STORED_SUFFIX

# AssetStateStoreAccessors refuses to guess which asset is meant when several watch one trigger
_MULTI_ASSET_ERROR = "concrete inlets and outlets"


def position_key(**identity: Any) -> str:
    """A short, stable store key for one watcher: its table and filters, not its timing."""
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
    return KEY_PREFIX + digest[:16]


@dataclass
class WatchPosition:
    """``version``: every commit up to it was announced and stored; ``pending``: announced up to it."""

    version: int
    pending: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "pending": self.pending}

    @classmethod
    def from_json(cls, value: Any) -> "WatchPosition | None":
        if not isinstance(value, dict) or not isinstance(value.get("version"), int):
            return None
        pending = value.get("pending")
        return cls(int(value["version"]), int(pending) if isinstance(pending, int) else None)

    @property
    def examined(self) -> int:
        """The newest version an event has left for (stored or not)."""
        return self.pending if self.pending is not None else self.version

    def confirmed_through(self, version: int) -> "WatchPosition":
        """The position once the events up to ``version`` are known to be stored."""
        version = max(self.version, version)
        pending = self.pending if self.pending is not None and self.pending > version else None
        return WatchPosition(version, pending)


class PositionStore:
    """The asset state store (or nothing) behind one watcher's :class:`WatchPosition`.

    ``accessors`` is what the triggerer sets as ``asset_state_store``; None (an Airflow
    without the store) keeps the position in memory only, and so does a trigger watched
    by several assets, which the store cannot tell apart (:meth:`load` then returns None
    and :attr:`durable` turns False; the caller warns).
    """

    def __init__(self, accessors: Any, key: str) -> None:
        self.accessors = accessors
        self.key = key

    @property
    def durable(self) -> bool:
        return self.accessors is not None

    async def load(self) -> WatchPosition | None:
        """The stored position, moved up to what the listener recorded as stored with the events
        themselves (a pending announcement Airflow did store is then no longer pending)."""
        if self.accessors is None:
            return None
        try:
            position = WatchPosition.from_json(await self.accessors.aget(self.key))
            stored = await self.accessors.aget(stored_key(self.key))
        except ValueError as e:
            if _MULTI_ASSET_ERROR not in str(e):
                raise
            self.accessors = None
            return None
        through = stored.get("through") if isinstance(stored, dict) else None
        if position is None or not isinstance(through, int):
            return position
        return position.confirmed_through(through)

    async def save(self, position: WatchPosition) -> None:
        if self.accessors is not None:
            await self.accessors.aset(self.key, position.to_json())
