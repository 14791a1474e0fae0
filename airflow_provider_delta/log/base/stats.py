"""Per-file statistics (``add.stats``) computed from the Arrow data of one file.

Readers skip files with these numbers, so they must never lie: a ``minValues``
entry must be <= every value in the file and ``maxValues`` >= every value.
What is collected follows Delta Spark (the reference), so tables we write skip
the same way under Spark, delta-rs and this package:

- ``numRecords`` always; ``nullCount`` for every indexed leaf column (arrays and
  maps count null values of the column itself); ``minValues``/``maxValues`` only
  for numbers, dates, timestamps and strings (not booleans, binary or nested
  lists/maps), nested structs mirrored as nested objects.
- Which columns: the first ``delta.dataSkippingNumIndexedCols`` leaf columns
  (default 32, ``-1`` = all), or exactly ``delta.dataSkippingStatsColumns`` when set.
- Strings are cut to ``delta.dataSkippingStringPrefixLength`` (default 32) UTF-16
  code units as Spark counts them: the min keeps a prefix (a prefix is never
  larger), the max gets a tie-breaker appended (U+007F when the next character
  is smaller than it, else U+10FFFF) so it stays an upper bound in UTF-8 byte order.
- Timestamps are written with millisecond precision, truncated down, as Spark
  does (``2024-01-31T12:00:00.123Z``; no zone suffix for timestamp_ntz); dates
  ``yyyy-MM-dd``; decimals as exact JSON numbers.
- Float columns: Spark orders NaN above every number, so a NaN makes the max
  unknowable as a JSON number and it is left out; infinities cannot be written
  in JSON either and are left out. An absent bound only costs skipping, never
  correctness.
"""
from __future__ import annotations

import datetime as _dt
import decimal
import json
import math
from typing import Any, Iterable

import pyarrow as pa

from . import arrow_kernels as ak
from .features import (DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT, DATA_SKIPPING_NUM_INDEXED_COLS_PROPERTY,
                       DATA_SKIPPING_STATS_COLUMNS_PROPERTY, DATA_SKIPPING_STRING_PREFIX_LENGTH_DEFAULT,
                       DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY)


_ASCII_MAX = "\x7f"
_UTF8_MAX = "\U0010ffff"


# --------------------------------------------------------------- string bounds
def _utf16_len(ch: str) -> int:
    return 2 if ord(ch) > 0xFFFF else 1


def truncate_min_string(value: str, prefix_len: int) -> str | None:
    """A prefix of ``value`` of ``prefix_len`` UTF-16 units (never splitting a surrogate pair)."""
    units = 0
    for i, ch in enumerate(value):
        if units >= prefix_len:
            return value[:i] if prefix_len > 0 else None
        units += _utf16_len(ch)
    return value


def truncate_max_string(value: str, prefix_len: int) -> str | None:
    """A short string that is >= ``value`` in UTF-8 byte order, or None if none is found.

    Delta Spark's rule: keep a prefix of ``prefix_len`` units; append U+007F if the
    next character is below it, else U+10FFFF, skipping over characters that are
    themselves U+10FFFF (nothing sorts above them) for at most ``2 * prefix_len`` units.
    """
    total = sum(_utf16_len(c) for c in value)
    if total <= prefix_len:
        return value
    if prefix_len <= 0:
        return None
    prefix = truncate_min_string(value, prefix_len) or ""
    idx = len(prefix)            # index in code points
    units = sum(_utf16_len(c) for c in prefix)
    limit = 2 * prefix_len
    while units <= limit:
        if idx >= len(value):
            return value
        ch = value[idx]
        if ch == _UTF8_MAX:
            idx += 1
            units += 2
        elif ch < _ASCII_MAX:
            return value[:idx] + _ASCII_MAX
        else:
            return value[:idx] + _UTF8_MAX
    return None


# ------------------------------------------------------------ value rendering
class _RawNumber(str):
    """A number already rendered as JSON text (exact decimals)."""


def _render_timestamp(value: Any, unit: str, tz: str | None) -> str:
    """ISO text with milliseconds, truncated down; ``Z`` suffix for zoned (UTC) timestamps."""
    per_second = {"s": 1, "ms": 1_000, "us": 1_000_000, "ns": 1_000_000_000}[unit]
    ms = int(value) * 1000 if per_second == 1 else int(value) // (per_second // 1000)
    base = _dt.datetime(1970, 1, 1) + _dt.timedelta(milliseconds=ms)
    text = base.strftime("%Y-%m-%dT%H:%M:%S.") + f"{base.microsecond // 1000:03d}"
    return text + "Z" if tz is not None else text


