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
from typing import Any

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


def _is_numeric_like(typ: pa.DataType) -> bool:
    return (pa.types.is_integer(typ) or pa.types.is_floating(typ) or pa.types.is_decimal(typ)
            or pa.types.is_date(typ) or pa.types.is_timestamp(typ))


def _is_text(typ: pa.DataType) -> bool:
    return pa.types.is_string(typ) or pa.types.is_large_string(typ) or _is_string_view(typ)


def _raw_bounds(arr: pa.ChunkedArray, typ: pa.DataType) -> tuple[Any, Any, bool]:
    """(min, max, has_nan) of one column as plain Python values (dates and timestamps as their
    integer storage, floats without NaN); (None, None, False) when there is no bound to state.

    Raw values merge across batches by plain comparison (Python orders ``str`` by code point,
    which is UTF-8 byte order, as Arrow's ``min_max`` does), so a file written in batches gets
    the same statistics as one computed at once; :func:`_render` turns them into JSON values."""
    if _is_numeric_like(typ):
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
        return mm["min"].as_py(), mm["max"].as_py(), bool(has_nan)
    if _is_text(typ):
        if _is_string_view(typ):
            arr = ak.cast(arr, pa.large_string())
        mm = ak.min_max(arr)
        return mm["min"].as_py(), mm["max"].as_py(), False
    return None, None, False


def _render(lo: Any, hi: Any, has_nan: bool, typ: pa.DataType, prefix_len: int) -> tuple[Any, Any]:
    """(min, max) rendered for JSON; either may be None when it cannot be stated."""
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
    if _is_text(typ):
        return truncate_min_string(lo, prefix_len), truncate_max_string(hi, prefix_len)
    return lo, hi


def _is_string_view(typ: pa.DataType) -> bool:
    return hasattr(pa.types, "is_string_view") and pa.types.is_string_view(typ)


def _decimal_text(value: decimal.Decimal) -> str:
    return format(value, "f")


# ---------------------------------------------------------- column selection
def parse_stats_columns(value: str) -> list[tuple[str, ...]]:
    """``a, b.c, `x.y`.z`` -> [("a",), ("b","c"), ("x.y","z")] (backticks quote dots)."""
    return [column_path(item) for item in _split_outside_backticks(value, ",") if item.strip()]


def format_stats_columns(paths: list[tuple[str, ...]]) -> str:
    """The inverse of :func:`parse_stats_columns`: every name backtick-quoted, so dots inside a
    name survive."""
    return ",".join(".".join(f"`{p}`" for p in path) for path in paths)


def column_path(name: str) -> tuple[str, ...]:
    """A column name as Delta Spark spells nested columns: ``"b.c"`` -> ``("b", "c")``,
    ``"`x.y`.z"`` -> ``("x.y", "z")`` (backticks quote dots)."""
    return tuple(p.strip().strip("`") for p in _split_outside_backticks(name.strip(), "."))


def indexed_columns(schema: Any, configuration: dict[str, str] | None) -> list[tuple[str, ...]]:
    """The leaf column paths of ``schema`` (a data file's columns, partition columns excluded, in table
    order) that get statistics under the table's ``configuration``: what data skipping can use."""
    out: dict[tuple[str, ...], _Leaf] = {}
    _select(schema, (), _Selector(configuration), out)
    return list(out)


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
        self.paths = parse_stats_columns(cols) if cols and cols.strip() else None
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
class _Leaf:
    """Running statistics of one indexed leaf column."""

    __slots__ = ("typ", "nulls", "lo", "hi", "has_nan", "failed")

    def __init__(self, typ: pa.DataType):
        self.typ = typ
        self.nulls = 0
        self.lo: Any = None
        self.hi: Any = None
        self.has_nan = False
        self.failed = False      # a batch whose bounds could not be computed: no bound at all

    def add(self, arr: Any) -> None:
        self.nulls += arr.null_count
        if arr.null_count == len(arr) or self.failed:
            return
        try:
            lo, hi, nan = _raw_bounds(arr, self.typ)
        except (OverflowError, ValueError, pa.ArrowException):
            self.failed, self.lo, self.hi = True, None, None
            return
        self.has_nan = self.has_nan or nan
        if lo is not None:
            self.lo = lo if self.lo is None or lo < self.lo else self.lo
        if hi is not None:
            self.hi = hi if self.hi is None or hi > self.hi else self.hi


