"""The Spark entry point: arguments in, pinned input read, transform applied, output committed once."""
from __future__ import annotations

import datetime as dt

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import InvalidArgumentError
from airflow_provider_delta.spark.job import run
from airflow_provider_delta.spark.job_args import JobSpec

pytestmark = pytest.mark.spark

TRANSFORMS = '''
from pyspark.sql import functions as F

def totals(spark, source, min_amount=0):
    return (source.where(F.col("amount") >= min_amount).groupBy("day")
            .agg(F.sum("amount").alias("total"), F.count(F.lit(1)).alias("n")))

def not_a_frame(spark, source):
    return 42
'''


@pytest.fixture
def orders(tmp_path) -> DeltaTable:
    schema = pa.schema([("id", pa.int64()), ("amount", pa.int64()), ("day", pa.date32())])
    table = DeltaTable.create(str(tmp_path / "orders"), schema, partition_by=["day"])
    table.write(pa.table({"id": [1, 2, 3], "amount": [10, 20, 5],
                          "day": [dt.date(2026, 1, 1), dt.date(2026, 1, 1), dt.date(2026, 1, 2)]}, schema=schema))
    return table


@pytest.fixture
def transforms(tmp_path, monkeypatch):
    (tmp_path / "job_transforms.py").write_text(TRANSFORMS)
    monkeypatch.syspath_prepend(str(tmp_path))


def _totals(uri: str) -> dict:
    rows = DeltaTable(uri).snapshot().to_pyarrow().to_pylist()
    return {r["day"]: (r["total"], r["n"]) for r in rows}


def test_manifest_in_table_out_exactly_once(spark, tmp_path, orders, transforms):
    from airflow_provider_delta.hooks.manifest import build_manifest, write_json
    manifest = write_json(str(tmp_path / "pin.json"), build_manifest(orders.snapshot(1), orders.uri))
    orders.write(pa.table({"id": [4], "amount": [1000], "day": [dt.date(2026, 1, 1)]}))   # after the pin
    out = str(tmp_path / "totals")
    spec = JobSpec(output_table_uri=out, transform="job_transforms:totals", mode="overwrite",
                   input_manifest_uri=manifest, app_id="dag.totals", app_version=1,
                   params={"min_amount": 6}, job={"dag_id": "dag", "task_id": "totals"})
    result = run(spark, spec)
    assert result == {"table_uri": "file://" + out, "app_id": "dag.totals", "app_version": 1, "committed": True,
                      "version": 0, "input_version": 1}
    assert _totals(out) == {dt.date(2026, 1, 1): (30, 2)}      # the later 1000 is not in the pinned version

    again = run(spark, spec)
    assert again["committed"] is False and again["version"] == 0
    assert DeltaTable(out).latest_version() == 0

    newer = run(spark, JobSpec(**{**spec.__dict__, "input_manifest_uri": None, "input_table_uri": orders.uri,
                                  "app_version": 2, "params": {}}))
    assert newer["committed"] is True and newer["version"] == 1 and newer["input_version"] == 2
    assert _totals(out) == {dt.date(2026, 1, 1): (1030, 3), dt.date(2026, 1, 2): (5, 1)}


def test_builtin_sql_transform_and_table_version_input(spark, tmp_path, orders):
    orders.write(pa.table({"id": [9], "amount": [1], "day": [dt.date(2026, 1, 3)]}))
    out = str(tmp_path / "copy")
    spec = JobSpec(output_table_uri=out, transform="sql", input_table_uri=orders.uri, input_version=1,
                   params={"query": "select id, amount * 2 as doubled from src", "view": "src"})
    assert run(spark, spec)["committed"] is True
    rows = sorted(DeltaTable(out).snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])
    assert rows == [{"id": 1, "doubled": 20}, {"id": 2, "doubled": 40}, {"id": 3, "doubled": 10}]


def test_transform_must_return_a_dataframe(spark, tmp_path, orders, transforms):
    spec = JobSpec(output_table_uri=str(tmp_path / "o"), transform="job_transforms:not_a_frame",
                   input_table_uri=orders.uri)
    with pytest.raises(InvalidArgumentError, match="not a DataFrame"):
        run(spark, spec)
    assert not (tmp_path / "o").exists()
