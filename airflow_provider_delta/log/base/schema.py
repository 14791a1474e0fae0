"""Delta schema JSON <-> pyarrow, and partition values <-> typed pyarrow arrays.

Why this module exists: the Delta log stores a table's schema as Spark-style JSON
(``metaData.schemaString``) and every partition value as a string
(``add.partitionValues``). Everything above the log speaks pyarrow, so this is the
one place where the two vocabularies meet. Both directions are exact for the types
the Delta protocol defines, so that a schema read from a table and written back
does not change the table.

Conventions:

* A Delta field's ``metadata`` object (column mapping ids and physical names,
  generation expressions, collations, type-change history, ...) travels with the
  pyarrow field as JSON under the key ``b"delta.metadata"``; it is attached only
  when non-empty so plain pyarrow schemas compare equal to converted ones.
* Delta ``timestamp`` is an instant: ``timestamp[us, tz=UTC]``. ``timestamp_ntz``
  is a wall-clock time: ``timestamp[us]``.
* Array elements are named ``element`` and map entries ``key``/``value`` (the
  Parquet list/map convention Spark writes), nullability from ``containsNull`` /
  ``valueContainsNull``; map keys are never null.

Errors: malformed schema JSON is a :class:`CorruptLogError` (it came from the log),
a type this package cannot read (``variant``, ``interval``, ...) is an
:class:`UnsupportedFeatureError`, and a pyarrow type Delta cannot store is an
:class:`InvalidArgumentError` naming the column.
"""
from __future__ import annotations

import datetime as _dt
import decimal as _decimal
import json
import math
import re
from collections.abc import Iterable, Sequence
from typing import Any

import pyarrow as pa

from . import arrow_build as ab
from . import arrow_kernels as ak
from .actions import parse_schema_string
from .errors import CorruptLogError, InvalidArgumentError, UnsupportedFeatureError
from .features import FEATURE_OF_TYPE, PHYSICAL_NAME_KEY

__all__ = [
    "DELTA_METADATA_KEY",
    "PHYSICAL_NAME_KEY",
    "delta_type_to_arrow",
    "schema_to_arrow",
    "arrow_to_delta_type",
    "arrow_to_schema",
    "schema_string",
    "field_metadata",
    "physical_name",
    "physical_name_in",
    "partition_values_to_arrow",
    "serialize_partition_value",
]

DELTA_METADATA_KEY = b"delta.metadata"

# Delta's largest decimal precision is 38 (Spark's DecimalType.MAX_PRECISION); wider
# values are accepted only to keep pyarrow decimal256 columns round-trippable.
_MAX_DECIMAL128_PRECISION = 38
_MAX_DECIMAL256_PRECISION = 76

_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "integer": pa.int32(),
    "short": pa.int16(),
    "byte": pa.int8(),
    "float": pa.float32(),
    "double": pa.float64(),
    "boolean": pa.bool_(),
    "binary": pa.binary(),
    "date": pa.date32(),
    "timestamp": pa.timestamp("us", tz="UTC"),
    "timestamp_ntz": pa.timestamp("us"),
}

_DECIMAL_RE = re.compile(r"^decimal\(\s*(\d+)\s*,\s*(\d+)\s*\)$")


# --------------------------------------------------------------------------- Delta -> arrow


def delta_type_to_arrow(t: str | dict) -> pa.DataType:
    """Return the pyarrow type for one Delta type (a primitive name or a nested dict)."""
    if isinstance(t, str):
        return _primitive_to_arrow(t)
    if not isinstance(t, dict):
        raise CorruptLogError(f"Delta type must be a string or an object, got {type(t).__name__}: {t!r:.200}")
    kind = t.get("type")
    if kind == "struct":
        return pa.struct(_fields_to_arrow(t, "struct"))
    if kind == "array":
        _require(t, ("elementType", "containsNull"), "array")
        element = delta_type_to_arrow(t["elementType"])
        return pa.list_(pa.field("element", element, nullable=_bool(t, "containsNull", "array")))
    if kind == "map":
        _require(t, ("keyType", "valueType", "valueContainsNull"), "map")
        key = delta_type_to_arrow(t["keyType"])
        value = delta_type_to_arrow(t["valueType"])
        return pa.map_(pa.field("key", key, nullable=False),
                       pa.field("value", value, nullable=_bool(t, "valueContainsNull", "map")))
    if isinstance(kind, str):
        raise UnsupportedFeatureError(
            f"Delta type {kind!r} is not supported by this reader", feature=FEATURE_OF_TYPE.get(kind, kind))
    raise CorruptLogError(f"Delta type object has no valid 'type': {t!r:.200}")


