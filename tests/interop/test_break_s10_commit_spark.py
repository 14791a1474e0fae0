"""Break review s10 (hole check after the put, 2bdd821): Delta Spark builds on our commit within the same
second - appends, checkpoints (checkpointInterval 1) and runs its metadata cleanup on an idle table -
before our committer's post-put check. Our commit must stay and be reported committed; Delta Spark and
we read its rows.

Observed: Delta Spark's cleanup keeps version v-1 then (``BufferingLogDeletionIterator`` deletes commits
only up to a checkpoint that is itself past the cutoff, and every checkpoint above our commit is new), so
the post-put check ends at its one stat. The same-second cases of tests/log/test_break_s10_commit.py
(v-1 gone) come from a cleanup more eager than Delta Spark's; the check must hold for them too."""
from __future__ import annotations

import os
import sys

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "log"))
from built_on_store import BuiltOnAtOnce, age_log  # noqa: E402 - tests/log's store wrappers

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def test_a_commit_delta_spark_built_on_and_cleaned_below_within_the_same_second_stays(spark, tmp_path):
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, SCHEMA, partition_by=["p"], properties={"delta.checkpointInterval": "1"})
    t.auto_checkpoint = False
    t.write(pa.table({"id": [1], "p": ["x y"]}, schema=SCHEMA))
    age_log(t)                                                  # an idle table: past log retention
    t.storage.files = store = BuiltOnAtOnce.by_delta_spark(t.storage.files, root, spark, [(100, "x y")],
                                                           "id long, p string")   # ours + 1, checkpoint, cleanup
    t.write(pa.table({"id": [3], "p": ["München"]}, schema=SCHEMA))   # v2; Delta Spark's v3 builds on it
    assert f"{3:020d}.checkpoint.parquet" in store.names_after
    assert f"{1:020d}.json" in store.names_after                     # Delta Spark's cleanup kept v-1
    assert os.path.exists(os.path.join(root, "_delta_log", f"{2:020d}.json"))
    assert sorted(DeltaTable(root).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3, 100]
    assert sorted(r.id for r in spark.read.format("delta").load(root).collect()) == [1, 3, 100]
