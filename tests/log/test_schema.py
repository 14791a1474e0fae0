"""Delta schema JSON <-> pyarrow and partition value (de)serialization.

Checked against real tables from the corpus (schemaStrings written by Delta Spark,
DAT and delta-rs, and the Parquet files those writers produced), the protocol's own
schema example, and round-trip properties over generated types and values.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import re
from decimal import Decimal
from pathlib import Path
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airflow_provider_delta.log.base.errors import (
    CorruptLogError,
    DeltaError,
    InvalidArgumentError,
    UnsupportedFeatureError,
)
from airflow_provider_delta.log.base.schema import (
    DELTA_METADATA_KEY,
    arrow_to_delta_type,
    arrow_to_schema,
    delta_type_to_arrow,
    field_metadata,
    partition_values_to_arrow,
    physical_name,
    schema_string,
    schema_to_arrow,
    serialize_partition_value,
)

UTC = dt.timezone.utc


def _log_actions(table: Path, version: int = 0) -> list[dict]:
    path = table / "_delta_log" / f"{version:020d}.json"
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _metadata(table: Path) -> dict:
    return next(a["metaData"] for a in _log_actions(table) if "metaData" in a)


def _table_dir(corpus: Path, rel: str) -> Path:
    root = corpus / rel
    return root / "delta" if (root / "delta" / "_delta_log").is_dir() else root


def _data_files(table: Path) -> list[Path]:
    """Every data file any commit added (all written with the first schema in these tables)."""
    commits = sorted((table / "_delta_log").glob("*.json"))
    adds = [a["add"] for c in commits for a in _log_actions(table, int(c.stem)) if "add" in a]
    return [table / unquote(a["path"]) for a in adds]


def _parquet_schema(path: Path) -> pa.Schema:
    with path.open("rb") as f:  # paths with '%' and ' ' confuse pyarrow's path parsing
        return pq.ParquetFile(f).schema_arrow


# --------------------------------------------------------------------------- primitive types

PRIMITIVES = [
    ("string", pa.string()),
    ("long", pa.int64()),
    ("integer", pa.int32()),
    ("short", pa.int16()),
    ("byte", pa.int8()),
    ("float", pa.float32()),
    ("double", pa.float64()),
    ("boolean", pa.bool_()),
    ("binary", pa.binary()),
    ("date", pa.date32()),
    ("timestamp", pa.timestamp("us", tz="UTC")),
    ("timestamp_ntz", pa.timestamp("us")),
    ("decimal(10,2)", pa.decimal128(10, 2)),
    ("decimal(38,38)", pa.decimal128(38, 38)),
    ("decimal(1,0)", pa.decimal128(1, 0)),
    ("decimal(40,5)", pa.decimal256(40, 5)),
]


@pytest.mark.parametrize("name,arrow", PRIMITIVES)
def test_primitive_types_map_both_ways(name, arrow):
    assert delta_type_to_arrow(name) == arrow
    assert arrow_to_delta_type(arrow) == name


@pytest.mark.parametrize("spelling", ["decimal(10, 2)", "decimal( 10 ,2 )", "decimal(10,2)"])
def test_decimal_spellings_with_spaces(spelling):
    assert delta_type_to_arrow(spelling) == pa.decimal128(10, 2)


def test_bare_decimal_is_sparks_default():
    assert delta_type_to_arrow("decimal") == pa.decimal128(10, 0)


@pytest.mark.parametrize("arrow,expected", [
    (pa.large_string(), "string"),
    (pa.string_view(), "string"),
    (pa.large_binary(), "binary"),
    (pa.binary(4), "binary"),
    (pa.timestamp("s"), "timestamp_ntz"),
    (pa.timestamp("ms", tz="Europe/Paris"), "timestamp"),
    (pa.timestamp("ns", tz="+01:00"), "timestamp"),
    (pa.timestamp("ns"), "timestamp_ntz"),
    (pa.date64(), "date"),
    (pa.uint8(), "short"),
    (pa.uint16(), "integer"),
    (pa.uint32(), "long"),
    (pa.float16(), "float"),
    (pa.dictionary(pa.int32(), pa.string()), "string"),
    (pa.large_list(pa.int32()), {"type": "array", "elementType": "integer", "containsNull": True}),
    (pa.list_(pa.field("item", pa.string(), nullable=False), 3),
     {"type": "array", "elementType": "string", "containsNull": False}),
])
def test_other_arrow_types_are_mapped_to_the_nearest_delta_type(arrow, expected):
    assert arrow_to_delta_type(arrow) == expected


# --------------------------------------------------------------------------- nested types

SPEC_EXAMPLE = {  # the protocol's "Schema Serialization Format" example
    "type": "struct",
    "fields": [
        {"name": "a", "type": "integer", "nullable": False, "metadata": {}},
        {"name": "b", "type": {"type": "struct", "fields": [
            {"name": "d", "type": "integer", "nullable": False, "metadata": {}}]},
         "nullable": True, "metadata": {}},
        {"name": "c", "type": {"type": "array", "elementType": "integer", "containsNull": False},
         "nullable": True, "metadata": {}},
        {"name": "e", "type": {"type": "array", "elementType": {"type": "struct", "fields": [
            {"name": "d", "type": "integer", "nullable": False, "metadata": {}}]}, "containsNull": True},
         "nullable": True, "metadata": {}},
        {"name": "f", "type": {"type": "map", "keyType": "string", "valueType": "string",
                               "valueContainsNull": True},
         "nullable": True, "metadata": {}},
    ],
}


def test_protocol_example_schema_converts_with_nullability():
    schema = schema_to_arrow(json.dumps(SPEC_EXAMPLE, indent=2))
    expected = pa.schema([
        pa.field("a", pa.int32(), nullable=False),
        pa.field("b", pa.struct([pa.field("d", pa.int32(), nullable=False)])),
        pa.field("c", pa.list_(pa.field("element", pa.int32(), nullable=False))),
        pa.field("e", pa.list_(pa.field("element", pa.struct([pa.field("d", pa.int32(), nullable=False)])))),
        pa.field("f", pa.map_(pa.field("key", pa.string(), nullable=False), pa.field("value", pa.string()))),
    ])
    assert schema.equals(expected, check_metadata=True)
    assert arrow_to_schema(schema) == SPEC_EXAMPLE
    assert json.loads(schema_string(schema)) == SPEC_EXAMPLE


def test_nullability_of_array_elements_and_map_values_is_kept():
    non_null = {"type": "map", "keyType": "string",
                "valueType": {"type": "array", "elementType": "long", "containsNull": False},
                "valueContainsNull": False}
    t = delta_type_to_arrow(non_null)
    assert t.item_field.nullable is False
    assert t.item_type.value_field.nullable is False
    assert t.key_field.nullable is False
    assert arrow_to_delta_type(t) == non_null
    # and the nullable version is a different pyarrow type
    nullable = dict(non_null, valueContainsNull=True)
    assert delta_type_to_arrow(nullable) != t


def test_field_metadata_is_kept_recursively_and_only_when_present():
    meta_outer = {"delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-outer",
                  "comment": "ünïcode, \"quoted\"", "delta.typeChanges": [{"fromType": "byte", "toType": "long"}]}
    meta_inner = {"delta.columnMapping.id": 2, "delta.columnMapping.physicalName": "col-inner"}
    meta_elem = {"delta.generationExpression": "x + 1"}
    delta = {"type": "struct", "fields": [
        {"name": "s", "type": {"type": "struct", "fields": [
            {"name": "inner", "type": "long", "nullable": False, "metadata": meta_inner},
            {"name": "plain", "type": "string", "nullable": True, "metadata": {}},
            {"name": "arr", "type": {"type": "array", "containsNull": True, "elementType": {
                "type": "struct", "fields": [
                    {"name": "x", "type": "integer", "nullable": True, "metadata": meta_elem}]}},
             "nullable": True, "metadata": {}},
        ]}, "nullable": True, "metadata": meta_outer},
        {"name": "no_meta", "type": "date", "nullable": True, "metadata": {}},
    ]}
    schema = schema_to_arrow(delta)
    outer = schema.field("s")
    assert field_metadata(outer) == meta_outer
    assert json.loads(outer.metadata[DELTA_METADATA_KEY]) == meta_outer
    assert field_metadata(outer.type.field("inner")) == meta_inner
    assert outer.type.field("plain").metadata is None
    elem_struct = outer.type.field("arr").type.value_type
    assert field_metadata(elem_struct.field("x")) == meta_elem
    assert schema.field("no_meta").metadata is None
    # the key order inside a field object does not matter; the content does
    assert arrow_to_schema(schema) == delta
    again = schema_to_arrow(schema_string(schema))
    assert again.equals(schema, check_metadata=True)


def test_missing_metadata_and_nullable_are_read_as_defaults():
    schema = schema_to_arrow({"type": "struct", "fields": [{"name": "a", "type": "long"}]})
    assert schema.field("a").nullable is True
    assert schema.field("a").metadata is None
    assert arrow_to_schema(schema)["fields"][0] == {"name": "a", "type": "long", "nullable": True, "metadata": {}}


def test_schema_string_is_compact_and_in_spark_key_order():
    s = schema_string(pa.schema([pa.field("id", pa.int64(), nullable=False)]))
    assert s == '{"type":"struct","fields":[{"name":"id","type":"long","nullable":false,"metadata":{}}]}'


def test_physical_name_uses_column_mapping_metadata():
    mapped = pa.field("letter", pa.string(), metadata={
        DELTA_METADATA_KEY: json.dumps({"delta.columnMapping.physicalName": "col-1"}).encode()})
    assert physical_name(mapped) == "col-1"
    assert physical_name(pa.field("letter", pa.string())) == "letter"
    other = pa.field("x", pa.int32(), metadata={DELTA_METADATA_KEY: b'{"comment":"c"}', b"other": b"1"})
    assert physical_name(other) == "x"


# --------------------------------------------------------------------------- corpus tables

# tables whose data files were all written with the schema of version 0
DATA_FILE_TABLES = [
    "dat/all_primitive_types",
    "dat/nested_types",
    "delta-golden/data-reader-map",
    "delta-golden/decimal-various-scale-precision",
    "dat/timestamp_ntz",
    "dat/column_mapping",
    "delta-golden/data-reader-array-primitives",
    "delta-golden/data-reader-nested-struct",
    "delta-golden/data-reader-partition-values",
    "delta-golden/table-with-columnmapping-mode-id",
]
# plus tables with no data files or files of an older (narrower) type
CORPUS_TABLES = DATA_FILE_TABLES + ["delta-golden/collations-table", "delta-golden/type-widening"]


@pytest.mark.parametrize("rel", CORPUS_TABLES)
def test_corpus_schema_strings_round_trip_exactly(corpus, rel):
    schema_json = _metadata(_table_dir(corpus, rel))["schemaString"]
    schema = schema_to_arrow(schema_json)
    assert arrow_to_schema(schema) == json.loads(schema_json)
    assert json.loads(schema_string(schema)) == json.loads(schema_json)


@pytest.mark.parametrize("rel", DATA_FILE_TABLES)
def test_corpus_schema_matches_the_parquet_data_files(corpus, rel):
    """The types we derive from the log equal the types the writer put in its Parquet files."""
    table = _table_dir(corpus, rel)
    meta = _metadata(table)
    schema = schema_to_arrow(meta["schemaString"])
    partition_columns = set(meta["partitionColumns"])
    files = [f for f in _data_files(table) if f.exists()]
    assert files, f"no data files found for {rel}"
    data_columns = [f for f in schema if f.name not in partition_columns]
    for path in files:
        file_schema = _parquet_schema(path)
        assert file_schema.names == [physical_name(f) for f in data_columns]
        for field in data_columns:
            file_type = file_schema.field(physical_name(field)).type
            if pa.types.is_timestamp(file_type) and file_type.tz is None and field.type.tz is not None:
                # legacy INT96 / isAdjustedToUTC=false files: Delta timestamps are UTC regardless
                file_type = pa.timestamp(file_type.unit, tz="UTC")
            if pa.types.is_timestamp(file_type):
                assert file_type.unit in ("us", "ns", "ms")
                file_type = pa.timestamp("us", tz=file_type.tz)
            assert _shape(file_type) == _shape(_physical_type(field.type)), field.name


def _physical_type(t: pa.DataType) -> pa.DataType:
    """``t`` with nested struct fields renamed to their column-mapping physical names."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(physical_name(f), _physical_type(f.type), f.nullable)
                          for f in (t.field(i) for i in range(t.num_fields))])
    if pa.types.is_list(t):
        return pa.list_(t.value_field.with_type(_physical_type(t.value_type)))
    if pa.types.is_map(t):
        return pa.map_(t.key_field.with_type(_physical_type(t.key_type)),
                       t.item_field.with_type(_physical_type(t.item_type)))
    return t


