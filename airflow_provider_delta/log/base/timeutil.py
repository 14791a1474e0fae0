"""Turning user-supplied timestamps into epoch milliseconds.

Accepts what DAG authors have at hand: epoch ms (int), ``datetime`` (including
Airflow's pendulum ``DateTime``), ``date``, or an ISO-8601 string. A naive
datetime or string without an offset is taken as UTC, as Delta Spark does
with its default session time zone of UTC.
"""
from __future__ import annotations

import time
from datetime import date, datetime, timezone
from typing import Any

from .errors import InvalidArgumentError


def to_epoch_ms(value: Any) -> int:
    if isinstance(value, bool):
        raise InvalidArgumentError(f"not a timestamp: {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value)
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=timezone.utc)
        return int(round(dt.timestamp() * 1000))
    if isinstance(value, date):
        return to_epoch_ms(datetime(value.year, value.month, value.day))
    if isinstance(value, str):
        s = value.strip()
        if s.lstrip("-").isdigit():
            return int(s)
        try:
            return to_epoch_ms(datetime.fromisoformat(s.replace("Z", "+00:00").replace("z", "+00:00")))
        except ValueError:
            pass
        raise InvalidArgumentError(
            f"cannot parse timestamp {value!r}: use epoch milliseconds, a datetime, "
            "or an ISO-8601 string such as '2026-11-20T10:00:00Z'")
    raise InvalidArgumentError(f"unsupported timestamp type {type(value).__name__}: {value!r}")


def format_ms(ms: int) -> str:
    """Human-readable UTC rendering of epoch ms, for error messages and logs."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def now_or(now_ms: Any) -> int:
    """``now_ms`` (epoch milliseconds, for tests and replays) or the current time."""
    if now_ms is None:
        return time.time_ns() // 1_000_000
    if isinstance(now_ms, bool) or not isinstance(now_ms, int):
        raise InvalidArgumentError(f"now_ms must be epoch milliseconds (int), got {now_ms!r}")
    return now_ms
