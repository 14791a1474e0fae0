"""Breaker findings against Delta Spark: properties and constraints a commit may turn on.

- ``delta.enableIcebergCompatV2=true`` / ``delta.universalFormat.enabledFormats=iceberg`` on a
  table without column mapping: Delta Spark refuses the ALTER; we commit the property with no
  feature in the protocol.
- ``delta.constraints.<name>`` on a table whose rows violate it: Delta Spark refuses (PROTOCOL.md
  "CHECK Constraints": the writer must validate existing data); we commit it unchecked.
- Column mapping enabled by us, then a nested column added and a column dropped by our
  ``set_metadata``: Delta Spark reads the same rows as from its own ALTERs, and the ids
  and physical names it would assign are the ones we assign.
"""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable

from interop_support import spark_read
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.actions import Metadata
from airflow_provider_delta.log.base.errors import DeltaError

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("s", pa.struct([("a", pa.int64())]))])
DATA = pa.table({"id": [1, 2, 3], "s": [{"a": 1}, {"a": 2}, None]}, schema=SCHEMA)


def _twins(tmp_path: Path) -> tuple[Path, Path]:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    DeltaTable.create(str(ours), SCHEMA).write(DATA)
    shutil.copytree(ours, theirs)
    return ours, theirs


def _refused_by_us(path: Path, properties: dict) -> None:
    table = DeltaTable(str(path))
    version = table.latest_version()
    with pytest.raises(DeltaError):
        with table.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties(properties)
    assert DeltaTable(str(path)).latest_version() == version


@pytest.mark.xfail(strict=True, reason="we commit delta.enableIcebergCompatV2=true on a table without column "
                   "mapping (protocol stays 1/2, no icebergCompatV2 feature); Delta Spark refuses the ALTER")
def test_iceberg_compat_v2_without_column_mapping_is_committed(spark, tmp_path):
    ours, theirs = _twins(tmp_path)
    with pytest.raises(Exception, match="(?i)iceberg|column ?mapping"):
        spark.sql(f"ALTER TABLE delta.`{theirs}` SET TBLPROPERTIES ('delta.enableIcebergCompatV2' = 'true')")
    _refused_by_us(ours, {"delta.enableIcebergCompatV2": "true"})


@pytest.mark.xfail(strict=True, reason="we commit delta.universalFormat.enabledFormats=iceberg without any "
                   "icebergCompat feature; Delta Spark refuses it")
def test_universal_format_iceberg_without_iceberg_compat_is_committed(spark, tmp_path):
    ours, theirs = _twins(tmp_path)
    with pytest.raises(Exception, match="(?i)iceberg|universal"):
        spark.sql(f"ALTER TABLE delta.`{theirs}` SET TBLPROPERTIES "
                  "('delta.universalFormat.enabledFormats' = 'iceberg')")
    _refused_by_us(ours, {"delta.universalFormat.enabledFormats": "iceberg"})


@pytest.mark.xfail(strict=True, reason="a CHECK constraint that existing rows violate is committed unchecked "
                   "(PROTOCOL.md CHECK Constraints: validate existing data first); Delta Spark refuses")
def test_check_constraint_violated_by_existing_rows_is_committed(spark, tmp_path):
    ours, theirs = _twins(tmp_path)
    with pytest.raises(Exception, match="(?i)violate|constraint"):
        spark.sql(f"ALTER TABLE delta.`{theirs}` ADD CONSTRAINT c CHECK (id > 5)")
    _refused_by_us(ours, {"delta.constraints.c": "id > 5"})