def _shape(t: pa.DataType) -> str:
    """Delta type without child nullability (Spark writes Parquet children as nullable)."""
    d = arrow_to_delta_type(t)

    def walk(x):
        if isinstance(x, dict):
            return {k: walk(v) for k, v in x.items()
                    if k not in ("containsNull", "valueContainsNull", "nullable", "metadata")}
        if isinstance(x, list):
            return [walk(v) for v in x]
        return x
    return json.dumps(walk(d), sort_keys=True)


def test_corpus_exact_pyarrow_types(corpus):
    prim = schema_to_arrow(_metadata(_table_dir(corpus, "dat/all_primitive_types"))["schemaString"])
    assert prim.field("timestamp").type == pa.timestamp("us", tz="UTC")
    assert prim.field("decimal").type == pa.decimal128(5, 3)
    assert prim.field("date32").type == pa.date32()
    nested = schema_to_arrow(_metadata(_table_dir(corpus, "dat/nested_types"))["schemaString"])
    assert nested.field("array").type == pa.list_(pa.field("element", pa.int16()))
    assert nested.field("map").type == pa.map_(pa.string(), pa.int32())
    assert nested.field("struct").type == pa.struct([("float64", pa.float64()), ("bool", pa.bool_())])
    ntz = schema_to_arrow(_metadata(_table_dir(corpus, "dat/timestamp_ntz"))["schemaString"])
    assert ntz.field("timestampNTZ").type == pa.timestamp("us")
    mapped = schema_to_arrow(_metadata(_table_dir(corpus, "dat/column_mapping"))["schemaString"])
    assert [physical_name(f) for f in mapped] == [
        "col-4ef4d1f5-5d3c-4aad-b4db-405ac3f186e6",
        "col-12668372-ff50-41ae-9571-41f0cb9ad88f",
        "col-a340198d-9caf-4b16-bbf1-d1bece16131c"]
    assert field_metadata(mapped.field("int"))["delta.columnMapping.id"] == 2


