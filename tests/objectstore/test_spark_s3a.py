"""Spark on S3 (moto): Delta Spark writing through s3a://, and our driver-side commit path on S3.

One real S3 server (moto) and the session's one SparkSession with hadoop-aws on its class
path (scripts/delta-spark/pom.xml). Spark gets its S3A settings per bucket from the same
fsspec options the log layer uses (airflow_provider_delta.spark.s3a): the test sets them
for the shared test bucket; the job test uses a bucket of its own, which only the job's
settings (from the Airflow connections) can reach.
"""
from __future__ import annotations


import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.spark.s3a import apply_s3a
from airflow_provider_delta.spark.uris import spark_uri

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


@pytest.fixture(scope="module")
def s3(object_stores):
    return object_stores("s3")


@pytest.fixture(scope="module")
def s3a_spark(spark, s3):
    """The shared session, with S3A pointed at moto for the test bucket."""
    apply_s3a(spark, s3.uri(), s3.options)
    return spark


def _spark_ids(spark, uri: str, version: int | None = None) -> list[int]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(r.id for r in reader.load(spark_uri(uri)).select("id").collect())


def _ours_ids(table: DeltaTable, version: int | None = None) -> list[int]:
    return sorted(table.snapshot(version).to_pyarrow(columns=["id"]).column("id").to_pylist())


def _deltalake_ids(s3, uri: str, version: int | None = None) -> list[int]:
    import deltalake
    dt_ = deltalake.DeltaTable(uri, storage_options=s3.deltalake_options, version=version)
    return sorted(dt_.to_pyarrow_table(columns=["id"]).column("id").to_pylist())


def test_delta_spark_writes_through_s3a_and_we_read_it(s3a_spark, s3):
    spark, uri = s3a_spark, s3.uri("spark")
    target = spark_uri(uri)
    assert target.startswith("s3a://")
    rows = [(i, "2026-01-01" if i % 2 else "2026-01-02") for i in range(6)]
    df = spark.createDataFrame(rows, "id long, day string")
    df.write.format("delta").partitionBy("day").save(target)                     # version 0
    spark.createDataFrame([(10, "2026-01-03")], "id long, day string") \
        .write.format("delta").mode("append").save(target)                         # version 1
    spark.sql(f"DELETE FROM delta.`{target}` WHERE id = 3")                       # version 2
    spark.sql(f"UPDATE delta.`{target}` SET id = id + 100 WHERE id = 4")          # version 3

    table = DeltaTable(uri, **s3.table_kwargs)
    assert table.latest_version() == 3
    assert [h["operation"] for h in table.history()] == ["UPDATE", "DELETE", "WRITE", "WRITE"]
    spark_now = _spark_ids(spark, uri)
    assert spark_now == [0, 1, 2, 5, 10, 104]
    assert _ours_ids(table) == spark_now == _deltalake_ids(s3, uri)
    for version in (0, 1, 2):
        assert _ours_ids(table, version) == _spark_ids(spark, uri, version) == _deltalake_ids(s3, uri, version)