def _primitive_to_arrow(name: str) -> pa.DataType:
    try:
        return _PRIMITIVES[name]
    except KeyError:
        pass
    if name == "decimal":  # Spark's DecimalType.USER_DEFAULT
        return pa.decimal128(10, 0)
    m = _DECIMAL_RE.match(name)
    if m:
        precision, scale = int(m.group(1)), int(m.group(2))
        if not 1 <= precision <= _MAX_DECIMAL256_PRECISION or scale > precision:
            raise CorruptLogError(
                f"invalid Delta type {name!r}: need 1 <= precision <= {_MAX_DECIMAL256_PRECISION} "
                "and scale <= precision")
        if precision > _MAX_DECIMAL128_PRECISION:
            return pa.decimal256(precision, scale)
        return pa.decimal128(precision, scale)
    raise UnsupportedFeatureError(f"Delta type {name!r} is not supported by this reader",
                                  feature=FEATURE_OF_TYPE.get(name, name))


def _require(obj: dict, keys: Sequence[str], what: str) -> None:
    missing = [k for k in keys if k not in obj]
    if missing:
        raise CorruptLogError(f"Delta {what} type is missing {', '.join(missing)}: {obj!r:.200}")


def _bool(obj: dict, key: str, what: str) -> bool:
    value = obj[key]
    if not isinstance(value, bool):
        raise CorruptLogError(f"Delta {what} field {key!r} must be true or false, got {value!r:.100}")
    return value


def _fields_to_arrow(struct: dict, what: str) -> list[pa.Field]:
    fields = struct.get("fields")
    if not isinstance(fields, list):
        raise CorruptLogError(f"Delta {what} needs a 'fields' list: {struct!r:.200}")
    return [_field_to_arrow(f) for f in fields]


def _field_to_arrow(field: Any) -> pa.Field:
    if not isinstance(field, dict):
        raise CorruptLogError(f"Delta struct field must be an object, got {field!r:.200}")
    _require(field, ("name", "type"), "struct field")
    name = field["name"]
    if not isinstance(name, str):
        raise CorruptLogError(f"Delta struct field name must be a string, got {name!r:.100}")
    # Spark always writes nullable; a missing one is read as the permissive default.
    nullable = _bool(field, "nullable", f"field {name!r}") if "nullable" in field else True
    meta = field.get("metadata") or {}
    if not isinstance(meta, dict):
        raise CorruptLogError(f"metadata of Delta field {name!r} must be an object, got {meta!r:.100}")
    arrow_meta = {DELTA_METADATA_KEY: json.dumps(meta, separators=(",", ":")).encode()} if meta else None
    return pa.field(name, delta_type_to_arrow(field["type"]), nullable=nullable, metadata=arrow_meta)


def schema_to_arrow(schema: str | dict) -> pa.Schema:
    """Parse a Delta ``schemaString`` (or its decoded dict) into a pyarrow schema."""
    if isinstance(schema, (str, bytes)):
        schema = parse_schema_string(schema)
    if not isinstance(schema, dict) or schema.get("type") != "struct":
        raise CorruptLogError(f"Delta schema must be a JSON object with type 'struct': {schema!r:.200}")
    return pa.schema(_fields_to_arrow(schema, "schema"))


# --------------------------------------------------------------------------- arrow -> Delta


def arrow_to_delta_type(t: pa.DataType) -> str | dict:
    """Return the Delta type (name or nested dict) that stores pyarrow type ``t``."""
    return _arrow_type(t, "<value>")


