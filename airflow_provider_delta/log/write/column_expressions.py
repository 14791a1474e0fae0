"""Columns defined by SQL expressions (generated, identity, default): what a metadata change may do.

Delta Spark's ``OptimisticTransaction.updateMetadataInternal`` and PROTOCOL.md "Generated
Columns", "Identity Columns", "Default Columns", for a commit that changes the metadata of an
existing table:

- a generation expression or identity column definition on a table whose protocol (before
  this commit) does not support ``generatedColumns`` / ``identityColumns`` is dropped from the
  new schema, as Delta Spark drops it (``removeDefaultExpressions``), instead of upgrading
  the protocol for it: such a table was written by a client that did not know the feature;
- a column added by the commit may not get a default value in the same commit (``ALTER TABLE
  ... ADD COLUMN c INT DEFAULT 42`` is not supported: PROTOCOL.md "Default Columns").

Rows are never added to tables where such expressions are active (this package does not
evaluate SQL; :func:`..base.features.check_can_add_data`).
"""
from __future__ import annotations


from ..base.actions import Metadata, Protocol, parse_schema_string
from ..base.errors import InvalidArgumentError
from ..base.features import supported_features
from ..base.schema import physical_name_in

GENERATION_EXPRESSION_KEY = "delta.generationExpression"
IDENTITY_KEY_PREFIX = "delta.identity."
DEFAULT_KEY = "CURRENT_DEFAULT"


def drop_unsupported_expressions(protocol_before: Protocol, new: Metadata) -> Metadata:
    """``new`` without generation/identity definitions the table's protocol does not support."""
    _reader, writer = supported_features(protocol_before)
    keep_generated, keep_identity = "generatedColumns" in writer, "identityColumns" in writer
    if keep_generated and keep_identity:
        return new
    schema = parse_schema_string(new.schema_string)
    changed = False
    for f in schema.get("fields") or []:
        meta = f.get("metadata") or {}
        drop = [k for k in meta if (not keep_generated and k == GENERATION_EXPRESSION_KEY)
                or (not keep_identity and k.startswith(IDENTITY_KEY_PREFIX))]
        if drop:
            f["metadata"] = {k: v for k, v in meta.items() if k not in drop}
            changed = True
    if not changed:
        return new
    return new.with_schema(schema)


def fields_by_path(node, prefix=()) -> dict[tuple[str, ...], dict]:
    """Every struct field of a Delta schema by its lower-cased path (element/key/value steps)."""
    out: dict[tuple[str, ...], dict] = {}
    if isinstance(node, dict) and node.get("type") == "struct":
        for f in node.get("fields") or []:
            path = prefix + (str(f.get("name")).lower(),)
            out[path] = f
            out.update(fields_by_path(f.get("type"), path))
    elif isinstance(node, dict) and node.get("type") == "array":
        out.update(fields_by_path(node.get("elementType"), prefix + ("element",)))
    elif isinstance(node, dict) and node.get("type") == "map":
        out.update(fields_by_path(node.get("keyType"), prefix + ("key",)))
        out.update(fields_by_path(node.get("valueType"), prefix + ("value",)))
    return out


def check_new_columns_have_no_default(old: Metadata, new: Metadata) -> None:
    """Refuse a column that this commit adds together with a default value."""
    before = fields_by_path(parse_schema_string(old.schema_string))
    for path, f in fields_by_path(parse_schema_string(new.schema_string)).items():
        if path not in before and DEFAULT_KEY in (f.get("metadata") or {}):
            raise InvalidArgumentError(
                f"column {'.'.join(path)!r} is added with a default value in the same commit, which Delta does "
                "not support (PROTOCOL.md 'Default Columns'); add the column first, then set its default")


IDENTITY_HIGH_WATER_MARK = "delta.identity.highWaterMark"
IDENTITY_STEP = "delta.identity.step"


def keep_identity_high_water_marks(new: Metadata, current: Metadata) -> Metadata:
    """``new`` with no identity column's high water mark behind the one ``current`` records.

    An identity column never hands out a value twice, also across a RESTORE that brings an
    older schema back: Delta Spark merges the current marks into the restored schema
    (``IdentityColumn.copySchemaWithMergedHighWaterMarks``, matched by physical name; the
    larger mark for a positive step, the smaller for a negative one).
    """
    def physical(f: dict) -> str:
        return physical_name_in(f.get("metadata"), f.get("name"))

    marks = {physical(f): f["metadata"][IDENTITY_HIGH_WATER_MARK]
             for f in parse_schema_string(current.schema_string).get("fields") or []
             if IDENTITY_HIGH_WATER_MARK in (f.get("metadata") or {})}
    if not marks:
        return new
    schema = parse_schema_string(new.schema_string)
    changed = False
    for f in schema.get("fields") or []:
        meta = f.get("metadata") or {}
        if IDENTITY_STEP not in meta or physical(f) not in marks:
            continue
        mark, old = marks[physical(f)], meta.get(IDENTITY_HIGH_WATER_MARK)
        merged = mark if old is None else (max(old, mark) if int(meta[IDENTITY_STEP]) > 0 else min(old, mark))
        if merged != old:
            f["metadata"] = {**meta, IDENTITY_HIGH_WATER_MARK: merged}
            changed = True
    return new.with_schema(schema) if changed else new
