"""Column mapping on read: find a logical column in a data file and give it its logical shape.

Under column mapping (protocol "Column Mapping") a table's schema names are only
labels: data files store every column -- nested struct fields too, inside arrays
and maps -- under its physical name (``delta.columnMapping.physicalName``), and in
mode ``id`` also with a Parquet field id (``delta.columnMapping.id``), which readers
resolve first. Renaming a column changes the label only; dropping one removes it
from the schema while files keep its data; re-adding a name gets a new physical
name, so old files read as null for it. Partition values are keyed by the physical
name as well.

Without column mapping the logical name is the physical name, and the same code
conforms a file's columns to the table schema (a struct that gained a field reads
it as null in older files), so there is one path for both.

The other way, for rewriting data files (OPTIMIZE): :func:`stored_field` is the shape a
logical column takes in a file, physical names at every level and each field's id as its
Parquet field id (Delta Spark writes the ids in both modes; readers in mode ``name`` ignore
them), and :func:`as_stored` turns logical rows into it.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.errors import UnsupportedFeatureError
from ..base.features import (COLUMN_ID_KEY, DATA_SKIPPING_STATS_COLUMNS_PROPERTY,
                             column_mapping_mode)
from ..base.schema import field_metadata, physical_name, physical_name_in
from ..base.stats import format_stats_columns, parse_stats_columns

#: Where pyarrow keeps a Parquet field id in an Arrow field's metadata.
PARQUET_FIELD_ID_KEY = b"PARQUET:field_id"
MODES = ("none", "name", "id")


def mapping_mode(configuration: dict[str, str] | None, where: str) -> str:
    """The table's column mapping mode; an unknown one is refused (its files could be misread)."""
    mode = column_mapping_mode(configuration)
    if mode not in MODES:
        raise UnsupportedFeatureError(f"{where}: column mapping mode {mode!r} is not one of {list(MODES)}",
                                      feature="columnMapping")
    return mode


def stored_name(field: pa.Field, mode: str) -> str:
    """The name ``field`` has in data files and in ``partitionValues``."""
    return field.name if mode == "none" else physical_name(field)


def partition_keys(partition_columns: Iterable[str], schema_string: Any,
                   configuration: dict[str, str] | None) -> list[str]:
    """The ``partitionValues`` keys of a table's partition columns (physical names under mapping).

    Works on the raw parts of a ``metaData`` action, so log replay can use it before
    any schema is converted; an unparsable schema leaves the names as they are (the
    metadata's own reader reports it).
    """
    cols = list(partition_columns or ())
    if column_mapping_mode(configuration) == "none" or not cols:
        return cols
    try:
        fields = json.loads(schema_string).get("fields") if isinstance(schema_string, str) else None
    except ValueError:
        fields = None
    metadata = {f.get("name"): f.get("metadata") for f in fields or () if isinstance(f, dict)}
    return [physical_name_in(metadata.get(c), c) for c in cols]


def partition_keys_of_schema(partition_columns: Iterable[str], schema: pa.Schema,
                             configuration: dict[str, str] | None, where: str) -> list[str]:
    """:func:`partition_keys` from a converted schema, for what has no ``metaData`` action at hand
    (a :class:`~.reader.Readable`); an unknown column mapping mode is refused (:func:`mapping_mode`)."""
    cols = list(partition_columns or ())
    if mapping_mode(configuration, where) == "none" or not cols:
        return cols
    metadata = {f.name: field_metadata(f) for f in schema}
    return [physical_name_in(metadata.get(c), c) for c in cols]


def physical_schema(schema: dict[str, Any], configuration: dict[str, str] | None,
                    where: str = "the table", field_id_key: str | None = None) -> dict[str, Any]:
    """A Delta schema dict with every field (nested ones too) renamed to its physical name.

    For engines that read data files themselves (the Spark reader of pinned
    snapshots): they read with this schema, then cast to the logical one. Without
    column mapping it is ``schema`` itself; an unknown mode is refused.

    In mode ``id`` a file's columns are found by field id, not name. An engine that
    resolves ids from a read schema's field metadata passes the key it looks under
    (Spark: ``parquet.field.id``) as ``field_id_key``, and every field that has a
    ``delta.columnMapping.id`` gets it copied there; other modes ignore the key, so
    they keep resolving by physical name.
    """
    mode = mapping_mode(configuration, where)
    if mode == "none":
        return schema
    return _physical_type(schema, field_id_key if mode == "id" else None)


def _physical_field(f: dict[str, Any], id_key: str | None) -> dict[str, Any]:
    meta = f.get("metadata") or {}
    out = {**f, "name": physical_name_in(meta, f["name"]), "type": _physical_type(f.get("type"), id_key)}
    cid = meta.get(COLUMN_ID_KEY)
    if id_key is not None and isinstance(cid, int) and not isinstance(cid, bool):
        out["metadata"] = {**meta, id_key: cid}
    return out


def _physical_type(t: Any, id_key: str | None) -> Any:
    if not isinstance(t, dict):
        return t
    kind = t.get("type")
    if kind == "struct":
        return {**t, "fields": [_physical_field(f, id_key) for f in t.get("fields") or ()]}
    if kind == "array":
        return {**t, "elementType": _physical_type(t.get("elementType"), id_key)}
    if kind == "map":
        return {**t, "keyType": _physical_type(t.get("keyType"), id_key),
                "valueType": _physical_type(t.get("valueType"), id_key)}
    return t


def partition_keys_of(metadata_action: dict[str, Any]) -> list[str]:
    """:func:`partition_keys` of a parsed ``metaData`` action (a dict from the log)."""
    return partition_keys(metadata_action.get("partitionColumns"), metadata_action.get("schemaString"),
                          metadata_action.get("configuration"))