def _arrow_type(t: pa.DataType, path: str) -> str | dict:
    types = pa.types
    if types.is_dictionary(t):
        if types.is_string(t.value_type) or types.is_large_string(t.value_type):
            return "string"
        _unsupported(t, path, "only dictionaries of strings are stored (as string)")
    simple = _simple_arrow_type(t, path)
    if simple is not None:
        return simple
    if types.is_struct(t):
        return _struct([t.field(i) for i in range(t.num_fields)], path)
    if types.is_map(t):
        return {"type": "map",
                "keyType": _arrow_type(t.key_type, f"{path}.key"),
                "valueType": _arrow_type(t.item_type, f"{path}.value"),
                "valueContainsNull": t.item_field.nullable}
    if _is_list_like(t):
        return {"type": "array",
                "elementType": _arrow_type(t.value_type, f"{path}.element"),
                "containsNull": t.value_field.nullable}
    _unsupported(t, path, "Delta has no such type")
    raise AssertionError("unreachable")


def _simple_arrow_type(t: pa.DataType, path: str) -> str | None:
    """Primitive pyarrow types; None when ``t`` is not primitive."""
    types = pa.types
    if types.is_string(t) or types.is_large_string(t) or _is(t, "is_string_view"):
        return "string"
    if (types.is_binary(t) or types.is_large_binary(t) or types.is_fixed_size_binary(t)
            or _is(t, "is_binary_view")):
        return "binary"
    if types.is_boolean(t):
        return "boolean"
    if types.is_signed_integer(t):
        return {8: "byte", 16: "short", 32: "integer", 64: "long"}[t.bit_width]
    if types.is_unsigned_integer(t):
        if t.bit_width == 64:
            _unsupported(t, path, "uint64 values do not fit Delta's long; cast to int64 or decimal(20,0)")
        # widened to the next signed type that holds every value
        return {8: "short", 16: "integer", 32: "long"}[t.bit_width]
    if types.is_float16(t) or types.is_float32(t):
        return "float"
    if types.is_float64(t):
        return "double"
    if types.is_decimal(t):
        if t.precision > _MAX_DECIMAL256_PRECISION:
            _unsupported(t, path, "precision too large")
        return f"decimal({t.precision},{t.scale})"
    if types.is_date(t):
        return "date"
    if types.is_timestamp(t):
        return "timestamp" if t.tz is not None else "timestamp_ntz"
    return None


def _is(t: pa.DataType, predicate: str) -> bool:
    """Type predicates that older pyarrow versions lack count as False."""
    fn = getattr(pa.types, predicate, None)
    return bool(fn and fn(t))


def _is_list_like(t: pa.DataType) -> bool:
    return (pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t)
            or _is(t, "is_list_view") or _is(t, "is_large_list_view"))


def _unsupported(t: pa.DataType, path: str, why: str) -> None:
    raise InvalidArgumentError(f"column {path!r} has pyarrow type {t}, which a Delta table cannot store: {why}")


def _arrow_field(field: pa.Field, parent: str | None) -> dict:
    path = field.name if parent is None else f"{parent}.{field.name}"
    return {"name": field.name,
            "type": _arrow_type(field.type, path),
            "nullable": field.nullable,
            "metadata": _field_metadata(field, path)}


def _struct(fields: Sequence[pa.Field], parent: str | None) -> dict:
    # Delta (like Spark) resolves names case-insensitively, so "a" and "A" would clash.
    seen: dict[str, str] = {}
    for f in fields:
        clash = seen.get(f.name.lower())
        seen[f.name.lower()] = f.name
        if clash is not None:
            where = f"in {parent!r}" if parent else "at the top level"
            raise InvalidArgumentError(
                f"duplicate column names {clash!r} and {f.name!r} {where}: Delta column names are case-insensitive")
    return {"type": "struct", "fields": [_arrow_field(f, parent) for f in fields]}


def _field_metadata(field: pa.Field, path: str) -> dict:
    raw = (field.metadata or {}).get(DELTA_METADATA_KEY)
    if not raw:
        return {}
    try:
        meta = json.loads(raw)
    except ValueError as e:
        raise InvalidArgumentError(f"column {path!r}: field metadata {DELTA_METADATA_KEY!r} is not JSON: {e}") from None
    if not isinstance(meta, dict):
        raise InvalidArgumentError(f"column {path!r}: field metadata {DELTA_METADATA_KEY!r} must be a JSON object")
    return meta


