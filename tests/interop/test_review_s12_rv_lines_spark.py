"""Review s12 (rv-lines), the Delta Spark side: hand-made commit lines read by Delta Spark 4.4 (the jars) and
by us. Report-only: each open finding is a strict xfail; whoever fixes it removes the marker.

See tests/log/test_review_s12_rv_lines.py for the conflict-check findings without Spark.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.errors import ConcurrentModificationError

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "log"))
from test_review_s12_rv_lines import NOW, _commit, _datafile, _table_with_live  # noqa: E402

pytestmark = pytest.mark.spark

ID_SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})


def _metadata(**extra) -> dict:
    m = {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": ID_SCHEMA,
         "partitionColumns": [], "configuration": {}, "createdTime": NOW}
    m.update(extra)
    return m


def _two_file_table(root: str) -> dict[str, int]:
    """Version 0: a.parquet (rows 1, 2) live; b.parquet (row 3) on disk, not in the log."""
    sizes = {"a": _datafile(root, "a.parquet", [1, 2]), "b": _datafile(root, "b.parquet", [3])}
    _commit(root, 0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, {"metaData": _metadata()},
                      {"add": {"path": "a.parquet", "partitionValues": {}, "size": sizes["a"],
                               "modificationTime": NOW, "dataChange": True}}])
    return sizes


def _spark_rows(spark, root: str) -> list:
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    return sorted(r.id for r in spark.read.format("delta").load(root).collect())


REMOVE_A = {"path": "a.parquet", "deletionTimestamp": NOW, "dataChange": True}


@pytest.mark.parametrize("add", [{}, {"path": None, "size": 1}, {"size": 1, "partitionValues": {}}],
                         ids=["empty", "path-null", "path-missing"])
def test_a_pathless_add_next_to_a_remove_reads_as_the_remove(spark, tmp_path, add):
    root = str(tmp_path / "t")
    _two_file_table(root)
    _commit(root, 1, [{"add": add, "remove": REMOVE_A}])
    theirs = _spark_rows(spark, root)
    assert theirs == []
    assert sorted(DeltaTable(root).snapshot().to_pyarrow().column("id").to_pylist()) == theirs


@pytest.mark.parametrize("without", ["absent", "null"])
def test_a_metadata_without_an_id_is_not_the_tables_metadata(spark, tmp_path, without):
    root = str(tmp_path / "t")
    sizes = _two_file_table(root)
    schema = json.dumps({"type": "struct", "fields": [
        {"name": "id", "type": "long", "nullable": True, "metadata": {}},
        {"name": "extra", "type": "string", "nullable": True, "metadata": {}}]})
    m = _metadata(schemaString=schema, configuration={"user.k": "v"})
    if without == "absent":
        del m["id"]
    else:
        m["id"] = None
    _commit(root, 1, [{"metaData": m}, {"add": {"path": "b.parquet", "partitionValues": {}, "size": sizes["b"],
                                                 "modificationTime": NOW, "dataChange": True}}])
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
    theirs = spark.read.format("delta").load(root).columns
    assert theirs == ["id"]
    assert DeltaTable(root).snapshot().schema.names == theirs


def test_a_delta_spark_delete_of_a_file_we_read_conflicts(spark, tmp_path):
    root = str(tmp_path / "t")
    _table_with_live(root, "./p=1/b.parquet")
    table = DeltaTable(root)
    with pytest.raises(ConcurrentModificationError):
        with table.transaction(operation="WRITE") as txn:
            assert txn.read_files({"p": "1"}).num_rows == 1
            spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()
            spark.sql(f"DELETE FROM delta.`{root}` WHERE p = '1'")
            removed = [json.loads(line)["remove"]["path"] for line in
                       open(os.path.join(root, "_delta_log", f"{1:020d}.json")) if '"remove"' in line]
            assert removed == ["p=1/b.parquet"]                  # Delta Spark writes the canonical spelling
            size = _datafile(root, "p=1/n.parquet", [2])
            txn.add_file(AddFile("p=1/n.parquet", size, {"p": "1"}, int(time.time() * 1000), True, None))