def _field_id(field: pa.Field) -> int | None:
    value = field_metadata(field).get(COLUMN_ID_KEY)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _parquet_id(field: pa.Field) -> int | None:
    raw = (field.metadata or {}).get(PARQUET_FIELD_ID_KEY)
    try:
        return int(raw) if raw is not None else None
    except ValueError:
        return None


def find_field(fields: list[pa.Field], logical: pa.Field, mode: str) -> int:
    """Index of ``logical``'s column among a file's ``fields`` (-1 when the file lacks it)."""
    if mode == "id":
        wanted = _field_id(logical)
        if wanted is not None:
            for i, f in enumerate(fields):
                if _parquet_id(f) == wanted:
                    return i
    name = stored_name(logical, mode)
    for i, f in enumerate(fields):
        if f.name == name:
            return i
    return -1


def file_column(data: pa.Table, logical: pa.Field, mode: str) -> pa.ChunkedArray:
    """The column of data file ``data`` holding ``logical``, in the logical type (nulls if absent)."""
    i = find_field(list(data.schema), logical, mode)
    if i < 0:
        return pa.chunked_array([pa.nulls(data.num_rows, logical.type)], logical.type)
    col = data.column(i)
    if col.type == logical.type and (mode == "none" or not pa.types.is_nested(col.type)):
        return col  # nested types compare by field names too: without mapping, equal means as stored
    return pa.chunked_array([as_logical(c, logical.type, mode) for c in col.chunks], logical.type)


def as_logical(arr: pa.Array, target: pa.DataType, mode: str) -> pa.Array:
    """``arr`` (as stored in a file) in the table's logical type, nested fields renamed and conformed."""
    t = arr.type
    valid = ak.is_valid(arr) if arr.null_count else None
    if pa.types.is_struct(target) and pa.types.is_struct(t):
        stored = [t.field(i) for i in range(t.num_fields)]
        children = []
        for f in target:
            i = find_field(stored, f, mode)
            children.append(as_logical(arr.field(i), f.type, mode) if i >= 0 else pa.nulls(len(arr), f.type))
        return ab.with_validity(pa.StructArray.from_arrays(children, fields=list(target)), valid)
    if pa.types.is_map(target) and pa.types.is_map(t):
        keys = as_logical(arr.keys, target.key_type, mode)
        items = as_logical(arr.items, target.item_type, mode)
        return ab.with_validity(pa.MapArray.from_arrays(arr.offsets, keys, items, type=target), valid)
    if pa.types.is_list(target) and (pa.types.is_list(t) or pa.types.is_large_list(t)):
        values = as_logical(arr.values, target.value_type, mode)
        return ab.with_validity(pa.ListArray.from_arrays(ak.cast(arr.offsets, pa.int32()), values, type=target),
                                valid)
    if t == target:
        return arr
    try:
        return ak.cast(arr, target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return arr  # left as stored; concatenation promotes or reports it



def stored_field(field: pa.Field, mode: str) -> pa.Field:
    """``field`` as a data file stores it: physical names (nested too) and Parquet field ids."""
    if mode == "none":
        return field
    cid = _field_id(field)
    meta = {PARQUET_FIELD_ID_KEY: str(cid).encode()} if cid is not None else None
    return pa.field(physical_name(field), _stored_type(field.type, mode), field.nullable, metadata=meta)


def _stored_type(t: pa.DataType, mode: str) -> pa.DataType:
    if pa.types.is_struct(t):
        return pa.struct([stored_field(t.field(i), mode) for i in range(t.num_fields)])
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_stored_type(t.key_type, mode)),
                       t.item_field.with_type(_stored_type(t.item_type, mode)))
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_stored_type(t.value_type, mode)))
    if pa.types.is_large_list(t):
        return pa.large_list(t.value_field.with_type(_stored_type(t.value_type, mode)))
    return t


def as_stored(rows: pa.Table, schema: pa.Schema) -> pa.Table:
    """Logical ``rows`` in the stored ``schema`` (:func:`stored_field` of each column, same order).

    Only names and field metadata differ, never the layout, so every column is a zero-copy view.
    """
    if rows.schema.names == schema.names and rows.schema == schema:
        return rows
    columns = [pa.chunked_array([c.view(f.type) for c in rows.column(i).chunks], f.type)
               for i, f in enumerate(schema)]
    return pa.Table.from_arrays(columns, schema=schema)


def stored_stats_configuration(fields: Iterable[pa.Field], configuration: dict[str, str],
                               mode: str) -> dict[str, str]:
    """``configuration`` for a statistics collector that sees stored columns: the logical column
    paths ``delta.dataSkippingStatsColumns`` names turned into physical ones (as Delta Spark keys
    statistics under column mapping). A path naming no column stays as written (it matches nothing
    either way)."""
    value = configuration.get(DATA_SKIPPING_STATS_COLUMNS_PROPERTY)
    if mode == "none" or not value or not value.strip():
        return configuration
    stored = [_stored_path(list(fields), path) for path in parse_stats_columns(value)]
    return {**configuration, DATA_SKIPPING_STATS_COLUMNS_PROPERTY: format_stats_columns(stored)}


def _stored_path(fields: list[pa.Field], path: tuple[str, ...]) -> tuple[str, ...]:
    out: list[str] = []
    for i, name in enumerate(path):
        match = next((f for f in fields if f.name.lower() == name.lower()), None)
        if match is None:
            return tuple(out) + path[i:]
        out.append(physical_name(match))
        t = match.type
        fields = [t.field(j) for j in range(t.num_fields)] if pa.types.is_struct(t) else []
    return tuple(out)
