"""read_snapshot in real local Spark: exactly the pinned version, typed partition columns."""
from __future__ import annotations

import datetime as dt
import decimal
import shutil

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import InvalidArgumentError
from airflow_provider_delta.spark import read_snapshot

pytestmark = pytest.mark.spark


def _rows(df, order: str = "id") -> list[dict]:
    return [r.asDict() for r in df.orderBy(order).collect()]


def _arrow_rows(table: pa.Table, order: str = "id") -> list[dict]:
    return sorted(table.to_pylist(), key=lambda r: (r[order] is None, r[order]))


def _manifest(tmp_path, table: DeltaTable, version: int) -> str:
    from airflow_provider_delta.hooks.manifest import build_manifest, write_json
    return write_json(str(tmp_path / f"manifest-v{version}.json"), build_manifest(table.snapshot(version), table.uri))


def test_pinned_version_stays_put_after_later_commits(spark, tmp_path):
    schema = pa.schema([("id", pa.int64()), ("day", pa.date32()), ("note", pa.string())])
    table = DeltaTable.create(str(tmp_path / "orders"), schema, partition_by=["day"])
    table.write(pa.table({"id": [1, 2], "day": [dt.date(2026, 1, 1), dt.date(2026, 1, 2)], "note": ["a", "b"]}))
    table.write(pa.table({"id": [3], "day": [dt.date(2026, 1, 2)], "note": ["c"]}))
    manifest = _manifest(tmp_path, table, 2)
    expected = _arrow_rows(table.snapshot(2).to_pyarrow())
    assert [r["id"] for r in expected] == [1, 2, 3]

    # the table moves on: more rows, then an overwrite that removes every file of version 2
    table.write(pa.table({"id": [4], "day": [dt.date(2026, 1, 3)], "note": ["d"]}))
    table.write(pa.table({"id": [10], "day": [dt.date(2026, 2, 1)], "note": ["new"]}), mode="overwrite")

    assert _rows(read_snapshot(spark, manifest)) == expected
    assert _rows(read_snapshot(spark, table_uri=table.uri, version=2)) == expected
    assert _rows(read_snapshot(spark, table_uri=str(tmp_path / "orders"))) == \
        [{"id": 10, "day": dt.date(2026, 2, 1), "note": "new"}]


def test_partition_columns_are_typed_from_the_log(spark, tmp_path, session_time_zone):
    schema = pa.schema([("id", pa.int64()), ("n", pa.int32()), ("label", pa.string()),
                        ("ts", pa.timestamp("us", tz="UTC")), ("amount", pa.decimal128(8, 2)),
                        ("flag", pa.bool_())])
    table = DeltaTable.create(str(tmp_path / "typed"), schema, partition_by=["n", "label", "ts", "amount", "flag"])
    ts = dt.datetime(2026, 3, 1, 12, 30, tzinfo=dt.timezone.utc)
    table.write(pa.table({
        "id": [1, 2, 3],
        "n": pa.array([5, None, -1], pa.int32()),
        "label": ["a:b c", None, "x/y%{a,b}*?"],
        "ts": pa.array([ts, ts, None], pa.timestamp("us", tz="UTC")),
        "amount": pa.array([decimal.Decimal("1.50"), None, decimal.Decimal("-2.00")], pa.decimal128(8, 2)),
        "flag": [True, None, False],
    }, schema=schema))
    session_time_zone("America/New_York")     # partition instants must not shift with the session zone
    df = read_snapshot(spark, table_uri=table.uri)
    assert [f.name for f in df.schema.fields] == schema.names
    assert [f.dataType.simpleString() for f in df.schema.fields] == \
        ["bigint", "int", "string", "timestamp", "decimal(8,2)", "boolean"]
    rows = [r.asDict() for r in df.orderBy("id").select("id", "n", "label", "amount", "flag",
                                           df.ts.cast("long").alias("epoch")).collect()]
    assert rows == [
        {"id": 1, "n": 5, "label": "a:b c", "amount": decimal.Decimal("1.50"), "flag": True,
         "epoch": int(ts.timestamp())},
        {"id": 2, "n": None, "label": None, "amount": None, "flag": None, "epoch": int(ts.timestamp())},
        {"id": 3, "n": -1, "label": "x/y%{a,b}*?", "amount": decimal.Decimal("-2.00"), "flag": False, "epoch": None},
    ]


def test_empty_snapshot_has_the_schema(spark, tmp_path):
    schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
    table = DeltaTable.create(str(tmp_path / "empty"), schema, partition_by=["day"])
    df = read_snapshot(spark, table_uri=table.uri)
    assert df.columns == ["id", "day"] and df.count() == 0


def test_missing_data_file_fails_loudly(spark, tmp_path):
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": [1]}))
    manifest = _manifest(tmp_path, table, 1)
    for f in (tmp_path / "t").glob("*.parquet"):
        f.unlink()
    with pytest.raises(Exception, match="(?i)not exist|not found|FileNotFound"):
        read_snapshot(spark, manifest).collect()


def test_argument_errors(spark, tmp_path):
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        read_snapshot(spark)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        read_snapshot(spark, "m.json", table_uri="/t")
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    manifest = _manifest(tmp_path, table, 0)
    with pytest.raises(InvalidArgumentError, match="version comes from the manifest"):
        read_snapshot(spark, manifest, version=0)


def test_manifest_of_a_copied_table_reads_its_absolute_uris(spark, tmp_path):
    """A manifest lists absolute file URIs: it keeps working wherever the job runs."""
    table = DeltaTable.create(str(tmp_path / "src"), pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": [1, 2, 3]}))
    manifest = _manifest(tmp_path, table, 1)
    moved = tmp_path / "elsewhere.json"
    shutil.copy(manifest.replace("file://", ""), moved)
    assert sorted(r.id for r in read_snapshot(spark, str(moved)).collect()) == [1, 2, 3]