def test_corpus_variant_table_is_unsupported_naming_the_type(corpus):
    meta = _metadata(corpus / "delta-golden" / "spark-variant-checkpoint")
    with pytest.raises(UnsupportedFeatureError, match="variant") as info:
        schema_to_arrow(meta["schemaString"])
    assert info.value.feature == "variantType"


# --------------------------------------------------------------------------- schema errors


@pytest.mark.parametrize("bad,error,match", [
    ("{not json", CorruptLogError, "not valid JSON"),
    ("[]", CorruptLogError, "struct"),
    ('{"type":"array","elementType":"long","containsNull":true}', CorruptLogError, "struct"),
    ('{"type":"struct"}', CorruptLogError, "fields"),
    ('{"type":"struct","fields":[{"name":"a"}]}', CorruptLogError, "type"),
    ('{"type":"struct","fields":[{"type":"long"}]}', CorruptLogError, "name"),
    ('{"type":"struct","fields":[{"name":1,"type":"long"}]}', CorruptLogError, "name"),
    ('{"type":"struct","fields":["a"]}', CorruptLogError, "object"),
    ('{"type":"struct","fields":[{"name":"a","type":"long","nullable":"yes"}]}', CorruptLogError, "nullable"),
    ('{"type":"struct","fields":[{"name":"a","type":"long","metadata":[1]}]}', CorruptLogError, "metadata"),
    ('{"type":"struct","fields":[{"name":"a","type":{"type":"array","elementType":"long"}}]}',
     CorruptLogError, "containsNull"),
    ('{"type":"struct","fields":[{"name":"a","type":{"type":"map","keyType":"long"}}]}',
     CorruptLogError, "valueType"),
    ('{"type":"struct","fields":[{"name":"a","type":{"fields":[]}}]}', CorruptLogError, "type"),
    ('{"type":"struct","fields":[{"name":"a","type":7}]}', CorruptLogError, "string or an object"),
    ('{"type":"struct","fields":[{"name":"a","type":"decimal(5,6)"}]}', CorruptLogError, "scale"),
    ('{"type":"struct","fields":[{"name":"a","type":"decimal(0,0)"}]}', CorruptLogError, "precision"),
    ('{"type":"struct","fields":[{"name":"a","type":"variant"}]}', UnsupportedFeatureError, "variant"),
    ('{"type":"struct","fields":[{"name":"a","type":"interval"}]}', UnsupportedFeatureError, "interval"),
    ('{"type":"struct","fields":[{"name":"a","type":"Long"}]}', UnsupportedFeatureError, "Long"),
    ('{"type":"struct","fields":[{"name":"a","type":{"type":"udt","class":"x"}}]}',
     UnsupportedFeatureError, "udt"),
])
def test_bad_schema_strings_raise_typed_errors(bad, error, match):
    with pytest.raises(error, match=match):
        schema_to_arrow(bad)


