"""Column mapping on write: every column gets an id and a physical name, as Delta Spark assigns them.

PROTOCOL.md "Writer Requirements for Column Mapping" and Delta Spark's
``DeltaColumnMapping.verifyAndUpdateMetadataChange``, applied to every commit that
writes a ``metaData`` action:

- Mode changes on an existing table: only ``none`` -> ``name``. ``id`` needs the ids
  inside the existing data files, and turning mapping off would misread files written
  under physical names, so Delta Spark refuses both (and name <-> id); so do we, with
  :class:`UnsupportedFeatureError`. Enabling is refused as well when the old schema
  already carries column mapping metadata (Delta Spark's guard against a corrupt table).
- Assignment, in the order Delta Spark walks a schema (each struct field before its
  children, through arrays and maps): a field without ``delta.columnMapping.id`` gets
  the next id after ``max(delta.columnMapping.maxColumnId, every id present)``; one
  without ``delta.columnMapping.physicalName`` gets, when the mode is being turned on,
  its current name (existing files already hold the column under it), otherwise a new
  ``col-<uuid>``. The mode change may not add columns at the same time.
- ``delta.columnMapping.maxColumnId`` is set to the highest id (it never decreases).
- Physical names and ids of columns new to the schema are the writer's to assign
  (:func:`check_new_columns_bring_no_mapping`): PROTOCOL.md asks that a new column's physical
  field path be unique across all versions of the table, which only a fresh ``col-<uuid>``
  guarantees (dropped names may be gone from the log after cleanup), and a dropped column's
  physical name or id given to a new column would read the dropped column's data back (also when
  the column is dropped in the same commit: an old physical path goes only with its old id). Delta
  Spark never lets one in either: ``ALTER TABLE ADD COLUMNS`` builds bare fields and writes
  strip column mapping metadata from the data's schema. When mapping is turned on, a given
  physical name must be the column's current name (its files hold it under that name).
  RESTORE, which brings back an earlier version's own columns, is not asked.
- Every mapped schema is checked: no id or physical field path twice.
- With the change data feed on, a commit that turns mapping on, renames or drops a column
  may not also add or remove files (Delta Spark's ``performCdcColumnMappingCheck``: the
  change rows of such a commit could not be read with one schema).
"""
from __future__ import annotations

import uuid
from typing import Any, Callable

from ..base.actions import Metadata, parse_schema_string
from ..base.errors import InvalidArgumentError, UnsupportedFeatureError
from ..base.features import (CHANGE_DATA_FEED_PROPERTY, COLUMN_ID_KEY, COLUMN_MAPPING_MAX_ID_PROPERTY,
                             PHYSICAL_NAME_KEY, column_mapping_mode, is_true)

MODES = ("none", "name", "id")
_FEATURE = "columnMapping"


def _children(data_type: Any) -> list[tuple[str, Any]]:
    """(path step, type) of the types nested in ``data_type`` (Delta Spark's element/key/value steps)."""
    if not isinstance(data_type, dict):
        return []
    kind = data_type.get("type")
    if kind == "array":
        return [("element", data_type.get("elementType"))]
    if kind == "map":
        return [("key", data_type.get("keyType")), ("value", data_type.get("valueType"))]
    return []


def _walk(struct: Any, visit: Callable[[list[str], list[str], dict], None],
          path: tuple[list[str], list[str]] = ([], [])) -> None:
    """Call ``visit(parent path, parent physical path, field)`` on every struct field, pre-order,
    through arrays and maps (a field's physical name is read after ``visit``, which may assign it)."""
    logical, physical = path
    if not isinstance(struct, dict):
        return
    if struct.get("type") == "struct":
        for f in struct.get("fields") or []:
            visit(logical, physical, f)
            name = str(f.get("name"))
            phys = str((f.get("metadata") or {}).get(PHYSICAL_NAME_KEY, name))
            _walk(f.get("type"), visit, (logical + [name], physical + [phys]))
        return
    for step, child in _children(struct):
        _walk(child, visit, (logical + [step], physical + [step]))


def _find(schema: Any, path: list[str]) -> dict | None:
    """The field at ``path`` (case-insensitive names, element/key/value steps), None if absent."""
    node: Any = schema
    found: dict | None = None
    for step in path:
        found = None
        if isinstance(node, dict) and node.get("type") == "struct":
            found = next((f for f in node.get("fields") or [] if str(f.get("name", "")).lower() == step.lower()), None)
            if found is None:
                return None
            node = found.get("type")
        else:
            child = dict(_children(node)).get(step)
            if child is None:
                return None
            node = child
    return found


def _column_id(f: dict) -> int:
    """A field's column id; an id that is not an integer is bad input, not a crash."""
    raw = (f.get("metadata") or {})[COLUMN_ID_KEY]
    if isinstance(raw, bool) or not isinstance(raw, (int, str)) or not str(raw).lstrip("-").isdigit():
        raise InvalidArgumentError(f"column {f.get('name')!r}: {COLUMN_ID_KEY} must be an integer, got {raw!r}")
    return int(raw)


