"""Catalog-managed tables of our SqlCatalog and the other Delta implementations.

PROTOCOL.md: catalog-managed tables are read through their catalog; ``catalogManaged`` is
a reader feature so that filesystem-based clients stop instead of reading or writing the
storage location behind the catalog's back. Neither Delta Spark nor deltalake has a
client for our catalog, so both must refuse the table, for reading and for writing, and
leave it unchanged; the published ``_delta_log`` is still the log our catalog readers read.
Delta Spark (4.x) refuses path-based access to a catalog-managed table
(DELTA_PATH_BASED_ACCESS_TO_CATALOG_MANAGED_TABLE_BLOCKED: it wants the table by name from
a catalog it has a client for, e.g. Unity Catalog); deltalake asks for the catalog's
latest version (``with_max_catalog_version``), which only a catalog client can give.
"""
from __future__ import annotations

import os

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, SqlCatalog

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture
def published(tmp_path):
    catalog = SqlCatalog(f"sqlite:///{tmp_path / 'catalog.db'}")
    a = DeltaTable.create(str(tmp_path / "a"), SCHEMA, catalog=catalog)
    b = DeltaTable.create(str(tmp_path / "b"), SCHEMA, catalog=catalog)
    a.write(pa.table({"id": [1]}, schema=SCHEMA))
    with catalog.transaction() as tx:
        tx.write(a.uri, pa.table({"id": [2]}, schema=SCHEMA))
        tx.write(b.uri, pa.table({"id": [2]}, schema=SCHEMA))
    yield catalog, a, b
    catalog.dispose()


def _log(t: DeltaTable) -> list[str]:
    return sorted(os.listdir(os.path.join(t.storage.root, "_delta_log")))


def test_delta_spark_refuses_to_read_or_write_without_a_catalog_client(spark, published):
    catalog, a, _b = published
    before = _log(a)
    with pytest.raises(Exception) as read_error:
        spark.read.format("delta").load(a.storage.root).collect()
    print("\nDelta Spark read:", " ".join(str(read_error.value).split())[:600])
    # the protocol's reason, not a side issue (before we listed vacuumProtocolCheck, which Delta
    # Spark requires of catalogManaged, it failed on that mismatch instead)
    assert "DELTA_PATH_BASED_ACCESS_TO_CATALOG_MANAGED_TABLE_BLOCKED" in str(read_error.value)
    with pytest.raises(Exception) as write_error:
        spark.createDataFrame([(9,)], "id long").write.format("delta").mode("append").save(a.storage.root)
    print("Delta Spark write:", " ".join(str(write_error.value).split())[:600])
    assert "DELTA_PATH_BASED_ACCESS_TO_CATALOG_MANAGED_TABLE_BLOCKED" in str(write_error.value)
    assert _log(a) == before
    assert DeltaTable(a.uri, catalog=catalog).snapshot().version == 2


def test_deltalake_refuses_without_the_catalogs_version(published):
    catalog, a, _b = published
    before = _log(a)
    with pytest.raises(deltalake.exceptions.DeltaError, match="catalog"):
        deltalake.DeltaTable(a.storage.root)
    with pytest.raises(deltalake.exceptions.DeltaError, match="catalog"):
        deltalake.write_deltalake(a.storage.root, pa.table({"id": [9]}, schema=SCHEMA), mode="append")
    assert _log(a) == before and DeltaTable(a.uri, catalog=catalog).snapshot().version == 2