@pytest.mark.parametrize("arrow,column", [
    (pa.schema([("d", pa.duration("s"))]), "d"),
    (pa.schema([("u", pa.uint64())]), "u"),
    (pa.schema([("n", pa.null())]), "n"),
    (pa.schema([("t", pa.time64("us"))]), "t"),
    (pa.schema([("di", pa.dictionary(pa.int8(), pa.int64()))]), "di"),
    (pa.schema([("s", pa.struct([("inner", pa.month_day_nano_interval())]))]), "s.inner"),
    (pa.schema([("l", pa.list_(pa.duration("ms")))]), "l.element"),
    (pa.schema([("m", pa.map_(pa.string(), pa.uint64()))]), "m.value"),
])
def test_unstorable_arrow_types_name_the_column(arrow, column):
    with pytest.raises(InvalidArgumentError) as info:
        arrow_to_schema(arrow)
    assert repr(column) in str(info.value)


def test_duplicate_column_names_differing_only_in_case_are_rejected():
    with pytest.raises(InvalidArgumentError, match="duplicate"):
        arrow_to_schema(pa.schema([("Id", pa.int64()), ("id", pa.int64())]))
    with pytest.raises(InvalidArgumentError, match="duplicate"):
        schema_string(pa.schema([("s", pa.struct([("a", pa.int8()), ("a", pa.int8())]))]))


