"""A column-mapped test table shared by the log reader's and the Spark reader's tests.

One nested schema (struct, array of struct, map to struct, a partition column) with
column mapping ids 1..9 and physical names ``col-<id>``, and its two rows written by
pyarrow under any column names, with or without Parquet field ids: a file whose names
are not the physical names but whose ids are right can only be read by field id.
"""
from __future__ import annotations

import json

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable


def mapped_field(name: str, typ, cid: int, phys: str | None = None) -> dict:
    """A Delta schema field with column mapping id ``cid`` and physical name ``phys`` (default ``col-<cid>``)."""
    return {"name": name, "type": typ, "nullable": True,
            "metadata": {"delta.columnMapping.id": cid, "delta.columnMapping.physicalName": phys or f"col-{cid}"}}


NESTED_SCHEMA = {"type": "struct", "fields": [
    mapped_field("id", "long", 1),
    mapped_field("point", {"type": "struct", "fields": [mapped_field("x", "integer", 3),
                                                        mapped_field("y", "integer", 4)]}, 2),
    mapped_field("tags", {"type": "array", "containsNull": True,
                          "elementType": {"type": "struct", "fields": [mapped_field("label", "string", 6)]}}, 5),
    mapped_field("attrs", {"type": "map", "keyType": "string", "valueContainsNull": True,
                           "valueType": {"type": "struct", "fields": [mapped_field("score", "double", 8)]}}, 7),
    mapped_field("part", "string", 9),
]}

#: the rows of :func:`nested_file` in partition ``part = p1``, as pyarrow gives them
NESTED_ROWS = [
    {"id": 1, "point": {"x": 10, "y": 20}, "tags": [{"label": "a"}, {"label": "b"}],
     "attrs": [("k", {"score": 0.5})], "part": "p1"},
    {"id": 2, "point": None, "tags": [], "attrs": None, "part": "p1"},
]


def nested_file(names: dict[int, str], with_ids: bool = True) -> pa.Table:
    """The data of NESTED_ROWS (no partition column), the column of id ``i`` named ``names[i]``;
    top-level columns in another order than the schema's, so position cannot stand in for ids."""
    def pf(cid: int, typ: pa.DataType) -> pa.Field:
        return pa.field(names[cid], typ, metadata={b"PARQUET:field_id": str(cid).encode()} if with_ids else None)
    point = pa.struct([pf(3, pa.int32()), pf(4, pa.int32())])
    tag = pa.struct([pf(6, pa.string())])
    score = pa.struct([pf(8, pa.float64())])
    schema = pa.schema([pf(2, point), pf(1, pa.int64()), pf(5, pa.list_(pa.field("element", tag))),
                        pf(7, pa.map_(pa.string(), pa.field("value", score)))])
    return pa.table([
        pa.array([{names[3]: 10, names[4]: 20}, None], point),
        pa.array([1, 2], pa.int64()),
        pa.array([[{names[6]: "a"}, {names[6]: "b"}], []], pa.list_(pa.field("element", tag))),
        pa.array([[("k", {names[8]: 0.5})], None], pa.map_(pa.string(), pa.field("value", score))),
    ], schema=schema)


# ----------------------------------------------------------------- a table to turn column mapping on
#: A nested Arrow schema without column mapping (struct, array of struct, map to struct, partition ``p``).
PLAIN_SCHEMA = pa.schema([
    ("id", pa.int64()),
    ("s", pa.struct([("a", pa.int32()), ("b", pa.string())])),
    ("l", pa.list_(pa.struct([("x", pa.int64())]))),
    ("m", pa.map_(pa.string(), pa.struct([("y", pa.float64())]))),
    ("p", pa.string()),
])
PLAIN_DATA = pa.table({
    "id": [1, 2], "s": [{"a": 1, "b": "u"}, {"a": 2, "b": "v"}], "l": [[{"x": 1}], []],
    "m": [[("k", {"y": 1.5})], []], "p": ["a", "b"],
}, schema=PLAIN_SCHEMA)


def field_mapping(schema_string: str) -> list[tuple[str, int | None, str | None]]:
    """(field path, column id, physical name) of every field of a Delta schema string, pre-order."""
    out: list[tuple[str, int | None, str | None]] = []

    def walk(t, prefix):
        if isinstance(t, dict) and t.get("type") == "struct":
            for f in t["fields"]:
                m = f.get("metadata") or {}
                out.append((prefix + f["name"], m.get("delta.columnMapping.id"),
                            m.get("delta.columnMapping.physicalName")))
                walk(f["type"], prefix + f["name"] + ".")
        elif isinstance(t, dict) and t.get("type") == "array":
            walk(t["elementType"], prefix + "element.")
        elif isinstance(t, dict) and t.get("type") == "map":
            walk(t["keyType"], prefix + "key.")
            walk(t["valueType"], prefix + "value.")

    walk(json.loads(schema_string), "")
    return out


def table_with_rows(uri: str, data: pa.Table, mapped: bool) -> DeltaTable:
    """A new table at ``uri`` holding ``data`` in one file, with column mapping (``name``) turned on after
    the write when ``mapped``: its physical names are then the column names, as the files hold them."""
    table = DeltaTable.create(uri, data.schema)
    table.write(data)
    if mapped:
        with table.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties({"delta.columnMapping.mode": "name"})
    return table
