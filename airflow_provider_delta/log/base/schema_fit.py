"""Does data fit a table's schema? Columns by name, same Delta types or a lossless widening.

Appending data needs the table's columns, in its order, with its exact types: a
column the data lacks reads as nulls (unless it is NOT NULL), an extra column is
refused (with a hint when only its case differs), and types must match or widen
without loss (byte -> short -> integer -> long, float -> double), as Delta Spark
accepts on append without schema evolution.
"""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa

from .errors import InvalidArgumentError
from .schema import arrow_to_delta_type


def _shape(t: Any) -> Any:
    """A Delta type with nullability flags removed (compared separately)."""
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "struct":
            return {"struct": [(f["name"], _shape(f["type"])) for f in t["fields"]]}
        if kind == "array":
            return {"array": _shape(t["elementType"])}
        if kind == "map":
            return {"map": (_shape(t["keyType"]), _shape(t["valueType"]))}
    return t


_INT_ORDER = ["byte", "short", "integer", "long"]


def _widens(src: Any, dst: Any) -> bool:
    """Lossless primitive widenings accepted on append (byte->short->int->long, float->double)."""
    if isinstance(src, str) and isinstance(dst, str):
        if src in _INT_ORDER and dst in _INT_ORDER:
            return _INT_ORDER.index(src) <= _INT_ORDER.index(dst)
        return src == "float" and dst == "double"
    return False


def conform_to_schema(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """``data`` with the table's columns, order and exact types, or InvalidArgumentError saying why not."""
    lower = {f.name.lower(): f.name for f in schema}
    table_names = set(schema.names)
    extra = [n for n in data.column_names if n not in table_names]
    if extra:
        hints = [f"{n!r} (did you mean {lower[n.lower()]!r}?)" if n.lower() in lower else repr(n) for n in extra]
        raise InvalidArgumentError(
            f"schema mismatch: column(s) {', '.join(hints)} are not in the table "
            f"(table columns: {', '.join(schema.names)})")
    if len(set(data.column_names)) != len(data.column_names):
        raise InvalidArgumentError("the data has duplicate column names")
    columns = []
    for field in schema:
        if field.name not in data.column_names:
            if not field.nullable:
                raise InvalidArgumentError(f"schema mismatch: non-nullable column {field.name!r} is missing")
            columns.append(pa.nulls(data.num_rows, field.type))
            continue
        col = data.column(field.name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_null(col.type):           # an all-null column of unknown type (e.g. [None])
            if not field.nullable and len(col):
                raise InvalidArgumentError(f"column {field.name!r} is not nullable but the data has nulls")
            columns.append(pa.nulls(data.num_rows, field.type))
            continue
        try:
            src = arrow_to_delta_type(col.type)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"column {field.name!r}: {e}") from None
        dst = arrow_to_delta_type(field.type)
        if _shape(src) != _shape(dst) and not _widens(src, dst):
            raise InvalidArgumentError(
                f"schema mismatch: column {field.name!r} is {_describe(src)} in the data but "
                f"{_describe(dst)} in the table")
        if not field.nullable and col.null_count:
            raise InvalidArgumentError(
                f"column {field.name!r} is not nullable but the data has {col.null_count} null(s)")
        try:
            columns.append(col.cast(field.type) if col.type != field.type else col)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidArgumentError(f"column {field.name!r} cannot be stored as {field.type}: {e}") from None
    return pa.Table.from_arrays(columns, schema=schema)


def _describe(t: Any) -> str:
    return t if isinstance(t, str) else json.dumps(t, separators=(",", ":"))[:200]