def test_bad_delta_metadata_on_an_arrow_field_is_rejected():
    bad = pa.schema([pa.field("a", pa.int8(), metadata={DELTA_METADATA_KEY: b"{oops"})])
    with pytest.raises(InvalidArgumentError, match="'a'"):
        arrow_to_schema(bad)
    not_object = pa.schema([pa.field("a", pa.int8(), metadata={DELTA_METADATA_KEY: b"[1]"})])
    with pytest.raises(InvalidArgumentError, match="JSON object"):
        arrow_to_schema(not_object)


def test_all_errors_derive_from_delta_error():
    for exc in (CorruptLogError, UnsupportedFeatureError, InvalidArgumentError):
        assert issubclass(exc, DeltaError)
    with pytest.raises(InvalidArgumentError):
        arrow_to_schema("not a schema")


# --------------------------------------------------------------------------- round-trip property

_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
_metadata_values = st.dictionaries(
    st.sampled_from(["comment", "delta.columnMapping.id", "delta.columnMapping.physicalName", "x.y"]),
    st.one_of(st.integers(-5, 10**6), st.text(max_size=10), st.booleans(),
              st.lists(st.integers(0, 9), max_size=3)),
    max_size=3)
_primitive_names = st.sampled_from([n for n, _ in PRIMITIVES[:12]]) | st.builds(
    lambda p, s: f"decimal({p},{min(s, p)})", st.integers(1, 76), st.integers(0, 76))


def _struct_of(children):
    return st.lists(st.tuples(_names, children, st.booleans(), _metadata_values), min_size=1, max_size=4,
                    unique_by=lambda f: f[0].lower()).map(
        lambda fs: {"type": "struct", "fields": [
            {"name": n, "type": t, "nullable": nl, "metadata": m} for n, t, nl, m in fs]})


_delta_types = st.recursive(
    _primitive_names,
    lambda children: st.one_of(
        _struct_of(children),
        st.builds(lambda e, c: {"type": "array", "elementType": e, "containsNull": c}, children, st.booleans()),
        st.builds(lambda k, v, c: {"type": "map", "keyType": k, "valueType": v, "valueContainsNull": c},
                  children, children, st.booleans())),
    max_leaves=10)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_struct_of(_delta_types))
def test_round_trip_property_delta_to_arrow_and_back(schema):
    arrow = schema_to_arrow(json.dumps(schema))
    assert arrow_to_schema(arrow) == schema
    assert schema_to_arrow(schema_string(arrow)).equals(arrow, check_metadata=True)


# --------------------------------------------------------------------------- partition values


