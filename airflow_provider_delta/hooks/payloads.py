"""Bounded XCom and asset-event payloads: counts and the newest few items, never a table's whole history.

XComs and asset events live in Airflow's database and are loaded by every consumer and
the UI; a sensor started with ``after_version=-1`` on a long-lived table, or a vacuum
of a big table, would otherwise hand over one entry per commit or per file. Payloads
therefore carry counts, the first and last versions and at most :data:`MAX_LISTED`
items with ``truncated`` saying whether some were left out; the task log has them all.

A count alone does not bound bytes: one commit's ``operationParameters`` may hold a
generated MERGE predicate of hundreds of kilobytes. So each listed item is
:func:`clipped` (text longer than :data:`MAX_TEXT` is cut, with a note of how much was
left out; dicts and lists longer than :data:`MAX_ENTRIES` are cut the same way), and
the listed items together stay within :data:`MAX_LISTED_BYTES` of JSON: older items are
left out first; the newest one is always kept, so a payload is at most that budget or
one clipped item, whichever is larger. A clipped item is bounded too: texts by bytes of JSON
(non-ASCII escaped, as Airflow stores it), containers by depth (:data:`MAX_DEPTH`), and the item
as a whole by :data:`MAX_ITEM_BYTES` (then only its plain values stay).
"""
from __future__ import annotations

import json
from typing import Any, Sequence

#: the most items (commits, file paths) a payload lists
MAX_LISTED = 20
#: the longest text a listed item keeps whole (a predicate, a job field); the task log has every value
MAX_TEXT = 1024
#: the most entries a dict or list inside a listed item keeps
MAX_ENTRIES = 64
#: the JSON size the listed items of one payload may take together (the newest item always stays)
MAX_LISTED_BYTES = 64 * 1024
#: how deep dicts and lists nest inside a listed item
MAX_DEPTH = 4
#: the JSON size one listed item may take (beyond it only its plain values stay)
MAX_ITEM_BYTES = 16 * 1024


def _clipped_text(value: str) -> str:
    """``value`` cut to at most :data:`MAX_TEXT` bytes of JSON (as Airflow stores it: non-ASCII escaped)."""
    if len(value) <= MAX_TEXT // 12 or json_size(value) <= MAX_TEXT:    # 12: the longest escape of a character
        return value
    lo, hi = 0, min(len(value), MAX_TEXT)          # the longest prefix that fits, by bisection
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if json_size(value[:mid]) <= MAX_TEXT:
            lo = mid
        else:
            hi = mid - 1
    return f"{value[:lo]}... [{len(value) - lo} more characters, in the task log]"


def _clipped(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return _clipped_text(value)
    if isinstance(value, (bytes, bytearray)) and len(value) > MAX_TEXT // 4:
        return f"[{len(value)} bytes, in the task log]"
    if isinstance(value, (dict, list, tuple)) and depth >= MAX_DEPTH:
        return f"[{type(value).__name__} of {len(value)} entries nested deeper than {MAX_DEPTH}, in the task log]"
    if isinstance(value, dict):
        items = list(value.items())
        out: dict[str, Any] = {}
        for k, v in items[:MAX_ENTRIES]:
            key = _clipped_text(str(k))
            while key in out:               # two long keys cut to one prefix: keep both, told apart
                key += "'"
            out[key] = _clipped(v, depth + 1)
        if len(items) > MAX_ENTRIES:
            out["..."] = f"{len(items) - MAX_ENTRIES} more entries, in the task log"
        return out
    if isinstance(value, (list, tuple)):
        out_list = [_clipped(v, depth + 1) for v in value[:MAX_ENTRIES]]
        if len(value) > MAX_ENTRIES:
            out_list.append(f"... {len(value) - MAX_ENTRIES} more items, in the task log")
        return out_list
    return value


def clipped(value: Any) -> Any:
    """``value`` with every long text, dict and list cut to its bound (the rest noted, not kept), no
    container deeper than :data:`MAX_DEPTH`, and as a whole within :data:`MAX_ITEM_BYTES` of JSON: a
    dict still larger keeps only the plain (not nested) values that fit, with a note; anything else
    still larger becomes a note. Long bytes become a note too."""
    out = _clipped(value, 0)
    size = json_size(out)
    if size <= MAX_ITEM_BYTES:
        return out
    if not isinstance(out, dict):
        return f"[{type(out).__name__} of {size} bytes of JSON, in the task log]"
    flat: dict[str, Any] = {}
    room = MAX_ITEM_BYTES - 256                     # the note below takes the rest
    for k, v in out.items():
        if isinstance(v, (dict, list)):
            continue
        entry = json_size({k: v})
        if entry > room:
            continue
        flat[k] = v
        room -= entry
    flat["..."] = (f"{len(out) - len(flat)} entries left out ({size} bytes of JSON), in the task log")
    return flat


def json_size(value: Any) -> int:
    """Bytes of ``value`` as JSON (what Airflow stores for an XCom or an event's extra)."""
    return len(json.dumps(value, default=str).encode())


def _leading_within(items: Sequence[Any], max_bytes: int) -> list[Any]:
    """The longest run of ``items`` from the first on whose JSON fits ``max_bytes`` (at least the first)."""
    kept: list[Any] = []
    total = 0
    for item in items:
        total += json_size(item)
        if kept and total > max_bytes:
            break
        kept.append(item)
    return kept


def newest(items: Sequence[Any], limit: int = MAX_LISTED, max_bytes: int = MAX_LISTED_BYTES) -> list[Any]:
    """The last ``limit`` items of ``items`` (oldest first, as given), fewer when together they would
    take more than ``max_bytes`` of JSON (the newest item is always kept)."""
    if limit <= 0:
        return []
    return _leading_within(list(items[-limit:])[::-1], max_bytes)[::-1]


def capped(items: Sequence[Any], limit: int = MAX_LISTED) -> dict[str, Any]:
    """``{"count", "items" (the first ``limit``, clipped, within the byte budget), "truncated"}`` of a
    list such as deleted paths."""
    kept = _leading_within([clipped(i) for i in items[:limit]], MAX_LISTED_BYTES)
    return {"count": len(items), "items": kept, "truncated": len(items) > len(kept)}
