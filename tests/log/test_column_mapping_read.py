"""Column mapping on read: physical names and field ids, nested fields, partitions, renames,
drops and time travel; logical names in filters and ``columns``.

Hand-written tables (parquet files written with physical names and Parquet field ids,
as Delta Spark writes them) pin each rule; the corpus tables written by Delta Spark,
Databricks and delta-kernel-rs are compared with deltalake's kernel-based reader at
every version.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import (AddFile, DeltaTable, InvalidArgumentError, Metadata, Protocol,
                                        UnsupportedFeatureError, VersionNotFoundError, physical_schema)
from column_mapping_files import NESTED_ROWS, NESTED_SCHEMA, mapped_field, nested_file
from corpus_expected import sorted_rows


_f = mapped_field


def _schema(*fields: dict) -> str:
    return json.dumps({"type": "struct", "fields": list(fields)})


def _commit(root: Path, version: int, actions: list[dict]) -> None:
    (root / "_delta_log").mkdir(parents=True, exist_ok=True)
    (root / "_delta_log" / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _meta(schema: str, mode: str, partition_columns: list[str] = ()) -> dict:
    return {"metaData": {"id": "cm", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                         "partitionColumns": list(partition_columns),
                         "configuration": {"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "9"},
                         "createdTime": 0}}


_PROTOCOL = {"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}}


def _add(root: Path, name: str, table: pa.Table, partition_values: dict | None = None) -> dict:
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(table, root / name)
    return {"add": {"path": name, "partitionValues": partition_values or {}, "size": (root / name).stat().st_size,
                    "modificationTime": 0, "dataChange": True}}


# ---------------------------------------------------------------- nested fields, both modes

_NESTED = json.dumps(NESTED_SCHEMA)
_nested_file = nested_file
_EXPECTED_NESTED = NESTED_ROWS


@pytest.mark.parametrize("mode", ["name", "id"])
def test_nested_fields_and_partition_under_mapping(tmp_path, mode):
    root = tmp_path / "t"
    physical = {i: f"col-{i}" for i in range(1, 10)}
    add = _add(root, "a/f0.parquet", _nested_file(physical, with_ids=True), {"col-9": "p1"})
    _commit(root, 0, [_PROTOCOL, _meta(_NESTED, mode, ["part"]), add])
    snap = DeltaTable(str(root)).snapshot()
    assert snap.files().column("partition_values").to_pylist() == [[("col-9", "p1")]]
    rows = snap.to_pyarrow()
    assert rows.column_names == ["id", "point", "tags", "attrs", "part"]
    assert rows.to_pylist() == _EXPECTED_NESTED
    assert snap.to_pyarrow(columns=["part", "id"], filter=[("part", "=", "p1"), ("id", ">", 1)]).to_pylist() == \
        [{"part": "p1", "id": 2}]
    assert snap.to_pyarrow(filter=[("part", "=", "other")]).num_rows == 0


def test_id_mode_resolves_by_field_id_not_name(tmp_path):
    """In mode id a file is matched by Parquet field id: here the file's names are not the
    schema's physical names at all (as after a writer that names columns differently)."""
    root = tmp_path / "t"
    odd = {i: f"zz{10 - i}" for i in range(1, 10)}
    add = _add(root, "a/f0.parquet", _nested_file(odd, with_ids=True), {"col-9": "p1"})
    _commit(root, 0, [_PROTOCOL, _meta(_NESTED, "id", ["part"]), add])
    assert DeltaTable(str(root)).snapshot().to_pyarrow().to_pylist() == _EXPECTED_NESTED
    # the same file under mode name finds nothing by name: every data column reads as null
    root2 = tmp_path / "t2"
    add = _add(root2, "a/f0.parquet", _nested_file(odd, with_ids=True), {"col-9": "p1"})
    _commit(root2, 0, [_PROTOCOL, _meta(_NESTED, "name", ["part"]), add])
    assert DeltaTable(str(root2)).snapshot().to_pyarrow().column("id").to_pylist() == [None, None]