def arrow_to_schema(schema: pa.Schema) -> dict:
    """Return the Delta struct dict for a pyarrow schema (what ``schemaString`` encodes)."""
    if not isinstance(schema, pa.Schema):
        raise InvalidArgumentError(f"expected a pyarrow.Schema, got {type(schema).__name__}")
    return _struct(list(schema), None)


def schema_string(schema: pa.Schema) -> str:
    """Compact JSON of :func:`arrow_to_schema`, as written into ``metaData.schemaString``."""
    return json.dumps(arrow_to_schema(schema), separators=(",", ":"))


def field_metadata(field: pa.Field) -> dict:
    """The Delta metadata of a field converted by :func:`schema_to_arrow` (``{}`` if none)."""
    return _field_metadata(field, field.name)


def physical_name(field: pa.Field) -> str:
    """Column-mapping physical name of ``field`` (its data-file column name), else its name."""
    return physical_name_in(field_metadata(field), field.name)


def physical_name_in(metadata: Any, name: str) -> str:
    """The physical name a column's Delta field ``metadata`` (a dict from the schema JSON, or None)
    gives it, else its ``name``: the rule for a field not converted to Arrow (:func:`physical_name`)."""
    value = metadata.get(PHYSICAL_NAME_KEY) if isinstance(metadata, dict) else None
    return value if isinstance(value, str) and value else name


# --------------------------------------------------------------------------- partition values

# A time followed by a UTC designator or numeric offset: "Z", "+01:00", "-0800", "+01".
_OFFSET_RE = r"[T ]\d\d:\d\d.*(Z|z|[+-]\d\d(:?\d\d)?)$"


def partition_values_to_arrow(values: Sequence[str | None] | pa.Array | pa.ChunkedArray,
                              t: pa.DataType) -> pa.Array | pa.ChunkedArray:
    """Parse serialized partition values (protocol "Partition Value Serialization") into type ``t``.

    Null and the empty string are null for every type (Delta Spark never writes an
    empty-string partition value; it writes null). Timestamps are
    ``yyyy-MM-dd HH:mm:ss[.SSSSSS]`` in UTC, or ISO-8601 with ``T`` and an offset such
    as ``Z`` (Delta Kernel's format); binary values are the UTF-8 bytes of the string.
    A value that does not parse is a :class:`CorruptLogError`.
    """
    _check_partition_type(t)
    arr = _as_string_array(values)
    arr = ak.if_else(ak.equal(arr, ab.scalar("", arr.type)), pa.nulls(1, arr.type)[0], arr)
    try:
        return _parse(arr, t)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
        bad = _first_unparsable(arr, t)
        what = f"partition value {bad!r}" if bad is not None else "a partition value"
        # arrow's message would show our normalized text (with an added 'Z'), not the log's
        why = ("expected 'yyyy-MM-dd HH:mm:ss[.SSSSSS]' or ISO-8601 with an offset"
               if pa.types.is_timestamp(t) else str(e))
        raise CorruptLogError(f"{what} cannot be read as {t}: {why}") from None


def _parse(arr: pa.Array | pa.ChunkedArray, t: pa.DataType) -> pa.Array | pa.ChunkedArray:
    if pa.types.is_timestamp(t):
        return _parse_timestamps(arr, t)
    if pa.types.is_boolean(t):
        arr = ak.utf8_lower(arr)  # Spark's cast accepts "TRUE"; arrow's needs lower case
    return ak.cast(arr, t)


def _first_unparsable(arr: pa.Array | pa.ChunkedArray, t: pa.DataType) -> str | None:
    """Error path only: find the value to name in the message, one distinct value at a time."""
    for value in ak.unique(arr).to_pylist():
        if value is None:
            continue
        try:
            _parse(ab.array([value], pa.string()), t)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            return value
    return None


