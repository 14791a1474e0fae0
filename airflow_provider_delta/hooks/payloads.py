"""Bounded XCom and asset-event payloads: counts and the newest few items, never a table's whole history.

XComs and asset events live in Airflow's database and are loaded by every consumer and
the UI; a sensor started with ``after_version=-1`` on a long-lived table, or a vacuum
of a big table, would otherwise hand over one entry per commit or per file. Payloads
therefore carry counts, the first and last versions and at most :data:`MAX_LISTED`
items with ``truncated`` saying whether some were left out; the task log has them all.
"""
from __future__ import annotations

from typing import Any, Sequence

#: the most items (commits, file paths) a payload lists
MAX_LISTED = 20


def newest(items: Sequence[Any], limit: int = MAX_LISTED) -> list[Any]:
    """The last ``limit`` items of ``items`` (oldest first, as given)."""
    return list(items[-limit:]) if limit > 0 else []


def capped(items: Sequence[Any], limit: int = MAX_LISTED) -> dict[str, Any]:
    """``{"count", "items" (the first ``limit``), "truncated"}`` of a list such as deleted paths."""
    return {"count": len(items), "items": list(items[:limit]), "truncated": len(items) > limit}