@pytest.mark.parametrize("t,raw,expected", [
    (pa.int32(), ["0", "-2147483648", "2147483647", None, ""], [0, -2**31, 2**31 - 1, None, None]),
    (pa.int64(), ["9223372036854775807", "-1"], [2**63 - 1, -1]),
    (pa.int8(), ["-128", "127"], [-128, 127]),
    (pa.int16(), ["-32768"], [-32768]),
    (pa.bool_(), ["true", "false", "TRUE", None, ""], [True, False, True, None, None]),
    (pa.float64(), ["0.0", "1.5", "1.0E10", "-2.5e-3", "NaN", "Infinity", "-Infinity"],
     [0.0, 1.5, 1e10, -0.0025, math.nan, math.inf, -math.inf]),
    (pa.float32(), ["0.1", "1.0"], [pa.scalar(0.1, pa.float32()).as_py(), 1.0]),
    (pa.date32(), ["2021-09-08", "0001-01-01", "9999-12-31", ""],
     [dt.date(2021, 9, 8), dt.date(1, 1, 1), dt.date(9999, 12, 31), None]),
    (pa.decimal128(12, 5), ["-2342342.23423", "0.00004", "234.00000", "1", "1E-5"],
     [Decimal("-2342342.23423"), Decimal("0.00004"), Decimal("234.00000"), Decimal("1.00000"), Decimal("0.00001")]),
    (pa.decimal256(40, 2), ["12345678901234567890123456789012345678.01"],
     [Decimal("12345678901234567890123456789012345678.01")]),
    (pa.string(), ["A/A", "B B", "null", "ü=%2F", "", None], ["A/A", "B B", "null", "ü=%2F", None, None]),
    (pa.binary(), ["\u0001\u0002\u0003", "héllo", ""], [b"\x01\x02\x03", "héllo".encode(), None]),
    (pa.timestamp("us", tz="UTC"),
     ["2021-09-08 11:11:11", "2021-09-08 11:11:11.123456", "2024-01-01T10:00:00.000000Z",
      "2024-01-01T12:00:00+02:00", "0001-01-01 00:00:00", None, ""],
     [dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC), dt.datetime(2021, 9, 8, 11, 11, 11, 123456, tzinfo=UTC),
      dt.datetime(2024, 1, 1, 10, tzinfo=UTC), dt.datetime(2024, 1, 1, 10, tzinfo=UTC),
      dt.datetime(1, 1, 1, tzinfo=UTC), None, None]),
    (pa.timestamp("us"), ["2013-07-05 17:01:00.123456", "2021-11-18 02:30:00"],
     [dt.datetime(2013, 7, 5, 17, 1, 0, 123456), dt.datetime(2021, 11, 18, 2, 30)]),
])
def test_partition_values_parse_per_protocol(t, raw, expected):
    got = partition_values_to_arrow(raw, t)
    assert got.type == t
    values = got.to_pylist()
    assert len(values) == len(expected)
    for g, e in zip(values, expected):
        if isinstance(e, float) and math.isnan(e):
            assert math.isnan(g)
        else:
            assert g == e and type(g) is type(e)


def test_partition_values_accept_arrow_arrays_of_any_string_kind():
    expected = [1, None, 3]
    for arr in (pa.array(["1", None, "3"]), pa.array(["1", None, "3"], pa.large_string()),
                pa.array(["1", "", "3"], pa.string_view()),
                pa.array(["1", None, "3"]).dictionary_encode(),
                pa.chunked_array([["1"], [None, "3"]])):
        assert partition_values_to_arrow(arr, pa.int64()).to_pylist() == expected
    assert partition_values_to_arrow(pa.nulls(2), pa.date32()).to_pylist() == [None, None]
    assert partition_values_to_arrow([], pa.string()).to_pylist() == []


def test_other_arrow_target_types():
    got = partition_values_to_arrow(["2024-01-01 00:00:00.5"], pa.timestamp("ms", tz="UTC"))
    assert got.type == pa.timestamp("ms", tz="UTC")
    assert got[0].as_py() == dt.datetime(2024, 1, 1, 0, 0, 0, 500000, tzinfo=UTC)
    assert partition_values_to_arrow(["2024-01-01"], pa.date64()).to_pylist() == [dt.date(2024, 1, 1)]
    assert partition_values_to_arrow(["x"], pa.large_string()).type == pa.large_string()


@pytest.mark.parametrize("t,raw", [
    (pa.int32(), "abc"),
    (pa.int8(), "300"),
    (pa.int32(), "1.5"),
    (pa.bool_(), "yes"),
    (pa.date32(), "2021-13-01"),
    (pa.date32(), "08/09/2021"),
    (pa.timestamp("us", tz="UTC"), "yesterday"),
    (pa.timestamp("us"), "2021-09-08 25:00:00"),
    (pa.decimal128(5, 0), "1.5"),
    (pa.decimal128(3, 0), "12345"),
    (pa.float64(), "one"),
])
def test_unparsable_partition_values_are_corrupt_log_errors(t, raw):
    good = {pa.bool_(): "true", pa.date32(): "2021-09-08"}.get(t, "1")
    if pa.types.is_timestamp(t):
        good = "2021-09-08 11:11:11"
    with pytest.raises(CorruptLogError, match=re.escape(f"{raw!r} cannot be read as {t}")):
        partition_values_to_arrow([good, raw, None, good], t)


def test_partition_value_argument_errors():
    with pytest.raises(InvalidArgumentError, match="primitive"):
        partition_values_to_arrow(["1"], pa.list_(pa.int32()))
    with pytest.raises(InvalidArgumentError, match="primitive"):
        partition_values_to_arrow(["1"], pa.duration("s"))
    with pytest.raises(InvalidArgumentError, match="strings"):
        partition_values_to_arrow(pa.array([1, 2]), pa.int64())
    with pytest.raises(InvalidArgumentError, match="strings"):
        partition_values_to_arrow([1, 2], pa.int64())
    with pytest.raises(InvalidArgumentError, match="one string"):
        partition_values_to_arrow("123", pa.int64())
    with pytest.raises(InvalidArgumentError, match="primitive"):
        serialize_partition_value({"a": 1}, pa.struct([("a", pa.int8())]))


