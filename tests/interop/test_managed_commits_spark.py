"""Managed commits and Delta Spark: Delta Spark knows nothing about our commit owner.

It reads the backfilled prefix of a managed-commit table (the same state our owner-less
reader sees), and refuses to write to it because of the unknown ``managedCommit`` writer
feature, rather than writing ``_delta_log/<v>.json`` around the commit owner. After
``disable_managed_commits()`` Delta Spark writes again, and we read its commits.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from interop_support import assert_same, compare_table, spark_latest_version
from airflow_provider_delta.log import DeltaTable, SqlCommitOwner

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.string())])


def _rows(lo: int, hi: int) -> pa.Table:
    return pa.table({"id": pa.array(range(lo, hi), pa.int64()), "s": [f"r{i}" for i in range(lo, hi)]},
                    schema=SCHEMA)


def _log(path: str) -> list[str]:
    return sorted(f for f in os.listdir(os.path.join(path, "_delta_log")))


def test_delta_spark_reads_the_backfilled_prefix_and_refuses_to_write(spark, tmp_path):
    p = str(tmp_path / "managed")
    owner = SqlCommitOwner(f"sqlite:///{tmp_path / 'owner.db'}", backfill_batch_size=3)
    table = DeltaTable.create(p, SCHEMA, commit_owner=owner)                                      # v0
    for i in range(4):                                                                            # v1..v4
        table.write(_rows(10 * i, 10 * i + 3))
    owned_latest = table.latest_version()
    plain = DeltaTable(p)  # no owner: the backfilled prefix only
    backfilled = plain.latest_version()
    assert owned_latest == 4 and backfilled < owned_latest, (owned_latest, backfilled, _log(p))
    assert "managedCommit" in (table.snapshot().protocol.writer_features or ())

    # Delta Spark reads the backfilled prefix, as our owner-less reader does
    assert spark_latest_version(spark, p) == backfilled
    assert_same(compare_table(spark, p), "the backfilled prefix of a managed-commit table")
    assert spark.read.format("delta").load(p).count() == table.snapshot(version=backfilled).to_pyarrow().num_rows

    # Delta Spark refuses to write: it does not know the managedCommit writer feature
    before = _log(p)
    with pytest.raises(Exception) as info:
        spark.createDataFrame([(99, "spark")], "id long, s string").write.format("delta").mode("append").save(p)
    message = str(info.value)
    assert "DELTA_UNSUPPORTED_FEATURES_FOR_WRITE" in message and "managedCommit" in message, message
    assert _log(p) == before, "Delta Spark wrote into _delta_log around the commit owner"
    assert table.latest_version() == owned_latest

    # back to filesystem commits: Delta Spark writes again, and we read what it wrote
    disabled = table.disable_managed_commits()
    assert disabled == owned_latest + 1
    assert "managedCommit" not in (DeltaTable(p).snapshot().protocol.writer_features or ())
    spark.createDataFrame([(99, "spark")], "id long, s string").write.format("delta").mode("append").save(p)
    assert DeltaTable(p).latest_version() == disabled + 1
    assert sorted(DeltaTable(p).snapshot().to_pyarrow().column("id").to_pylist()) == \
        sorted(list(range(0, 3)) + list(range(10, 13)) + list(range(20, 23)) + list(range(30, 33)) + [99])
    assert_same(compare_table(spark, p, versions=range(backfilled, disabled + 2)),
                "a formerly managed table after Delta Spark's commit")