def _ids_in(schema: Any) -> list[int]:
    ids: list[int] = []
    _walk(schema, lambda _p, _q, f: ids.append(_column_id(f))
          if COLUMN_ID_KEY in (f.get("metadata") or {}) else None)
    return ids


def has_mapping_metadata(schema: Any) -> bool:
    """Whether any field carries a column id or physical name."""
    found: list[bool] = []
    _walk(schema, lambda _p, _q, f: found.append(bool({COLUMN_ID_KEY, PHYSICAL_NAME_KEY} & set(f.get("metadata") or {}))))
    return any(found)


def _max_id(configuration: dict[str, str]) -> int:
    raw = configuration.get(COLUMN_MAPPING_MAX_ID_PROPERTY)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        raise InvalidArgumentError(f"{COLUMN_MAPPING_MAX_ID_PROPERTY} must be an integer, got {raw!r}") from None


def check_mode_change(old: Metadata | None, new: Metadata) -> None:
    """Refuse the mode changes Delta Spark refuses (see the module docstring)."""
    new_mode = column_mapping_mode(new.configuration)
    if new_mode not in MODES:
        raise UnsupportedFeatureError(f"column mapping mode {new_mode!r} is not one of {list(MODES)}", feature=_FEATURE)
    if old is None:
        return
    old_mode = column_mapping_mode(old.configuration)
    if old_mode == new_mode:
        return
    if not (old_mode == "none" and new_mode == "name"):
        raise UnsupportedFeatureError(
            f"changing the column mapping mode of an existing table from {old_mode!r} to {new_mode!r} is not "
            "supported (Delta Spark refuses it too): only 'none' -> 'name' keeps existing data files readable",
            feature=_FEATURE)
    if has_mapping_metadata(parse_schema_string(old.schema_string)):
        raise UnsupportedFeatureError(
            "cannot enable column mapping: the schema already carries column mapping metadata although the "
            "mode is 'none' (Delta Spark refuses this too, to keep such a table from further damage)",
            feature=_FEATURE)


def _physical_path_ids(schema: Any) -> dict[tuple[str, ...], int | None]:
    """Each physical field path of ``schema`` and the column id that holds it (None without one)."""
    paths: dict[tuple[str, ...], int | None] = {}

    def add(_p: list[str], physical: list[str], f: dict) -> None:
        meta = f.get("metadata") or {}
        paths[(*physical, str(meta.get(PHYSICAL_NAME_KEY)))] = _column_id(f) if COLUMN_ID_KEY in meta else None
    _walk(schema, add)
    return paths


def check_new_columns_bring_no_mapping(old: Metadata | None, new: Metadata) -> None:
    """Refuse a physical name or id that a column new to the schema brings (see the module docstring).

    ``new`` is the metadata as given, before :func:`assign_column_mapping` fills in what is missing.
    """
    if old is None or column_mapping_mode(new.configuration) == "none":
        return
    old_schema, schema = parse_schema_string(old.schema_string), parse_schema_string(new.schema_string)
    if column_mapping_mode(old.configuration) == "none":
        def current_name(parent: list[str], _physical: list[str], f: dict) -> None:
            given = (f.get("metadata") or {}).get(PHYSICAL_NAME_KEY)
            existing = _find(old_schema, parent + [str(f.get("name"))])
            if given is not None and (existing is None or given != existing.get("name")):
                raise InvalidArgumentError(
                    f"column {'.'.join(parent + [str(f.get('name'))])!r} is given physical name {given!r} while "
                    "column mapping is turned on: its data files hold it under its current name, which becomes "
                    "its physical name; leave delta.columnMapping.* out of the schema")
        _walk(schema, current_name)
        return
    old_paths, old_ids = _physical_path_ids(old_schema), set(_ids_in(old_schema))
    highest = max([_max_id(old.configuration), *old_ids])

    def check(parent: list[str], physical: list[str], f: dict) -> None:
        meta = f.get("metadata") or {}
        column = ".".join(parent + [str(f.get("name"))])
        path = (*physical, str(meta.get(PHYSICAL_NAME_KEY)))
        # a kept column brings its old physical path with its old id; a column new by its id (or
        # without one) on an old path would take that path over, data included
        new_by_id = COLUMN_ID_KEY not in meta or _column_id(f) not in old_ids
        if PHYSICAL_NAME_KEY in meta and (path not in old_paths or (new_by_id and old_paths[path] is not None)):
            raise InvalidArgumentError(
                f"new column {column!r} brings its own physical name {meta[PHYSICAL_NAME_KEY]!r}: physical names of "
                "new columns are assigned by the writer, so that they are unique across every version of the table "
                "(PROTOCOL.md, Column Mapping; a dropped column's name would read its data back); leave "
                f"{PHYSICAL_NAME_KEY} out of new columns")
        if COLUMN_ID_KEY in meta and _column_id(f) not in old_ids and _column_id(f) <= highest:
            raise InvalidArgumentError(
                f"new column {column!r} brings column id {_column_id(f)}, which the table has given out before "
                f"({COLUMN_MAPPING_MAX_ID_PROPERTY} is {highest}): ids of new columns are assigned by the writer "
                f"and never reused; leave {COLUMN_ID_KEY} out of new columns")

    _walk(schema, check)