@pytest.mark.parametrize("value,t,expected", [
    (None, pa.int32(), None),
    (5, pa.int32(), "5"),
    (-128, pa.int8(), "-128"),
    (True, pa.bool_(), "true"),
    (False, pa.bool_(), "false"),
    (1.5, pa.float64(), "1.5"),
    (math.nan, pa.float64(), "NaN"),
    (-math.inf, pa.float32(), "-Infinity"),
    (0.1, pa.float32(), "0.1"),
    (Decimal("1.5"), pa.decimal128(5, 2), "1.50"),
    (Decimal("-0.00"), pa.decimal128(5, 2), "0.00"),
    (12, pa.decimal128(4, 1), "12.0"),
    (Decimal("1E-5"), pa.decimal128(12, 5), "0.00001"),
    (dt.date(2021, 9, 8), pa.date32(), "2021-09-08"),
    (dt.date(5, 1, 2), pa.date32(), "0005-01-02"),
    (dt.datetime(2021, 9, 8, 11, 11, 11), pa.timestamp("us", tz="UTC"), "2021-09-08T11:11:11.000000Z"),
    (dt.datetime(2021, 9, 8, 13, 11, 11, 5, tzinfo=dt.timezone(dt.timedelta(hours=2))),
     pa.timestamp("us", tz="UTC"), "2021-09-08T11:11:11.000005Z"),
    (dt.datetime(2013, 7, 5, 17, 1, 0, 123456), pa.timestamp("us"), "2013-07-05 17:01:00.123456"),
    ("A/A", pa.string(), "A/A"),
    ("", pa.string(), None),
    (b"\x01\x02\x03", pa.binary(), "\u0001\u0002\u0003"),
    (b"", pa.binary(), None),
    ("2024-01-01T10:00:00Z", pa.timestamp("us", tz="UTC"), "2024-01-01T10:00:00.000000Z"),
    ("2024-01-01 10:00:00", pa.timestamp("us", tz="UTC"), "2024-01-01T10:00:00.000000Z"),   # old form: UTC
    (dt.datetime(1, 1, 1, 0, 0, 0, 1), pa.timestamp("us", tz="UTC"), "0001-01-01T00:00:00.000001Z"),
    ("007", pa.int32(), "7"),
    (pa.scalar(dt.date(2020, 2, 29)), pa.date32(), "2020-02-29"),
])
def test_serialize_partition_value(value, t, expected):
    assert serialize_partition_value(value, t) == expected


@pytest.mark.parametrize("value,t", [
    (300, pa.int8()),
    (2**63, pa.int64()),
    (1.5, pa.int32()),
    (True, pa.int32()),
    (1, pa.bool_()),
    ("x", pa.float64()),
    (Decimal("1.555"), pa.decimal128(5, 2)),
    (Decimal("1234"), pa.decimal128(5, 2)),
    (Decimal("NaN"), pa.decimal128(5, 2)),
    (dt.datetime(2020, 1, 1), pa.date32()),
    (dt.date(2020, 1, 1), pa.timestamp("us")),
    (dt.datetime(2020, 1, 1, tzinfo=UTC), pa.timestamp("us")),
    (b"\xff\xfe", pa.binary()),
    (5, pa.string()),
    (5, pa.binary()),
])
def test_serialize_rejects_values_that_do_not_fit(value, t):
    with pytest.raises(InvalidArgumentError):
        serialize_partition_value(value, t)


def test_serialize_names_a_string_input_that_does_not_parse():
    with pytest.raises(InvalidArgumentError, match="'not-a-date'"):
        serialize_partition_value("not-a-date", pa.date32())


_PARTITION_CASES = [
    (pa.int8(), st.integers(-128, 127)),
    (pa.int16(), st.integers(-2**15, 2**15 - 1)),
    (pa.int32(), st.integers(-2**31, 2**31 - 1)),
    (pa.int64(), st.integers(-2**63, 2**63 - 1)),
    (pa.float32(), st.floats(width=32)),
    (pa.float64(), st.floats()),
    (pa.bool_(), st.booleans()),
    (pa.string(), st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)))),
    (pa.binary(), st.text(st.characters(codec="utf-8", exclude_categories=("Cs",))).map(str.encode)),
    (pa.date32(), st.dates()),
    (pa.timestamp("us", tz="UTC"), st.datetimes(timezones=st.just(UTC))),
    (pa.timestamp("us"), st.datetimes()),
    (pa.decimal128(10, 3), st.decimals(min_value=-(10**7) + 1, max_value=10**7 - 1, places=3,
                                       allow_nan=False, allow_infinity=False)),
    (pa.decimal256(50, 10), st.decimals(min_value=-(10**40) + 1, max_value=10**40 - 1, places=10,
                                        allow_nan=False, allow_infinity=False)),
]


