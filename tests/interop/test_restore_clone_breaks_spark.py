"""Breaking restore and clone against Delta Spark (findings of the break-restore review)."""
from __future__ import annotations

import json
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

