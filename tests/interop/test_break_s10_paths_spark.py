"""Path spellings against Delta Spark (#22, break review s10): the reconciliation key our replay computes
(base/path_spelling.canonical_log_path) is Delta Spark's (DeltaLog.CanonicalPathFunction), and for raw
spellings another writer may leave in a log Delta Spark, our reader and our vacuum agree on the file.
The log-layer side is tests/log/test_break_s10_paths.py.
"""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.path_spelling import canonical_log_path

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64())])

#: relative and scheme-qualified spellings (a scheme-less absolute '/t/p' is qualified by Delta Spark with
#: the default file system, which canonical_log_path does not do)
SPELLINGS = ["x.parquet", "./x.parquet", "a/../x.parquet", "a/../../x.parquet", "../x", "x.parquet/", "a/.",
             "a/b/..", "sub//x.parquet", ".//x.parquet", "%2E/x.parquet", "x.parquet?a=./b", "./x.parquet?q",
             "./x#f", "a/b/../c/./d", "s3a://b//t/x.parquet", "s3a://b/t/./x.parquet", "s3a://b/t/..",
             "file:/t/./x.parquet", "file:///t/./x.parquet", "file:///t/x.parquet", "file://h/t/../x.parquet",
             "abfss://c@acct.dfs.core.windows.net/t//x.parquet", "p=M%C3%BCnchen/./x.parquet", "p=München/./x"]


def test_our_reconciliation_key_is_delta_sparks_canonical_path(spark):
    jvm = spark._jvm

    def canonical(p: str) -> str:
        path = jvm.org.apache.hadoop.fs.Path(jvm.java.net.URI(p))
        assert not path.isAbsoluteAndSchemeAuthorityNull()
        return path.toUri().toString()

    assert {p: canonical_log_path(p) for p in SPELLINGS} == {p: canonical(p) for p in SPELLINGS}


@pytest.mark.parametrize("paths", [["x.parquet#f"], ["x.parquet?a=b"], ["x.parquet", "./x.parquet"],
                                   ["x.parquet", "a/../x.parquet"], ["file:<root>/x.parquet#f"], ["<root>/x.parquet?q"]])
def test_delta_spark_we_and_our_vacuum_agree_on_the_file_a_spelling_names(spark, tmp_path, paths):
    """Version 1 adds x.parquet under ``paths`` (one commit): Delta Spark and we read its row once, and
    our vacuum deletes only the orphan beside it."""
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, SCHEMA)
    for name in ("x.parquet", "orphan.parquet"):
        pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), os.path.join(root, name))
    now, size = int(time.time() * 1000), os.path.getsize(os.path.join(root, "x.parquet"))
    lines = [{"commitInfo": {"timestamp": now, "operation": "WRITE"}}]
    lines += [{"add": {"path": p.replace("<root>", root), "partitionValues": {}, "size": size,
                       "modificationTime": now, "dataChange": True}} for p in paths]
    with open(os.path.join(root, "_delta_log", "00000000000000000001.json"), "w") as f:
        f.write("".join(json.dumps(line) + "\n" for line in lines))
    theirs = sorted(r["id"] for r in spark.read.format("delta").load(root).collect())
    ours = sorted(DeltaTable(root).snapshot().to_pyarrow().column("id").to_pylist())
    assert ours == theirs == [7]
    deleted = t.vacuum(retention_hours=0, dry_run=True, enforce_retention=False, now_ms=now + 60_000)["files_deleted"]
    assert deleted == ["orphan.parquet"]
