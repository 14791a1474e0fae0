"""Delta table-property durations (``"interval 30 days"``) as milliseconds.

Retention properties such as ``delta.logRetentionDuration`` and
``delta.deletedFileRetentionDuration`` hold Spark calendar-interval strings. Delta
Spark parses them with Spark's interval parser (an optional leading ``interval``,
then one or more ``<number> <unit>`` pairs) and rejects months and years, because a
month has no fixed length, and negative totals. This module implements that
subset so every maintenance operation agrees on what a property means:

* units (singular or plural, any case): ``week``, ``day``, ``hour``, ``minute``,
  ``second``, ``millisecond``, ``microsecond``;
* integers for every unit, decimal fractions only for seconds (as Spark allows);
* the result is whole milliseconds, microseconds truncated, as Spark's
  ``DeltaConfigs.getMilliSeconds`` does.

A malformed value raises :class:`InvalidTableStateError` when it came from a table
property (the table is misconfigured) and :class:`InvalidArgumentError` otherwise.
"""
from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation
from typing import Mapping

from .errors import InvalidArgumentError, InvalidTableStateError
from .features import (DELETED_FILE_RETENTION_DEFAULT, DELETED_FILE_RETENTION_PROPERTY, LOG_RETENTION_DEFAULT,
                       LOG_RETENTION_PROPERTY, SET_TRANSACTION_RETENTION_PROPERTY)

_MICROS = {
    "week": 7 * 86_400_000_000,
    "day": 86_400_000_000,
    "hour": 3_600_000_000,
    "minute": 60_000_000,
    "second": 1_000_000,
    "millisecond": 1_000,
    "microsecond": 1,
}
_CALENDAR_UNITS = ("year", "month")
_PAIR = re.compile(r"([+-]?\d+(?:\.\d+)?)\s+([a-z]+)")


def _unit(word: str) -> str | None:
    if word in _MICROS or word in _CALENDAR_UNITS:
        return word
    if word.endswith("s") and (word[:-1] in _MICROS or word[:-1] in _CALENDAR_UNITS):
        return word[:-1]
    return None


def parse_interval_ms(value: str, *, what: str = "interval",
                      error: type[Exception] = InvalidArgumentError) -> int:
    """Milliseconds in a Spark interval string such as ``"interval 1 week"`` or ``"36 hours"``."""
    if not isinstance(value, str) or not value.strip():
        raise error(f"{what} must be a non-empty interval string such as 'interval 7 days', got {value!r}")
    text = value.strip().lower()
    if text.startswith("interval"):
        text = text[len("interval"):].strip()
    if not text:
        raise error(f"{what} {value!r} has no amount: write e.g. 'interval 7 days'")
    micros = 0
    pos = 0
    while pos < len(text):
        m = _PAIR.match(text, pos)
        if m is None:
            raise error(f"{what} {value!r} is not a valid interval: expected '<number> <unit>' pairs "
                        "with units week, day, hour, minute, second, millisecond or microsecond")
        number, word = m.group(1), m.group(2)
        unit = _unit(word)
        if unit is None:
            raise error(f"{what} {value!r} uses unknown unit {word!r}")
        if unit in _CALENDAR_UNITS:
            raise error(f"{what} {value!r} uses {unit}s, which have no fixed length; "
                        "Delta does not accept months or years here (write e.g. '365 days')")
        if "." in number and unit != "second":
            raise error(f"{what} {value!r}: only seconds may have a fractional amount")
        try:
            micros += int(Decimal(number) * _MICROS[unit])
        except InvalidOperation:  # pragma: no cover - the regex only admits numbers
            raise error(f"{what} {value!r} has an invalid number {number!r}") from None
        pos = m.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if micros < 0:
        raise error(f"{what} {value!r} is negative; a retention must be zero or more")
    return micros // 1000


def table_interval_ms(configuration: Mapping[str, str], key: str, default: str) -> int:
    """A duration table property in ms, ``default`` when unset; a bad value is InvalidTableStateError."""
    raw = configuration.get(key)
    if raw is None:
        return parse_interval_ms(default, what=key)
    return parse_interval_ms(raw, what=f"table property {key}", error=InvalidTableStateError)


def log_retention_ms(configuration: Mapping[str, str]) -> int:
    """``delta.logRetentionDuration`` (default 30 days) in ms."""
    return table_interval_ms(configuration, LOG_RETENTION_PROPERTY, LOG_RETENTION_DEFAULT)


def deleted_file_retention_ms(configuration: Mapping[str, str]) -> int:
    """``delta.deletedFileRetentionDuration`` (default 1 week) in ms."""
    return table_interval_ms(configuration, DELETED_FILE_RETENTION_PROPERTY, DELETED_FILE_RETENTION_DEFAULT)


def set_transaction_retention_ms(configuration: Mapping[str, str]) -> int | None:
    """``delta.setTransactionRetentionDuration`` in ms; None (keep forever) when unset, as in Spark."""
    if configuration.get(SET_TRANSACTION_RETENTION_PROPERTY) is None:
        return None
    return table_interval_ms(configuration, SET_TRANSACTION_RETENTION_PROPERTY, "0 days")
