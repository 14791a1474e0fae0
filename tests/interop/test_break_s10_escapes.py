"""Break review s10: action lines another writer spells otherwise (JSON whitespace before the object, keys
with escapes) are the same actions to Delta Spark, so they must be to us (register row C12e)."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import DeltaError

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64())])


def _append_commit(t: DeltaTable, lines: list[str]) -> int:
    version = t.latest_version() + 1
    with open(os.path.join(t.storage.root, "_delta_log", f"{version:020d}.json"), "w") as f:
        f.write("\n".join(lines) + "\n")
    return version


def test_delta_spark_reads_a_whitespace_led_protocol_and_an_escaped_commit_info_as_we_do(spark, tmp_path):
    # a protocol line opening with whitespace: Delta Spark sees the unknown feature and refuses, as we do
    a = DeltaTable.create(str(tmp_path / "a"), SCHEMA)
    a.write(pa.table({"id": [1]}))
    protocol = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["madeUpFeature"],
                             "writerFeatures": ["madeUpFeature"]}}
    _append_commit(a, [json.dumps({"commitInfo": {"timestamp": 1, "operation": "X"}}), "  " + json.dumps(protocol)])
    with pytest.raises(Exception, match="madeUpFeature"):
        spark.read.format("delta").load(a.storage.root).collect()
    with pytest.raises(DeltaError, match="madeUpFeature"):
        DeltaTable(a.uri).snapshot()
    # in-commit timestamps with the commitInfo key escaped: Delta Spark takes the version's time from it
    b = DeltaTable.create(str(tmp_path / "b"), SCHEMA, properties={"delta.enableInCommitTimestamps": "true"})
    b.write(pa.table({"id": [1]}))
    ts = DeltaTable(b.uri).snapshot().timestamp + 60_000
    info = json.dumps({"commitInfo": {"timestamp": ts, "inCommitTimestamp": ts, "operation": "WRITE"}})
    version = _append_commit(b, [info.replace('"commitInfo"', '"\\u0063ommitInfo"')])
    row = spark.sql(f"DESCRIBE HISTORY delta.`{b.storage.root}` LIMIT 1").collect()[0]
    assert row["version"] == version
    assert int(row["timestamp"].timestamp() * 1000) == ts
    assert DeltaTable(b.uri).snapshot().timestamp == ts
    assert DeltaTable(b.uri).history(limit=1)[0]["timestamp"] == ts