def _as_string_array(values: Any) -> pa.Array | pa.ChunkedArray:
    if isinstance(values, (pa.Array, pa.ChunkedArray)):
        if pa.types.is_dictionary(values.type):
            values = ak.cast(values, values.type.value_type)
        if not (pa.types.is_string(values.type) or pa.types.is_large_string(values.type)
                or _is(values.type, "is_string_view") or pa.types.is_null(values.type)):
            raise InvalidArgumentError(f"partition values must be strings, got an array of {values.type}")
        return ak.cast(values, pa.string())
    if isinstance(values, (str, bytes)):
        raise InvalidArgumentError("partition values must be a sequence of strings, not one string")
    try:
        return ab.array(list(values), pa.string())
    except (pa.ArrowInvalid, pa.ArrowTypeError, TypeError) as e:
        raise InvalidArgumentError(f"partition values must be strings or None: {e}") from None


def _parse_timestamps(arr: pa.Array | pa.ChunkedArray, t: pa.TimestampType) -> pa.Array | pa.ChunkedArray:
    # Values without an offset are read as UTC (the project's decision, as in delta-rs;
    # Delta Spark reads them in the session time zone, which is UTC on most clusters).
    # Giving them a "Z" lets one cast handle both forms.
    has_offset = ak.match_substring_regex(arr, _OFFSET_RE)
    normalized = ak.if_else(has_offset, arr, ak.join_element_wise(arr, ab.scalar("Z"), separator=ab.scalar("")))
    instants = ak.cast(normalized, pa.timestamp("us", tz="UTC"))
    return ak.cast(ak.cast(instants, pa.timestamp("us", tz=t.tz)), t)


def _check_partition_type(t: pa.DataType) -> None:
    if not isinstance(t, pa.DataType) or _simple_arrow_type(t, "<partition>") is None:
        raise InvalidArgumentError(f"partition columns must have a primitive type, got {t}")


def serialize_partition_value(value: Any, t: pa.DataType) -> str | None:
    """Return the ``partitionValues`` string a writer records for ``value`` of type ``t``.

    ``None`` (and the empty string/bytes, which Delta cannot tell from null) gives None.
    Timestamps (instants) are written as ISO 8601 in UTC, ``yyyy-MM-ddTHH:mm:ss.SSSSSSZ``, as
    Delta Spark writes them (PROTOCOL "Partition Value Serialization" recommends it: without
    a zone each reader would apply its own session time zone); timestamp_ntz (wall-clock)
    as ``yyyy-MM-dd HH:mm:ss.SSSSSS``. Strings are parsed as partition values and
    re-serialized, so they are validated and canonical.
    """
    _check_partition_type(t)
    if isinstance(value, pa.Scalar):
        value = value.as_py()
    if value is None:
        return None
    types = pa.types
    if types.is_string(t) or types.is_large_string(t) or _is(t, "is_string_view"):
        if not isinstance(value, str):
            raise InvalidArgumentError(f"partition value {value!r:.100} is not a string")
        return value or None
    if types.is_binary(t) or types.is_large_binary(t) or types.is_fixed_size_binary(t) or _is(t, "is_binary_view"):
        return _serialize_binary(value)
    if isinstance(value, str):
        try:
            parsed = partition_values_to_arrow([value], t)[0].as_py()
        except CorruptLogError as e:  # the caller's value, not the log, is at fault here
            raise InvalidArgumentError(str(e)) from None
        return serialize_partition_value(parsed, t)
    if types.is_boolean(t):
        if not isinstance(value, bool):
            raise InvalidArgumentError(f"partition value {value!r:.100} is not a boolean")
        return "true" if value else "false"
    if types.is_integer(t):
        return _serialize_int(value, t)
    if types.is_floating(t):
        return _serialize_float(value, t)
    if types.is_decimal(t):
        return _serialize_decimal(value, t)
    if types.is_date(t):
        return _serialize_date(value)
    return _serialize_timestamp(value, t)


def _serialize_binary(value: Any) -> str | None:
    if isinstance(value, str):
        value = value.encode()
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise InvalidArgumentError(f"partition value {value!r:.100} is not bytes")
    try:
        # Spark casts binary to string as UTF-8; other bytes have no faithful form.
        return bytes(value).decode("utf-8") or None
    except UnicodeDecodeError:
        raise InvalidArgumentError(
            f"binary partition value {bytes(value)!r:.100} is not valid UTF-8 and cannot be stored as a "
            "Delta partition value") from None