def test_unknown_mapping_mode_is_refused(tmp_path):
    root = tmp_path / "t"
    add = _add(root, "f.parquet", pa.table({"col-1": pa.array([1], pa.int64())}))
    _commit(root, 0, [_PROTOCOL, _meta(_schema(_f("id", "long", 1)), "hash"), add])
    with pytest.raises(UnsupportedFeatureError, match="'hash'"):
        DeltaTable(str(root)).snapshot().to_pyarrow()


# ---------------------------------------------------------------- rename, drop, re-add, time travel


def test_rename_drop_readd_and_time_travel(tmp_path):
    root = tmp_path / "t"
    v0 = _schema(_f("id", "long", 1), _f("name", "string", 2))
    f0 = _add(root, "f0.parquet", pa.table({"col-1": pa.array([1, 2], pa.int64()), "col-2": ["a", "b"]}))
    _commit(root, 0, [_PROTOCOL, _meta(v0, "name"), f0])
    # v1: rename name -> label (same physical name); add a file
    v1 = _schema(_f("id", "long", 1), _f("label", "string", 2, "col-2"))
    f1 = _add(root, "f1.parquet", pa.table({"col-1": pa.array([3], pa.int64()), "col-2": ["c"]}))
    _commit(root, 1, [_meta(v1, "name"), f1])
    # v2: drop label, then re-add a column called label: a new physical name, so old data is null
    v2 = _schema(_f("id", "long", 1), _f("label", "string", 3))
    f2 = _add(root, "f2.parquet", pa.table({"col-1": pa.array([4], pa.int64()), "col-3": ["new"]}))
    _commit(root, 2, [_meta(v2, "name"), f2])
    t = DeltaTable(str(root))
    key = lambda r: r["id"]  # noqa: E731
    assert sorted(t.snapshot(version=0).to_pyarrow().to_pylist(), key=key) == \
        [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    assert sorted(t.snapshot(version=1).to_pyarrow().to_pylist(), key=key) == \
        [{"id": 1, "label": "a"}, {"id": 2, "label": "b"}, {"id": 3, "label": "c"}]
    assert sorted(t.snapshot().to_pyarrow().to_pylist(), key=key) == \
        [{"id": 1, "label": None}, {"id": 2, "label": None}, {"id": 3, "label": None}, {"id": 4, "label": "new"}]
    assert t.snapshot(version=1).to_pyarrow(columns=["label"], filter=[("label", "=", "c")]).to_pylist() == \
        [{"label": "c"}]
    with pytest.raises(Exception, match="name"):
        t.snapshot().to_pyarrow(columns=["name"])  # a logical name of an older version only


def test_partition_column_renamed(tmp_path):
    """partitionValues keep the physical key across a rename of the partition column."""
    root = tmp_path / "t"
    v0 = _schema(_f("id", "long", 1), _f("region", "string", 2))
    f0 = _add(root, "r=eu/f0.parquet", pa.table({"col-1": pa.array([1], pa.int64())}), {"col-2": "eu"})
    _commit(root, 0, [_PROTOCOL, _meta(v0, "name", ["region"]), f0])
    v1 = _schema(_f("id", "long", 1), _f("area", "string", 2, "col-2"))
    f1 = _add(root, "r=us/f1.parquet", pa.table({"col-1": pa.array([2], pa.int64())}), {"col-2": "us"})
    _commit(root, 1, [_meta(v1, "name", ["area"]), f1])
    t = DeltaTable(str(root))
    assert sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"]) == \
        [{"id": 1, "area": "eu"}, {"id": 2, "area": "us"}]
    assert t.snapshot().to_pyarrow(filter=[("area", "=", "us")]).to_pylist() == [{"id": 2, "area": "us"}]
    assert t.snapshot(version=0).to_pyarrow().to_pylist() == [{"id": 1, "region": "eu"}]


# ---------------------------------------------------------------- other writers' tables

CM_TABLES = [
    "dat/column_mapping/delta", "dat/iceberg_compat_v1/delta",
    "delta-rs/table_with_column_mapping", "delta-rs/table_with_partitioning_mapping",
    "delta-golden/table-with-columnmapping-mode-id", "delta-golden/table-with-columnmapping-mode-name",
    "delta-golden/dv-with-columnmapping", "delta-golden/data-reader-timestamp_ntz-id-mode",
    "delta-golden/data-reader-timestamp_ntz-name-mode", "delta-golden/table-with-icebegCompatV2Enabled",
    "delta-golden/data-skipping-basic-stats-all-types-columnmapping-id",
    "delta-golden/data-skipping-basic-stats-all-types-columnmapping-name",
    "delta-kernel-rs/stats-writing-all-types/delta", "delta-kernel-rs/cdf-column-mapping-name-mode",
    "delta-kernel-rs/cdf-column-mapping-id-mode", "delta-kernel-rs/cdf-column-mapping-name-mode-3-7",
    "delta-kernel-rs/partition_cm/name", "delta-kernel-rs/partition_cm/id",
]


@pytest.mark.parametrize("rel", CM_TABLES)
def test_corpus_tables_with_column_mapping(rel, corpus):
    deltalake = pytest.importorskip("deltalake")
    table = DeltaTable(str(corpus / rel))
    mapped_versions = 0
    for version in range(table.latest_version() + 1):
        try:
            snap = table.snapshot(version=version)
        except VersionNotFoundError:
            continue
        mapped_versions += snap.metadata.configuration.get("delta.columnMapping.mode", "none") != "none"
        ours = snap.to_pyarrow()
        dl = deltalake.DeltaTable(str(corpus / rel), version=version)
        theirs = pa.table(deltalake.QueryBuilder().register("t", dl).execute("select * from t").read_all())
        assert sorted_rows(ours) == sorted_rows(theirs.select(ours.column_names)), version
    assert mapped_versions


# ---------------------------------------------------------------- for engines that read files themselves


def test_physical_schema_carries_field_ids_only_in_id_mode():
    schema = json.loads(_NESTED)
    by_id = physical_schema(schema, {"delta.columnMapping.mode": "id"}, field_id_key="engine.id")
    point = by_id["fields"][1]
    assert (point["name"], point["metadata"]["engine.id"]) == ("col-2", 2)
    assert [(f["name"], f["metadata"]["engine.id"]) for f in point["type"]["fields"]] == [("col-3", 3), ("col-4", 4)]
    label = by_id["fields"][2]["type"]["elementType"]["fields"][0]
    score = by_id["fields"][3]["type"]["valueType"]["fields"][0]
    assert (label["name"], label["metadata"]["engine.id"], score["metadata"]["engine.id"]) == ("col-6", 6, 8)
    by_name = physical_schema(schema, {"delta.columnMapping.mode": "name"}, field_id_key="engine.id")
    assert "engine.id" not in json.dumps(by_name) and by_name["fields"][1]["name"] == "col-2"
    assert physical_schema(schema, {}, field_id_key="engine.id") is schema


def test_transaction_adds_files_keyed_by_physical_partition_name(tmp_path):
    """Under column mapping ``partitionValues`` are keyed by physical name; a commit checks that key."""
    root = tmp_path / "t"
    schema = _schema(_f("id", "long", 1), _f("region", "string", 2))
    table = DeltaTable(str(root))
    with table.transaction("CREATE TABLE", read_version=-1) as txn:
        txn.set_protocol(Protocol(2, 5))
        txn.set_metadata(Metadata("cm", schema, ("region",), {"delta.columnMapping.mode": "name",
                                                             "delta.columnMapping.maxColumnId": "2"}))
    f = _add(root, "r/f0.parquet", pa.table({"col-1": pa.array([1], pa.int64())}))["add"]
    with pytest.raises(InvalidArgumentError, match="col-2"):
        with table.transaction() as txn:
            txn.add_file(AddFile(f["path"], f["size"], {"region": "eu"}))
    with table.transaction() as txn:
        txn.add_file(AddFile(f["path"], f["size"], {"col-2": "eu"}))
    assert DeltaTable(str(root)).snapshot().to_pyarrow().to_pylist() == [{"id": 1, "region": "eu"}]
