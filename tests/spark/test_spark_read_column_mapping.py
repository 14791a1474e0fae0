"""read_snapshot under column mapping mode ``id``: columns found by Parquet field id, not name.

The data file is written here with pyarrow under column names that are NOT the schema's
physical names (only the field ids are right, top level and nested) and committed with
our log, so a reader that resolves by name reads nulls: the by-id answer is checked
against the expected rows, our pyarrow reader and Delta Spark. The corpus tables in mode
``id`` give the rows the log layer's reader gives (compared there with deltalake), and
mode ``name`` keeps resolving by name.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import AddFile, DeltaTable, Metadata, Protocol
from airflow_provider_delta.spark import read_snapshot
from airflow_provider_delta.spark.reader import FIELD_ID_READ_CONF
from column_mapping_files import NESTED_ROWS, NESTED_SCHEMA, nested_file

pytestmark = pytest.mark.spark

ID_MODE_CORPUS = ["delta-golden/table-with-columnmapping-mode-id", "delta-golden/data-reader-timestamp_ntz-id-mode",
                  "delta-golden/data-skipping-basic-stats-all-types-columnmapping-id",
                  "delta-golden/table-with-icebegCompatV2Enabled", "delta-kernel-rs/cdf-column-mapping-id-mode"]




def _table(root: Path, mode: str, data: pa.Table) -> DeltaTable:
    """A table in column mapping ``mode`` made by our log: protocol, metadata and one add."""
    (root / "part=p1").mkdir(parents=True)
    pq.write_table(data, root / "part=p1" / "f0.parquet")
    table = DeltaTable(str(root))
    meta = Metadata("cm-id", json.dumps(NESTED_SCHEMA), ("part",),
                    {"delta.columnMapping.mode": mode, "delta.columnMapping.maxColumnId": "9"})
    with table.transaction("CREATE TABLE", read_version=-1) as txn:
        txn.set_protocol(Protocol(2, 5))
        txn.set_metadata(meta)
        txn.add_file(AddFile("part=p1/f0.parquet", (root / "part=p1" / "f0.parquet").stat().st_size,
                             {"col-9": "p1"}, stats=json.dumps({"numRecords": 2})))
    return table


def sorted_rows(table: pa.Table) -> list[dict]:
    return sorted(table.to_pylist(), key=repr)


def _rows(df) -> list[dict]:
    return sorted((r.asDict(recursive=True) for r in df.collect()), key=lambda r: r["id"] or 0)


def _as_spark_rows(rows: list[dict]) -> list[dict]:
    """NESTED_ROWS as Spark's Row.asDict gives it: maps as dicts."""
    return [{**r, "attrs": dict(r["attrs"]) if r["attrs"] is not None else None} for r in rows]


def test_id_mode_resolves_by_field_id_where_names_differ(spark, tmp_path):
    odd = {i: f"zz{10 - i}" for i in range(1, 10)}          # no name matches a physical name
    table = _table(tmp_path / "by_id", "id", nested_file(odd))
    assert DeltaTable(table.uri).snapshot().to_pyarrow().to_pylist() == NESTED_ROWS
    # off, as in a session without Delta Spark (whose extension turns it on once, when the
    # session's analyzer is built for its first query: build it first)
    spark.range(1).collect()
    spark.conf.set(FIELD_ID_READ_CONF, "false")
    df = read_snapshot(spark, table_uri=table.uri)
    assert df.columns == ["id", "point", "tags", "attrs", "part"]
    assert _rows(df) == _as_spark_rows(NESTED_ROWS)
    # the reference reads it the same way
    delta_spark = spark.read.format("delta").load(table.uri)
    assert _rows(delta_spark.select(*df.columns)) == _as_spark_rows(NESTED_ROWS)
    assert spark.conf.get(FIELD_ID_READ_CONF) == "true"


def test_the_same_file_read_by_name_gives_nulls(spark, tmp_path):
    """What resolving by name would do: mode ``name`` on the same file finds no column."""
    odd = {i: f"zz{10 - i}" for i in range(1, 10)}
    table = _table(tmp_path / "by_name", "name", nested_file(odd))
    got = _rows(read_snapshot(spark, table_uri=table.uri))
    assert [(r["id"], r["point"], r["tags"], r["attrs"], r["part"]) for r in got] == \
        [(None, None, None, None, "p1")] * 2


def test_name_mode_still_reads_physical_names(spark, tmp_path):
    """Physical names right, field ids deliberately wrong: mode ``name`` must not use the ids."""
    physical = {i: f"col-{i}" for i in range(1, 10)}
    data = nested_file(physical)
    swapped = pa.schema([f.with_metadata({b"PARQUET:field_id": b"99"}) if f.name == "col-1" else f
                         for f in data.schema])
    table = _table(tmp_path / "name", "name", data.cast(swapped))
    assert _rows(read_snapshot(spark, table_uri=table.uri)) == _as_spark_rows(NESTED_ROWS)


def test_other_reads_in_the_session_keep_matching_by_name(spark, tmp_path):
    odd = {i: f"zz{10 - i}" for i in range(1, 10)}
    read_snapshot(spark, table_uri=_table(tmp_path / "t", "id", nested_file(odd)).uri).collect()
    assert spark.conf.get(FIELD_ID_READ_CONF) == "true"
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.table({"a": pa.array([1], pa.int64()), "b": ["x"]}).cast(pa.schema([
        pa.field("a", pa.int64(), metadata={b"PARQUET:field_id": b"2"}),
        pa.field("b", pa.string(), metadata={b"PARQUET:field_id": b"1"})])), plain)
    assert [r.asDict() for r in spark.read.schema("a BIGINT, b STRING").parquet(str(plain)).collect()] == \
        [{"a": 1, "b": "x"}]


def test_file_without_field_ids_fails_in_id_mode(spark, tmp_path):
    """Writers must write field ids in mode ``id``; Spark (like Delta Spark) refuses a file without."""
    table = _table(tmp_path / "no_ids", "id", nested_file({i: f"col-{i}" for i in range(1, 10)}, with_ids=False))
    with pytest.raises(Exception, match="(?i)field ids"):
        read_snapshot(spark, table_uri=table.uri).collect()


@pytest.mark.parametrize("rel", ID_MODE_CORPUS)
def test_corpus_id_mode_tables(spark, corpus, rel):
    path = str(corpus / rel)
    snap = DeltaTable(path).snapshot()
    assert snap.configuration.get("delta.columnMapping.mode") == "id"
    df = read_snapshot(spark, table_uri=path)
    expected = snap.to_pyarrow()
    ours = df.toArrow()
    assert ours.num_rows == expected.num_rows > 0
    assert sorted_rows(ours.cast(expected.schema)) == sorted_rows(expected)
    delta_spark = spark.read.format("delta").load(path).select(*df.columns).toArrow()
    assert sorted_rows(delta_spark.cast(expected.schema)) == sorted_rows(expected)