def assign_column_mapping(old: Metadata | None, new: Metadata) -> Metadata:
    """``new`` with every field's id and physical name assigned and maxColumnId kept (see module doc)."""
    check_mode_change(old, new)
    if column_mapping_mode(new.configuration) == "none":
        return new
    schema = parse_schema_string(new.schema_string)
    old_schema = parse_schema_string(old.schema_string) if old is not None else {"type": "struct", "fields": []}
    turning_on = old is not None and column_mapping_mode(old.configuration) == "none"
    max_id = max([_max_id(new.configuration), _max_id(old.configuration) if old is not None else 0,
                  *_ids_in(schema)])

    changed = False

    def assign(parent: list[str], _physical: list[str], f: dict) -> None:
        nonlocal max_id, changed
        meta = dict(f.get("metadata") or {})
        if COLUMN_ID_KEY in meta and PHYSICAL_NAME_KEY in meta:
            return
        changed = True
        if COLUMN_ID_KEY not in meta:
            max_id += 1
            meta[COLUMN_ID_KEY] = max_id
        if PHYSICAL_NAME_KEY not in meta:
            if turning_on:
                existing = _find(old_schema, parent + [f.get("name")])
                if existing is None and (old_schema.get("fields") or []):
                    raise UnsupportedFeatureError(
                        f"column {'.'.join(parent + [str(f.get('name'))])!r} is added while column mapping is "
                        "turned on; change the mode and the schema in separate commits (as Delta Spark requires)",
                        feature=_FEATURE)
                meta[PHYSICAL_NAME_KEY] = existing.get("name") if existing is not None else _new_physical_name()
            else:
                meta[PHYSICAL_NAME_KEY] = _new_physical_name()
        f["metadata"] = meta

    _walk(schema, assign)
    check_assignments(schema, max_id)
    if not changed and new.configuration.get(COLUMN_MAPPING_MAX_ID_PROPERTY) == str(max_id):
        return new                  # nothing to assign: keep the schema string byte for byte
    return new.with_schema(schema).with_configuration({COLUMN_MAPPING_MAX_ID_PROPERTY: str(max_id)})


def _new_physical_name() -> str:
    return f"col-{uuid.uuid4()}"


def check_assignments(schema: Any, max_id: int) -> None:
    """No column id twice, no physical field path twice, and maxColumnId at least every id."""
    ids: set[int] = set()
    paths: set[tuple[str, ...]] = set()

    def check(_parent: list[str], physical: list[str], f: dict) -> None:
        meta = f.get("metadata") or {}
        cid = _column_id(f)
        if cid in ids:
            raise InvalidArgumentError(f"column id {cid} is assigned twice in the schema")
        ids.add(cid)
        phys = (*physical, str(meta[PHYSICAL_NAME_KEY]))
        if phys in paths:
            raise InvalidArgumentError(f"physical column path {'.'.join(phys)!r} is assigned twice in the schema")
        paths.add(phys)

    _walk(schema, check)
    if ids and max(ids) > max_id:
        raise InvalidArgumentError(f"{COLUMN_MAPPING_MAX_ID_PROPERTY}={max_id} is below column id {max(ids)}")


def _paths_by_id(schema: Any) -> dict[int, tuple[str, ...]]:
    out: dict[int, tuple[str, ...]] = {}

    def collect(parent: list[str], _physical: list[str], f: dict) -> None:
        meta = f.get("metadata") or {}
        if COLUMN_ID_KEY in meta:
            out[int(meta[COLUMN_ID_KEY])] = (*parent, str(f.get("name")))

    _walk(schema, collect)
    return out


def check_change_feed_with_mapping_change(old: Metadata | None, new: Metadata, has_file_actions: bool) -> None:
    """Refuse file actions in a commit that turns mapping on, renames or drops a column, while CDF is on."""
    if old is None or not has_file_actions or not is_true(new.configuration, CHANGE_DATA_FEED_PROPERTY):
        return
    new_mode, old_mode = column_mapping_mode(new.configuration), column_mapping_mode(old.configuration)
    if new_mode == "none":
        return
    changed = old_mode == "none"
    if not changed:
        before = _paths_by_id(parse_schema_string(old.schema_string))
        after = _paths_by_id(parse_schema_string(new.schema_string))
        changed = any(cid not in after or after[cid] != path for cid, path in before.items())
    if changed:
        raise UnsupportedFeatureError(
            "with the change data feed on, a commit that turns column mapping on, renames or drops a column "
            "cannot also add or remove files (Delta Spark refuses it too); commit the schema change alone",
            feature=_FEATURE)