@pytest.mark.parametrize("t,values", _PARTITION_CASES, ids=[str(t) for t, _ in _PARTITION_CASES])
@settings(max_examples=60, deadline=None)
@given(data=st.data())
def test_partition_value_round_trip_property(t, values, data):
    batch = data.draw(st.lists(st.one_of(st.none(), values), max_size=6))
    serialized = [serialize_partition_value(v, t) for v in batch]
    assert all(s is None or (isinstance(s, str) and s) for s in serialized)
    parsed = partition_values_to_arrow(serialized, t).to_pylist()
    for original, back in zip(batch, parsed, strict=True):
        if original is None or original in ("", b""):
            assert back is None  # the protocol cannot tell an empty value from null
        elif isinstance(original, float) and math.isnan(original):
            assert math.isnan(back)
        else:
            assert back == original


def test_corpus_partition_values_parse_with_the_schema_types(corpus):
    table = corpus / "delta-golden" / "data-reader-partition-values"
    meta = _metadata(table)
    schema = schema_to_arrow(meta["schemaString"])
    adds = [a["add"] for a in _log_actions(table) if "add" in a]
    parsed = {c: partition_values_to_arrow([a["partitionValues"][c] for a in adds], schema.field(c).type)
              for c in meta["partitionColumns"]}
    rows = sorted(zip(*(parsed[c].to_pylist() for c in meta["partitionColumns"])),
                  key=lambda r: (r[0] is None, r[0]))
    as_dicts = [dict(zip(meta["partitionColumns"], r)) for r in rows]
    assert as_dicts[0]["as_int"] == 0 and as_dicts[1]["as_int"] == 1
    assert as_dicts[1]["as_boolean"] is False and as_dicts[0]["as_boolean"] is True
    assert as_dicts[1]["as_float"] == 1.0 and as_dicts[1]["as_double"] == 1.0
    assert as_dicts[0]["as_date"] == dt.date(2021, 9, 8)
    assert as_dicts[0]["as_timestamp"] == dt.datetime(2021, 9, 8, 11, 11, 11, tzinfo=UTC)
    assert as_dicts[1]["as_big_decimal"] == Decimal("1")
    assert as_dicts[0]["as_string_lit_null"] == "null"  # the literal text, not a null
    assert all(v is None for v in as_dicts[2].values())
    # what we would write reads back to the same values
    for c in meta["partitionColumns"]:
        t = schema.field(c).type
        again = [serialize_partition_value(v, t) for v in parsed[c].to_pylist()]
        assert partition_values_to_arrow(again, t).equals(parsed[c])


def test_corpus_iso8601_timestamp_partitions_match_the_rows(corpus):
    """Delta Kernel writes 'yyyy-MM-ddTHH:mm:ss.SSSSSSZ'; each file's 'str' column holds the same instant."""
    table = corpus / "delta-golden" / "kernel-timestamp-partition-col-ISO8601"
    meta = _metadata(table)
    schema = schema_to_arrow(meta["schemaString"])
    adds = [a["add"] for a in _log_actions(table) if "add" in a]
    assert len(adds) == 2
    parsed = partition_values_to_arrow([a["partitionValues"]["ts"] for a in adds], schema.field("ts").type)
    for add, ts in zip(adds, parsed.to_pylist()):
        with (table / unquote(add["path"])).open("rb") as f:
            rows = pq.read_table(f).column("str").to_pylist()
        assert rows == [ts.strftime("%Y-%m-%d %H:%M:%S")]
        assert ts.tzinfo is not None and ts.utcoffset() == dt.timedelta(0)


def test_corpus_delta_rs_special_characters_and_decimals(corpus):
    special = corpus / "delta-rs" / "delta-0.8.0-special-partition"
    values = [a["add"]["partitionValues"]["x"] for a in _log_actions(special) if "add" in a]
    assert sorted(partition_values_to_arrow(values, pa.string()).to_pylist()) == ["A/A", "B B"]
    decimals = corpus / "delta-kernel-rs" / "basic-decimal-table"
    meta = _metadata(decimals)
    t = schema_to_arrow(meta["schemaString"]).field("part").type
    raw = [a["add"]["partitionValues"]["part"] for a in _log_actions(decimals) if "add" in a]
    parsed = partition_values_to_arrow(raw, t)
    assert [serialize_partition_value(v, t) for v in parsed.to_pylist()] == raw
