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
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark

DAY_S = 86_400
SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


class _SparkBuildsOnAtOnce:
    def __init__(self, inner, spark, root: str):
        self.inner, self.spark, self.root, self.armed = inner, spark, root, True
        self.names_after: list[str] = []

    def put_if_absent(self, target: str, data: bytes) -> bool:
        landed = self.inner.put_if_absent(target, data)
        if not (landed and self.armed and "_delta_log" in target and target.endswith(".json")):
            return landed
        self.armed = False
        ours = int(os.path.basename(target).split(".")[0])
        self.spark.createDataFrame([(100, "x y")], "id long, p string").write.format("delta").mode("append") \
            .save(self.root)                                    # ours + 1, checkpoint, cleanup below it
        log_dir = os.path.dirname(target)
        self.names_after = sorted(os.listdir(log_dir))
        own_ns = os.stat(target).st_mtime_ns
        os.utime(os.path.join(log_dir, f"{ours + 1:020d}.checkpoint.parquet"), ns=(own_ns, own_ns))
        return landed

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_a_commit_delta_spark_built_on_and_cleaned_below_within_the_same_second_stays(spark, tmp_path):
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, SCHEMA, partition_by=["p"], properties={"delta.checkpointInterval": "1"})
    t.auto_checkpoint = False
    t.write(pa.table({"id": [1], "p": ["x y"]}, schema=SCHEMA))
    old = time.time() - 40 * DAY_S                              # an idle table: past log retention
    for name in os.listdir(os.path.join(root, "_delta_log")):
        os.utime(os.path.join(root, "_delta_log", name), (old, old))
    t.storage.files = store = _SparkBuildsOnAtOnce(t.storage.files, spark, root)
    t.write(pa.table({"id": [3], "p": ["München"]}, schema=SCHEMA))   # v2; Delta Spark's v3 builds on it
    assert f"{3:020d}.checkpoint.parquet" in store.names_after
    assert f"{1:020d}.json" in store.names_after                     # Delta Spark's cleanup kept v-1
    assert os.path.exists(os.path.join(root, "_delta_log", f"{2:020d}.json"))
    assert sorted(DeltaTable(root).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 3, 100]
    assert sorted(r.id for r in spark.read.format("delta").load(root).collect()) == [1, 3, 100]
