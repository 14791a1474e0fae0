"""Review of the conflict rules against Delta Spark (branch break-conflicts): isolation level values
written by other engines, as Delta Spark's own OptimisticTransaction parses them. The same loser runs
through Delta Spark and through us (the machinery of test_conflicts_spark.py) on copies of a table
whose ``delta.isolationLevel`` another engine wrote (Delta Spark itself refuses to set anything but
Serializable, so the value is committed raw).
"""
from __future__ import annotations

import json
import os
import shutil

import pytest

from airflow_provider_delta.log import DeltaTable

from test_conflicts_spark import (INSERT_P1, PARTITIONED, Loser, _rows_deltalake, _rows_ours, _rows_spark,
                                  open_our_loser, open_spark_loser, plan_actions)

pytestmark = pytest.mark.spark


def _set_level_raw(path: str, value: str) -> None:
    table = DeltaTable(path)
    meta = table.snapshot().metadata.to_json()
    meta["configuration"] = {**meta.get("configuration", {}), "delta.isolationLevel": value}
    version = table.latest_version() + 1
    lines = [{"commitInfo": {"operation": "SET TBLPROPERTIES", "isBlindAppend": False}}, {"metaData": meta}]
    with open(os.path.join(path, "_delta_log", f"{version:020d}.json"), "x") as f:
        f.write("\n".join(json.dumps(a) for a in lines) + "\n")


@pytest.mark.parametrize("value,expected", [
    ("writeserializable", None),             # any case; blind appends do not break WriteSerializable
    ("SNAPSHOTISOLATION", None),
    ("Serializable", "ConcurrentAppendException"),
])
def test_a_foreign_isolation_level_is_honoured_as_delta_spark_honours_it(spark, tmp_path, value, expected):
    theirs, ours = str(tmp_path / "spark_loser"), str(tmp_path / "our_loser")
    for s in PARTITIONED:
        spark.sql(s.format(t=f"delta.`{theirs}`"))
    _set_level_raw(theirs, value)
    shutil.copytree(theirs, ours)
    loser = Loser(reads=1, add_in=1)
    spark_commit = open_spark_loser(spark, theirs, loser, plan_actions(theirs, loser))
    our_commit = open_our_loser(ours, loser, plan_actions(ours, loser))
    INSERT_P1(spark, theirs)
    INSERT_P1(spark, ours)
    assert (spark_commit(), our_commit()) == (expected, expected)
    rows = _rows_spark(spark, theirs)
    assert rows == _rows_spark(spark, ours) == _rows_ours(ours) == _rows_deltalake(ours)


def test_an_unknown_isolation_level_fails_both_engines_and_writes_nothing(spark, tmp_path):
    """IsolationLevel.fromString refuses a name it does not know: Delta Spark's INSERT fails, and so
    does our commit (InvalidTableStateError), neither writing a version."""
    theirs, ours = str(tmp_path / "spark_loser"), str(tmp_path / "our_loser")
    for s in PARTITIONED:
        spark.sql(s.format(t=f"delta.`{theirs}`"))
    _set_level_raw(theirs, "ReadCommitted")
    shutil.copytree(theirs, ours)
    before = DeltaTable(ours).latest_version()
    with pytest.raises(Exception, match="(?i)isolation"):
        spark.sql(f"INSERT INTO delta.`{theirs}` VALUES (9, 1)")
    loser = Loser(add_in=1)
    assert open_our_loser(ours, loser, plan_actions(ours, loser))() == "InvalidTableStateError"
    assert DeltaTable(theirs).latest_version() == DeltaTable(ours).latest_version() == before