def _bounds(arr: pa.ChunkedArray, typ: pa.DataType, prefix_len: int) -> tuple[Any, Any]:
    """(min, max) rendered for JSON; either may be None when it cannot be stated."""
    if (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
            or pa.types.is_date(typ) or pa.types.is_timestamp(typ)):
        work = arr
        if pa.types.is_timestamp(typ) or pa.types.is_date(typ):
            storage = pa.int64() if (pa.types.is_timestamp(typ) or pa.types.is_date64(typ)) else pa.int32()
            work = ak.cast(arr, storage)
        has_nan = False
        if pa.types.is_floating(typ):
            has_nan = ak.any_true(ak.is_nan(arr))
            if has_nan:
                work = ak.if_else(ak.is_nan(arr), pa.nulls(1, typ)[0], arr)
        mm = ak.min_max(work)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None:
            return None, None
        if pa.types.is_floating(typ):
            lo = None if math.isinf(lo) else lo
            hi = None if (has_nan or math.isinf(hi)) else hi
            return lo, hi
        if pa.types.is_decimal(typ):
            return _RawNumber(_decimal_text(lo)), _RawNumber(_decimal_text(hi))
        if pa.types.is_timestamp(typ):
            return (_render_timestamp(lo, typ.unit, typ.tz), _render_timestamp(hi, typ.unit, typ.tz))
        if pa.types.is_date32(typ):
            epoch = _dt.date(1970, 1, 1)
            return ((epoch + _dt.timedelta(days=lo)).isoformat(), (epoch + _dt.timedelta(days=hi)).isoformat())
        if pa.types.is_date64(typ):
            epoch = _dt.date(1970, 1, 1)
            return ((epoch + _dt.timedelta(days=lo // 86_400_000)).isoformat(),
                    (epoch + _dt.timedelta(days=hi // 86_400_000)).isoformat())
        return lo, hi
    if pa.types.is_string(typ) or pa.types.is_large_string(typ) or _is_string_view(typ):
        if _is_string_view(typ):
            arr = ak.cast(arr, pa.large_string())
        mm = ak.min_max(arr)
        lo, hi = mm["min"].as_py(), mm["max"].as_py()
        if lo is None:
            return None, None
        return truncate_min_string(lo, prefix_len), truncate_max_string(hi, prefix_len)
    return None, None


def _is_string_view(typ: pa.DataType) -> bool:
    return hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)


def _decimal_text(value: decimal.Decimal) -> str:
    return format(value, "f")


# ---------------------------------------------------------- column selection
def _parse_stats_columns(value: str) -> list[tuple[str, ...]]:
    """``a, b.c, `x.y`.z`` -> [("a",), ("b","c"), ("x.y","z")] (backticks quote dots)."""
    out: list[tuple[str, ...]] = []
    for item in _split_outside_backticks(value, ","):
        item = item.strip()
        if item:
            out.append(tuple(p.strip().strip("`") for p in _split_outside_backticks(item, ".")))
    return out


def _split_outside_backticks(text: str, sep: str) -> list[str]:
    parts, cur, quoted = [], [], False
    for ch in text:
        if ch == "`":
            quoted = not quoted
        if ch == sep and not quoted:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur))
    return parts


class _Selector:
    """Decides, leaf by leaf in schema order, whether a column gets statistics."""

    def __init__(self, configuration: dict[str, str] | None):
        conf = configuration or {}
        cols = conf.get(DATA_SKIPPING_STATS_COLUMNS_PROPERTY)
        self.paths = _parse_stats_columns(cols) if cols and cols.strip() else None
        try:
            self.limit = int(conf.get(DATA_SKIPPING_NUM_INDEXED_COLS_PROPERTY, DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT))
        except ValueError:
            self.limit = DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT
        self.seen = 0

    def take(self, path: tuple[str, ...]) -> bool:
        if self.paths is not None:
            lowered = tuple(p.lower() for p in path)
            return any(lowered[:len(p)] == tuple(x.lower() for x in p) for p in self.paths)
        self.seen += 1
        return self.limit < 0 or self.seen <= self.limit


# -------------------------------------------------------------------- public
def collect_stats(data: pa.Table, configuration: dict[str, str] | None = None) -> str:
    """The ``stats`` JSON string of a data file holding exactly ``data``.

    ``data`` must be the columns stored in the file (partition columns excluded),
    in table schema order; ``configuration`` is the table's ``metaData.configuration``.
    """
    conf = configuration or {}
    try:
        prefix_len = int(conf.get(DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY,
                                  DATA_SKIPPING_STRING_PREFIX_LENGTH_DEFAULT))
    except ValueError:
        prefix_len = DATA_SKIPPING_STRING_PREFIX_LENGTH_DEFAULT
    selector = _Selector(conf)
    mins: dict[str, Any] = {}
    maxs: dict[str, Any] = {}
    nulls: dict[str, Any] = {}
    _collect(((f.name, data.column(i)) for i, f in enumerate(data.schema)), (), selector,
             prefix_len, mins, maxs, nulls)
    stats: dict[str, Any] = {"numRecords": data.num_rows}
    if mins:
        stats["minValues"] = mins
    if maxs:
        stats["maxValues"] = maxs
    if nulls:
        stats["nullCount"] = nulls
    return _dumps(stats)


def _collect(columns: Iterable[tuple[str, pa.ChunkedArray]], parent: tuple[str, ...], selector: _Selector,
             prefix_len: int, mins: dict, maxs: dict, nulls: dict) -> None:
    for name, arr in columns:
        path = parent + (name,)
        typ = arr.type
        if pa.types.is_struct(typ):
            children = arr.flatten()   # children with the parent's nulls applied
            sub_min: dict[str, Any] = {}
            sub_max: dict[str, Any] = {}
            sub_null: dict[str, Any] = {}
            _collect(((typ.field(i).name, children[i]) for i in range(typ.num_fields)), path, selector,
                     prefix_len, sub_min, sub_max, sub_null)
            if sub_min:
                mins[name] = sub_min
            if sub_max:
                maxs[name] = sub_max
            if sub_null:
                nulls[name] = sub_null
            continue
        if not selector.take(path):
            continue
        nulls[name] = arr.null_count
        if arr.null_count == len(arr):
            continue
        try:
            lo, hi = _bounds(arr, typ, prefix_len)
        except (OverflowError, ValueError, pa.ArrowException):
            lo = hi = None      # e.g. a date beyond year 9999: no bound is better than a wrong one
        if lo is not None:
            mins[name] = lo
        if hi is not None:
            maxs[name] = hi


def _dumps(value: Any) -> str:
    """Compact JSON that writes :class:`_RawNumber` values unquoted."""
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, _RawNumber):
        return str.__str__(value)
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
