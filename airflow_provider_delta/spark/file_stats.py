"""Per-file statistics of parquet files Spark wrote, read from their footers.

Delta's ``stats`` (numRecords, minValues, maxValues, nullCount) let readers skip
files. Spark's own parquet writer does not produce them, but its files carry
row-group statistics; this turns those into Delta stats without reading any
data: the footer gives row and null counts, and the row groups' min/max values
are handed to the log layer's stats code so rendering and string truncation follow
the same rules as every other file of the table.

Only top-level columns of types whose parquet bounds are exact for Delta are
given bounds (integers, dates, strings, booleans excluded as Delta does, ...);
floats are left out because a footer cannot say whether NaN was present.
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..log import collect_stats


def _bounded(t: pa.DataType) -> bool:
    return (pa.types.is_integer(t) or pa.types.is_date(t) or pa.types.is_timestamp(t)
            or pa.types.is_string(t) or pa.types.is_large_string(t))


def _bound_column(field: pa.Field, chunks: list[Any], num_groups: int) -> pa.Array:
    """min values then max values of every row group, or all nulls when any bound is unknown."""
    if chunks and all(c is not None for c in chunks) and _bounded(field.type):
        lows = [c[0] for c in chunks]
        highs = [c[1] for c in chunks]
        try:
            return pa.array(lows + highs, type=field.type)
        except (pa.ArrowException, TypeError, ValueError, OverflowError):
            pass
    return pa.nulls(2 * num_groups, field.type)


def footer_stats(metadata: pq.FileMetaData, data_schema: pa.Schema, configuration: dict[str, str]) -> str:
    """The Delta ``stats`` JSON of a file with footer ``metadata``; ``data_schema`` = stored columns, table order."""
    groups = metadata.num_row_groups
    index: dict[str, int] = {}
    if groups:
        rg0 = metadata.row_group(0)
        index = {rg0.column(j).path_in_schema: j for j in range(rg0.num_columns)}
    nulls: dict[str, int] = {}
    columns = []
    for field in data_schema:
        j = index.get(field.name)
        chunks: list[Any] = []
        null_count: int | None = 0 if j is not None else None
        for g in range(groups):
            st = metadata.row_group(g).column(j).statistics if j is not None else None
            if st is None:
                chunks.append(None)
                null_count = None
                continue
            chunks.append((st.min, st.max) if st.has_min_max else None)
            if null_count is not None and st.has_null_count:
                null_count += st.null_count
            else:
                null_count = None
        if j is not None and null_count is not None and not pa.types.is_nested(field.type):
            nulls[field.name] = null_count
        columns.append(_bound_column(field, chunks, groups) if groups else pa.nulls(0, field.type))
    bounds = pa.Table.from_arrays(columns, schema=data_schema)
    stats = json.loads(collect_stats(bounds, configuration))
    out: dict[str, Any] = {"numRecords": metadata.num_rows}
    mins = {k: v for k, v in (stats.get("minValues") or {}).items() if k in data_schema.names}
    maxs = {k: v for k, v in (stats.get("maxValues") or {}).items() if k in data_schema.names}
    if mins:
        out["minValues"] = mins
    if maxs:
        out["maxValues"] = maxs
    if nulls:
        # the same columns the table's stats settings select (collect_stats applied them)
        chosen = set((stats.get("nullCount") or {}).keys())
        picked = {k: v for k, v in nulls.items() if k in chosen}
        if picked:
            out["nullCount"] = picked
    return json.dumps(out, separators=(",", ":"), ensure_ascii=False)
