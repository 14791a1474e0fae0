"""Schema evolution: which schema changes the table's existing data files can still be read under.

A commit that changes the schema and keeps files written under the old one (PROTOCOL.md
"Consistency Between Table Metadata and Data Files") may only make changes that readers
resolve from those files: they find each column, nested struct fields too, by its name, or
by its physical name under column mapping (:mod:`..read.column_mapping`), and read a column
a file lacks as null. So, at every level of nesting (struct fields, inside arrays and maps):

- a new field is allowed when it is nullable: older files have no values for it. Delta Spark
  adds nested fields the same way (``ALTER TABLE ADD COLUMNS (s.b ...)``, metadata only; it
  refuses NOT NULL there too), and in any position: fields are matched by name, not order;
- a field that goes is allowed only under column mapping (Delta Spark's ``DROP COLUMN``, nested
  ones too): files keep its physical name, which no later field gets. Without mapping the name
  is the column, so a field that goes and one that comes are a rewrite;
- a kept field (same name, or same physical name under mapping, so renames under mapping are
  metadata only, nested ones too) keeps its type; nullability may be relaxed, not tightened
  (files may hold nulls), for fields, array elements and map values alike.

Anything else needs every file rewritten in the same commit (the caller lets any schema
follow when no old file stays). Type changes are refused, so this package never records a
``delta.typeChanges`` of its own (:mod:`.type_changes` keeps those of others).
"""
from __future__ import annotations

from typing import Callable

import pyarrow as pa

from ..base.errors import InvalidArgumentError
from ..base.schema import physical_name

_REWRITE = "while existing files still hold it; overwrite all data in the same commit"


def check_files_stay_readable(old: pa.Schema, new: pa.Schema, mapped: bool) -> None:
    """Raise :class:`InvalidArgumentError` unless files written under ``old`` read under ``new``.

    ``mapped``: column mapping is on before and after the change (fields are their physical names).
    """
    _check_fields(list(old), list(new), physical_name if mapped else (lambda f: f.name), mapped, "")


def _check_fields(old: list[pa.Field], new: list[pa.Field], key: Callable[[pa.Field], str], mapped: bool,
                  parent: str) -> None:
    new_by_key = {key(f): f for f in new}
    for f in old:
        kept = new_by_key.get(key(f))
        column = parent + f.name
        if kept is None:
            if not mapped:
                raise InvalidArgumentError(f"column {column!r} would be dropped {_REWRITE}")
            continue
        if f.nullable and not kept.nullable:
            raise InvalidArgumentError(f"column {column!r} would become NOT NULL {_REWRITE} (it may hold nulls)")
        _check_type(f.type, kept.type, key, mapped, column)
    old_keys = {key(f) for f in old}
    for k, f in new_by_key.items():
        if k not in old_keys and not f.nullable:
            raise InvalidArgumentError(f"new column {parent + f.name!r} must be nullable: existing files have no values")


def _check_type(old: pa.DataType, new: pa.DataType, key: Callable[[pa.Field], str], mapped: bool,
                column: str) -> None:
    if pa.types.is_struct(old) and pa.types.is_struct(new):
        _check_fields([old.field(i) for i in range(old.num_fields)], [new.field(i) for i in range(new.num_fields)],
                      key, mapped, column + ".")
    elif _is_list(old) and _is_list(new):
        _check_nested(old.value_field, new.value_field, key, mapped, column + ".element")
    elif pa.types.is_map(old) and pa.types.is_map(new):
        _check_type(old.key_type, new.key_type, key, mapped, column + ".key")
        _check_nested(old.item_field, new.item_field, key, mapped, column + ".value")
    elif not old.equals(new):
        raise InvalidArgumentError(f"column {column!r} would change type from {old} to {new} {_REWRITE}")


def _check_nested(old: pa.Field, new: pa.Field, key: Callable[[pa.Field], str], mapped: bool, column: str) -> None:
    """An array element or a map value: it may become nullable, not NOT NULL, and keeps its type."""
    if old.nullable and not new.nullable:
        raise InvalidArgumentError(f"{column!r} would become NOT NULL {_REWRITE} (it may hold nulls)")
    _check_type(old.type, new.type, key, mapped, column)


def _is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)
