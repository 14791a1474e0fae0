"""Z-order: each row's position on a Z-order curve over several columns, and files cut along it.

What Delta Spark's ``OPTIMIZE ... ZORDER BY`` does, conceptually (``ZOrderClustering``):
every Z-order column is mapped to a *range id* by rank (its values split into ranges of
about equal row counts, from a sample; nulls get range 0), the range ids' bits are
interleaved most significant first, column after column (the Z-value), and the rows are
range-partitioned by Z-value into the output files, sorted within each. Rows close in every
column land close on the curve, so each file covers a small box of the column space, and a
query on any of the columns skips most files by their min/max statistics.

Ranks rather than raw values make skewed columns and columns of different scales (a price
and a date) weigh the same on the curve. Keys are ``uint64``: with ``k`` columns each gets
``min(16, 64 // k)`` bits (65,536 ranges for one to four columns).

Everything here is NumPy over whole batches; no Python loop runs per row.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.stats import column_path

#: The most bits one column's range id gets (65,536 ranges).
MAX_BITS_PER_COLUMN = 16
#: Rows sampled to place range boundaries and file cuts (Spark's range partitioner samples too).
SAMPLE_ROWS = 200_000


def _is_number(t: pa.DataType) -> bool:
    """Whether :func:`~..base.arrow_build.to_numpy` takes arrays of type ``t``."""
    return pa.types.is_integer(t) or t == pa.float32() or t == pa.float64()


def bits_per_column(num_columns: int) -> int:
    return max(1, min(MAX_BITS_PER_COLUMN, 64 // max(1, num_columns)))


def column_at(table: pa.Table, name: str) -> pa.ChunkedArray:
    """The column ``name`` of ``table``: top level, or a nested field (``"s.a"``) with its parents' nulls."""
    path = column_path(name)
    col = table.column(path[0])
    for field in path[1:]:
        col = ak.struct_field(col, field)
    return col


def _comparable(arr: pa.ChunkedArray | pa.Array) -> tuple[np.ndarray, np.ndarray | None]:
    """(values as a sortable NumPy array, null mask or None). NaN ranks above every number, as in Spark."""
    typ = arr.type
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks() if arr.num_chunks != 1 else arr.chunk(0)
    nulls = ab.to_numpy(ak.is_null(arr)) if arr.null_count else None
    if pa.types.is_timestamp(typ) or pa.types.is_date64(typ) or pa.types.is_time64(typ) or pa.types.is_duration(typ):
        arr = ak.cast(arr, pa.int64())
    elif pa.types.is_date32(typ) or pa.types.is_time32(typ):
        arr = ak.cast(arr, pa.int32())
    elif pa.types.is_boolean(typ):
        arr = ak.cast(arr, pa.int8())
    elif pa.types.is_decimal(typ):
        arr = ak.cast(arr, pa.float64(), safe=False)
    if pa.types.is_string(arr.type) or pa.types.is_large_string(arr.type) or pa.types.is_string_view(arr.type):
        text = ak.fill_null(ak.cast(arr, pa.large_string()), ab.scalar("", pa.large_string()))
        values = np.asarray(text.to_pylist(), dtype=object)
        return values, nulls
    if arr.null_count:
        arr = ak.fill_null(arr, ab.scalar(0, arr.type))
    # numbers through Arrow's buffers: pyarrow's to_numpy imports pandas (about 0.3 s) on first use
    values = ab.to_numpy(arr) if _is_number(arr.type) else arr.to_numpy(zero_copy_only=False)
    if values.dtype.kind == "f":
        values = np.where(np.isnan(values), np.inf, values)
    return values, nulls


class ZOrderCurve:
    """Range boundaries per column, from a sample; :meth:`keys` maps rows to Z-values."""

    def __init__(self, columns: tuple[str, ...], boundaries: list[np.ndarray]):
        self.columns = columns
        self.boundaries = boundaries
        self.bits = bits_per_column(len(columns))

    @classmethod
    def from_sample(cls, sample: pa.Table, columns: tuple[str, ...]) -> "ZOrderCurve":
        ranges = 1 << bits_per_column(len(columns))
        boundaries = []
        for c in columns:
            values, nulls = _comparable(column_at(sample, c))
            if nulls is not None:
                values = values[~nulls]
            values = np.sort(values, kind="stable")
            if len(values) == 0:
                boundaries.append(values)
                continue
            # ranges - 1 cut values at equal rank steps; repeated values collapse into one range
            idx = (np.arange(1, ranges, dtype=np.int64) * len(values)) // ranges
            cuts = values[np.unique(idx)]
            boundaries.append(np.unique(cuts) if cuts.dtype != object else np.array(sorted(set(cuts)), dtype=object))
        return cls(columns, boundaries)

    def range_ids(self, table: pa.Table) -> list[np.ndarray]:
        """Each column's range id per row (``uint64``, below ``2 ** bits``; nulls 0)."""
        out = []
        for c, bounds in zip(self.columns, self.boundaries):
            values, nulls = _comparable(column_at(table, c))
            ids = np.searchsorted(bounds, values, side="right").astype(np.uint64) if len(bounds) else \
                np.zeros(len(values), dtype=np.uint64)
            if nulls is not None:
                ids[nulls] = 0
            out.append(ids)
        return out

    def keys(self, table: pa.Table) -> np.ndarray:
        """The Z-value of each row of ``table`` (which holds at least the Z-order columns)."""
        return interleave_bits(self.range_ids(table), self.bits)


def interleave_bits(ids: list[np.ndarray], bits: int) -> np.ndarray:
    """Z-values: bit ``bits-1`` of every column, then bit ``bits-2`` of every column, ... (uint64)."""
    n = len(ids[0]) if ids else 0
    z = np.zeros(n, dtype=np.uint64)
    one = np.uint64(1)
    for bit in range(bits - 1, -1, -1):
        shift = np.uint64(bit)
        for col in ids:
            z <<= one
            z |= (col >> shift) & one
    return z


def cut_points(sample_keys: np.ndarray, parts: int) -> np.ndarray:
    """``parts - 1`` Z-values splitting the sample into ``parts`` runs of about equal rows."""
    if parts <= 1 or len(sample_keys) == 0:
        return np.zeros(0, dtype=np.uint64)
    ordered = np.sort(sample_keys)
    idx = (np.arange(1, parts, dtype=np.int64) * len(ordered)) // parts
    return np.unique(ordered[idx])


def part_of(keys: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Which output part each Z-value falls in (``0 .. len(cuts)``)."""
    return np.searchsorted(cuts, keys, side="right")
