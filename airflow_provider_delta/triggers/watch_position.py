"""Where a commit watcher stands, kept in Airflow's asset state store across triggerer restarts.

Airflow re-creates an event trigger from the kwargs it was registered with, so
anything the trigger learns while running is lost on a restart unless it is stored.
The store is the asset state store the triggerer hands every ``BaseEventTrigger``
(Airflow 3.3+; the Iceberg provider's snapshot trigger keeps its watermark there).

A position is the newest table version the watcher has dealt with, plus, while an
event is on its way, ``pending``: the versions that event covers. The event and the
store are two writes in two places, so neither order is safe on its own:

* store the new version first, and a restart before the triggerer persisted the
  event loses those commits (the event was in the triggerer's outbound queue);
* emit first and store later, and a restart in between emits them twice.

So the watcher stores ``pending`` *before* it emits, and confirms (moves ``version``
up to the pending end, clears ``pending``) only once the triggerer has certainly
persisted the event: :data:`CONFIRM_AFTER_SECONDS` after emitting, well past the
runner's one-second sync to the supervisor, which writes the event to the metadata
database in the same loop iteration. A restart that finds ``pending`` set emits
those versions again, flagged ``redelivered``: no commit is ever skipped, and a
repeat can only happen for a restart within those seconds, and says so.
"""
from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass
from typing import Any

#: seconds after emitting an event before the watcher counts it as persisted
CONFIRM_AFTER_SECONDS = 5.0

#: store key prefix; the rest is a digest of what the watcher watches (table and filters)
KEY_PREFIX = "delta_commit_watch_"


def position_key(**identity: Any) -> str:
    """A short, stable store key for one watcher: its table and filters, not its timing."""
    digest = hashlib.sha256(json.dumps(identity, sort_keys=True, default=str).encode()).hexdigest()
    return KEY_PREFIX + digest[:16]


@dataclass
class WatchPosition:
    """``version``: every commit up to it was handled; ``pending``: emitted up to it, not yet confirmed."""

    version: int
    pending: int | None = None
    emitted_at: float | None = None   # time.monotonic() of the emission (in memory only)

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
        """The newest version already covered by an emitted (or confirmed) event."""
        return self.pending if self.pending is not None else self.version

    def confirmable(self, now: float | None = None) -> bool:
        if self.pending is None:
            return False
        if self.emitted_at is None:
            return False
        return (time.monotonic() if now is None else now) - self.emitted_at >= CONFIRM_AFTER_SECONDS


class PositionStore:
    """The asset state store (or nothing) behind one watcher's :class:`WatchPosition`.

    ``accessors`` is what the triggerer sets as ``asset_state_store``; None (an Airflow
    without the store, or a trigger watched by several assets, which the store cannot
    tell apart) keeps the position in memory only, and the caller warns.
    """

    def __init__(self, accessors: Any, key: str) -> None:
        self.accessors = accessors
        self.key = key

    @property
    def durable(self) -> bool:
        return self.accessors is not None

    async def load(self) -> WatchPosition | None:
        if self.accessors is None:
            return None
        return WatchPosition.from_json(await self.accessors.aget(self.key))

    async def save(self, position: WatchPosition) -> None:
        if self.accessors is not None:
            await self.accessors.aset(self.key, position.to_json())