def _serialize_int(value: Any, t: pa.DataType) -> str:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"partition value {value!r:.100} is not an integer")
    bits = t.bit_width
    lo, hi = (0, 2 ** bits - 1) if pa.types.is_unsigned_integer(t) else (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if not lo <= value <= hi:
        raise InvalidArgumentError(f"partition value {value} is out of range for {t}")
    return str(value)


def _serialize_float(value: Any, t: pa.DataType) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InvalidArgumentError(f"partition value {value!r:.100} is not a number")
    value = float(value)
    # Java's spellings, which Spark, delta-rs and pyarrow all parse.
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    if pa.types.is_float64(t):
        return repr(value)
    # pyarrow prints the shortest decimal that round-trips at the column's width
    return ak.cast(ab.scalar(value, t), pa.string()).as_py()


def _serialize_decimal(value: Any, t: pa.DataType) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float, _decimal.Decimal)):
        raise InvalidArgumentError(f"partition value {value!r:.100} is not a decimal")
    d = _decimal.Decimal(str(value)) if isinstance(value, float) else _decimal.Decimal(value)
    if not d.is_finite():
        raise InvalidArgumentError(f"partition value {value} is not a finite decimal")
    try:
        q = d.quantize(_decimal.Decimal(1).scaleb(-t.scale), context=_decimal.Context(prec=200))
    except _decimal.InvalidOperation:
        q = None
    integer_digits = 0 if q is None or q == 0 else max(q.adjusted() + 1, 0)
    if q is None or q != d or integer_digits > t.precision - t.scale:
        raise InvalidArgumentError(f"partition value {value} does not fit {t}")
    return format(abs(q) if q == 0 else q, "f")


def _serialize_date(value: Any) -> str:
    if isinstance(value, _dt.datetime):
        raise InvalidArgumentError(f"partition value {value!r} is a datetime; a date column needs a date")
    if not isinstance(value, _dt.date):
        raise InvalidArgumentError(f"partition value {value!r:.100} is not a date")
    return f"{value.year:04d}-{value.month:02d}-{value.day:02d}"


def _serialize_timestamp(value: Any, t: pa.TimestampType) -> str:
    if not isinstance(value, _dt.datetime):
        raise InvalidArgumentError(f"partition value {value!r:.100} is not a datetime")
    if t.tz is None:
        if value.tzinfo is not None:
            raise InvalidArgumentError(
                f"partition value {value!r} has a time zone but the column is timestamp_ntz (wall-clock)")
    elif value.tzinfo is not None:
        value = value.astimezone(_dt.timezone.utc)
    # naive datetimes for a zoned column are taken as UTC, like pyarrow does
    day = f"{value.year:04d}-{value.month:02d}-{value.day:02d}"
    clock = f"{value.hour:02d}:{value.minute:02d}:{value.second:02d}.{value.microsecond:06d}"
    if t.tz is None:
        return f"{day} {clock}"
    # An instant: ISO 8601 in UTC with its zone, as Delta Spark writes it (utcTimestampPartitionValues).
    # A value without a zone would be read in each reader's session time zone instead.
    return f"{day}T{clock}Z"


def validate_partition_columns(schema: pa.Schema, partition_by: Iterable[str]) -> tuple[str, ...]:
    """Partition columns must be distinct top-level primitive columns, and not all of them."""
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    cols = tuple(partition_by or ())
    seen: set[str] = set()
    for c in cols:
        if not isinstance(c, str):
            raise InvalidArgumentError(f"partition column names must be strings, got {c!r}")
        if c in seen:
            raise InvalidArgumentError(f"partition column {c!r} is listed twice")
        seen.add(c)
        idx = schema.get_field_index(c)
        if idx < 0:
            raise InvalidArgumentError(f"partition column {c!r} is not a column of the schema "
                                       f"({', '.join(schema.names)})")
        t = schema.field(idx).type
        if pa.types.is_nested(t) or pa.types.is_dictionary(t):
            raise InvalidArgumentError(f"partition column {c!r} has type {t}; partition columns must be "
                                       "of a primitive type")
    if cols and len(cols) == len(schema):
        raise InvalidArgumentError("cannot use all columns as partition columns: no data would remain "
                                   "in the files")
    return cols
