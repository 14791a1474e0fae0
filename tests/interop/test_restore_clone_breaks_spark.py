"""Breaking restore and clone against Delta Spark (findings of the break-restore review)."""
from __future__ import annotations

import json
import os
import shutil

import pytest

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark


def metadata_of(path: str, version: int) -> dict | None:
    with open(f"{path}/_delta_log/{version:020d}.json") as f:
        found = [json.loads(line)["metaData"] for line in f if '"metaData"' in line]
    return found[0] if found else None


def identity_high_water_mark(schema_string: str, column: str):
    field, = [f for f in json.loads(schema_string)["fields"] if f["name"] == column]
    return field["metadata"].get("delta.identity.highWaterMark")


def test_restore_keeps_the_identity_high_water_mark(spark, tmp_path):
    """Delta Spark's RESTORE merges the identity columns' high water marks of the current schema into the
    restored one (IdentityColumn.copySchemaWithMergedHighWaterMarks), so identity values handed out after
    the restored version are never handed out again. Ours took the old mark back: the next insert reused
    id 2, which a row had at version 2."""
    spark_copy, ours_copy = str(tmp_path / "spark"), str(tmp_path / "ours")
    spark.sql(f"CREATE TABLE delta.`{spark_copy}` (id BIGINT GENERATED ALWAYS AS IDENTITY, x INT) USING delta")
    spark.sql(f"INSERT INTO delta.`{spark_copy}` (x) VALUES (1)")            # v1: id 1
    spark.sql(f"INSERT INTO delta.`{spark_copy}` (x) VALUES (2), (3)")       # v2: ids 2, 3
    shutil.copytree(spark_copy, ours_copy)
    spark.sql(f"RESTORE TABLE delta.`{spark_copy}` TO VERSION AS OF 1")
    DeltaTable(ours_copy).restore(1, enforce_retention=False)
    assert identity_high_water_mark(metadata_of(spark_copy, 3)["schemaString"], "id") == 3
    # we write metaData only when it differs from the current one (here: it does not)
    assert identity_high_water_mark(DeltaTable(ours_copy).snapshot().metadata.schema_string, "id") == 3
    for path in (spark_copy, ours_copy):
        spark.sql(f"INSERT INTO delta.`{path}` (x) VALUES (4)")
    rows = {p: sorted(tuple(r) for r in spark.read.format("delta").load(p).collect()) for p in (spark_copy, ours_copy)}
    assert rows[ours_copy] == rows[spark_copy] == [(1, 1), (4, 4)]


def test_restore_refuses_a_version_whose_deletion_vector_file_is_gone(spark, tmp_path):
    """Delta Spark checks only the data files a RESTORE adds back; we check their deletion vector
    files too: restoring a version whose DV file was vacuumed is refused and writes nothing."""
    from airflow_provider_delta.log import DataFileNotFoundError
    path = str(tmp_path / "t")
    spark.range(0, 6).selectExpr("id").repartition(1).write.format("delta") \
        .option("delta.enableDeletionVectors", "true").save(path)
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")        # v1: DV d1
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 2")        # v2: DV d2 replaces d1
    table = DeltaTable(path)
    (dv1,) = [d for d in table.snapshot(version=1).files().column("deletion_vector").to_pylist() if d]
    (dv2,) = [d for d in table.snapshot(version=2).files().column("deletion_vector").to_pylist() if d]
    dv_files = sorted(n for n in os.listdir(path) if n.startswith("deletion_vector_"))
    assert len(dv_files) == 2 and dv1 != dv2
    # remove the DV file only version 1 uses (what a vacuum after version 2 deletes)
    from airflow_provider_delta.log.read.deletion_vectors import dv_file_path
    gone = dv_file_path(dv1)
    os.remove(f"{path}/{gone}")
    log_before = sorted(os.listdir(f"{path}/_delta_log"))
    with pytest.raises(DataFileNotFoundError):
        table.restore(1, enforce_retention=False)
    assert sorted(os.listdir(f"{path}/_delta_log")) == log_before
    assert sorted(r["id"] for r in spark.read.format("delta").load(path).collect()) == [0, 3, 4, 5]


def test_restore_and_clone_of_a_table_with_a_check_constraint_and_a_generated_column(spark, tmp_path):
    path = str(tmp_path / "t")
    spark.sql(f"CREATE TABLE delta.`{path}` (id BIGINT, twice BIGINT GENERATED ALWAYS AS (id * 2)) USING delta")
    spark.sql(f"ALTER TABLE delta.`{path}` ADD CONSTRAINT positive CHECK (id > 0)")      # v1
    spark.sql(f"INSERT INTO delta.`{path}` (id) VALUES (1), (2)")                         # v2
    spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 1")                                 # v3
    table = DeltaTable(path)
    clone = table.clone(str(tmp_path / "clone"), version=2)
    assert sorted(r["id"] for r in spark.read.format("delta").load(clone.uri).collect()) == [1, 2]
    table.restore(2, enforce_retention=False)
    assert sorted(tuple(r) for r in spark.read.format("delta").load(path).collect()) == [(1, 2), (2, 4)]
