"""Type widening on write: the type change history of a column survives schema updates.

PROTOCOL.md "Writer Requirements for Type Widening": writers must preserve the
``delta.typeChanges`` field metadata when the table schema is updated (they may drop it
only once every data file has the field's current type). A new schema given without it
(say, built from an Arrow schema) gets it back from the schema the commit read, field by
field. Type changes themselves are refused while files of the old type remain
(:func:`.commit_plan._check_layout_change`), so this package never records new ones.
"""
from __future__ import annotations


from ..base.actions import Metadata, parse_schema_string
from .column_expressions import fields_by_path

TYPE_CHANGES_KEY = "delta.typeChanges"


def keep_type_changes(old: Metadata, new: Metadata) -> Metadata:
    """``new`` with the ``delta.typeChanges`` of ``old``'s fields restored where it lost them."""
    before = {path: f["metadata"][TYPE_CHANGES_KEY]
              for path, f in fields_by_path(parse_schema_string(old.schema_string)).items()
              if TYPE_CHANGES_KEY in (f.get("metadata") or {})}
    if not before:
        return new
    schema = parse_schema_string(new.schema_string)
    changed = False
    for path, f in fields_by_path(schema).items():
        if path in before and TYPE_CHANGES_KEY not in (f.get("metadata") or {}):
            f["metadata"] = {**(f.get("metadata") or {}), TYPE_CHANGES_KEY: before[path]}
            changed = True
    if not changed:
        return new
    return new.with_schema(schema)
