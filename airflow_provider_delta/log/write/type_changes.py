"""Type widening on write: the type change history of a column survives schema updates.

PROTOCOL.md "Writer Requirements for Type Widening": writers must preserve the
``delta.typeChanges`` field metadata when the table schema is updated (they may drop it
only once every data file has the field's current type). A new schema given without it
(say, built from an Arrow schema) gets it back from the schema the commit read, field by
field. Type changes themselves are refused while files of the old type remain
(:mod:`.schema_evolution`), so this package never records new ones.

The history belongs to the field, not to its name: Delta Spark keeps it in the field's own
metadata, so a column that replaces a dropped one of the same name starts without one. A
field gets the history back only when it is the same column as the one that had it: the
same column id where the read schema has ids (column mapping: names are labels, ids are the
columns), the same path otherwise, and in both cases the same type; a field of another type
is a new column (or a rewritten one, whose files all have its new type).
"""
from __future__ import annotations

from typing import Any

from ..base.actions import Metadata, parse_schema_string
from ..base.features import COLUMN_ID_KEY
from .column_expressions import fields_by_path

TYPE_CHANGES_KEY = "delta.typeChanges"


def _identity(path: tuple[str, ...], f: dict) -> tuple[str, Any]:
    """What makes ``f`` the same column across schemas: its column id if it has one, else its path."""
    cid = (f.get("metadata") or {}).get(COLUMN_ID_KEY)
    return ("id", cid) if cid is not None else ("path", path)


def _shape(data_type: Any) -> Any:
    """A field's type as far as its own history covers it (through arrays and maps, not into structs)."""
    if not isinstance(data_type, dict):
        return data_type
    kind = data_type.get("type")
    if kind == "struct":
        return "struct"             # a struct's fields carry (and are matched for) their own histories
    if kind == "array":
        return ("array", _shape(data_type.get("elementType")))
    if kind == "map":
        return ("map", _shape(data_type.get("keyType")), _shape(data_type.get("valueType")))
    return kind


def keep_type_changes(old: Metadata, new: Metadata) -> Metadata:
    """``new`` with the ``delta.typeChanges`` of ``old``'s fields restored where the same field lost it."""
    before = {_identity(path, f): f for path, f in fields_by_path(parse_schema_string(old.schema_string)).items()
              if TYPE_CHANGES_KEY in (f.get("metadata") or {})}
    if not before:
        return new
    schema = parse_schema_string(new.schema_string)
    changed = False
    for path, f in fields_by_path(schema).items():
        if TYPE_CHANGES_KEY in (f.get("metadata") or {}):
            continue
        # a field matches by its id; an old field without one (no column mapping) by its path
        owner = before.get(_identity(path, f)) or before.get(("path", path))
        if owner is None or _shape(owner.get("type")) != _shape(f.get("type")):
            continue
        f["metadata"] = {**(f.get("metadata") or {}), TYPE_CHANGES_KEY: owner["metadata"][TYPE_CHANGES_KEY]}
        changed = True
    if not changed:
        return new
    return new.with_schema(schema)