class StatsCollector:
    """The ``stats`` of one data file whose rows arrive in batches (a file written as a stream).

    ``add`` each batch (the columns stored in the file, partition columns excluded, in table
    schema order), then ``result``: the same JSON :func:`collect_stats` gives for all the rows
    at once, with memory per indexed column instead of per row.
    """

    def __init__(self, configuration: dict[str, str] | None = None):
        self._conf = configuration or {}
        try:
            self._prefix_len = int(self._conf.get(DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY,
                                                  DATA_SKIPPING_STRING_PREFIX_LENGTH_DEFAULT))
        except ValueError:
            self._prefix_len = DATA_SKIPPING_STRING_PREFIX_LENGTH_DEFAULT
        self._rows = 0
        #: leaf path -> running statistics, in schema order (None until the first batch)
        self._leaves: dict[tuple[str, ...], _Leaf] | None = None

    @property
    def num_records(self) -> int:
        return self._rows

    def add(self, data: "pa.Table | pa.RecordBatch") -> "StatsCollector":
        if self._leaves is None:
            self._leaves = {}
            _select(data.schema, (), _Selector(self._conf), self._leaves)
        self._rows += data.num_rows
        columns = {(f.name,): data.column(i) for i, f in enumerate(data.schema)}
        for path, leaf in self._leaves.items():
            leaf.add(_leaf_column(columns, path))
        return self

    def result(self) -> str:
        stats: dict[str, Any] = {"numRecords": self._rows}
        mins: dict[str, Any] = {}
        maxs: dict[str, Any] = {}
        nulls: dict[str, Any] = {}
        for path, leaf in (self._leaves or {}).items():
            *parents, name = path
            _nested(nulls, parents)[name] = leaf.nulls
            lo, hi = _render(leaf.lo, leaf.hi, leaf.has_nan, leaf.typ, self._prefix_len)
            if lo is not None:
                _nested(mins, parents)[name] = lo
            if hi is not None:
                _nested(maxs, parents)[name] = hi
        if mins:
            stats["minValues"] = mins
        if maxs:
            stats["maxValues"] = maxs
        if nulls:
            stats["nullCount"] = nulls
        return _dumps(stats)


def collect_stats(data: pa.Table, configuration: dict[str, str] | None = None) -> str:
    """The ``stats`` JSON string of a data file holding exactly ``data``.

    ``data`` must be the columns stored in the file (partition columns excluded),
    in table schema order; ``configuration`` is the table's ``metaData.configuration``.
    """
    return StatsCollector(configuration).add(data).result()


def _select(schema: Any, parent: tuple[str, ...], selector: _Selector,
            out: dict[tuple[str, ...], _Leaf]) -> None:
    """The indexed leaves of ``schema`` (struct fields walked), in schema order."""
    for f in schema:
        path = parent + (f.name,)
        if pa.types.is_struct(f.type):
            _select([f.type.field(i) for i in range(f.type.num_fields)], path, selector, out)
        elif selector.take(path):
            out[path] = _Leaf(f.type)


def _leaf_column(columns: dict[tuple[str, ...], Any], path: tuple[str, ...]) -> Any:
    """The column at ``path``; a struct's children with the struct's nulls applied (``flatten``)."""
    if path in columns:
        return columns[path]
    parent = _leaf_column(columns, path[:-1])
    typ = parent.type
    for i, child in enumerate(parent.flatten()):
        columns[path[:-1] + (typ.field(i).name,)] = child
    return columns[path]


def _nested(root: dict[str, Any], parents: list[str]) -> dict[str, Any]:
    node = root
    for p in parents:
        node = node.setdefault(p, {})
    return node


def _dumps(value: Any) -> str:
    """Compact JSON that writes :class:`_RawNumber` values unquoted."""
    if isinstance(value, dict):
        return "{" + ",".join(json.dumps(k) + ":" + _dumps(v) for k, v in value.items()) + "}"
    if isinstance(value, _RawNumber):
        return str.__str__(value)
    return json.dumps(value, ensure_ascii=False, allow_nan=False)
