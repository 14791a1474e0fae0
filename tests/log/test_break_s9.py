"""Break review s9 of the late s8 fixes (log layer): findings as strict xfails, fixed ones as plain tests."""
from __future__ import annotations

import json
import os
import time

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.log import AddFile, DeltaTable, SqlCatalog

SCHEMA = pa.schema([("id", pa.int64())])
DAY_S = 86_400


def _log_dir(t: DeltaTable) -> str:
    return os.path.join(t.storage.root, "_delta_log")


# ------------------------------------------------------------------ clone of a catalog-managed table
def test_a_catalog_managed_table_clones_into_a_plain_table_that_claims_no_catalog(tmp_path):
    """The clone docs promise a plain filesystem table; the clone kept multiTableTransaction-dev (a
    writer feature only a catalog serves), so committing version 0 was refused, and it copied the
    source's io.airflowproviderdelta.catalogId, claiming the source's catalog."""
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db", publish_grace_ms=0)
    src = DeltaTable.create(str(tmp_path / "src"), SCHEMA, catalog=catalog)
    DeltaTable(src.uri, catalog=catalog).write(pa.table({"id": [1, 2]}))
    clone = DeltaTable(src.uri, catalog=catalog).clone(str(tmp_path / "clone"))
    snap = DeltaTable(clone.uri).snapshot()                     # opened without any catalog
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2]
    features = set(snap.protocol.reader_features or ()) | set(snap.protocol.writer_features or ())
    assert not any(f.startswith(("catalog", "multiTable")) for f in features)
    assert "io.airflowproviderdelta.catalogId" not in snap.metadata.configuration
    assert snap.metadata.configuration.get("delta.enableInCommitTimestamps") == "true"
    DeltaTable(clone.uri).write(pa.table({"id": [3]}))          # a plain table: anyone may commit
    assert sorted(DeltaTable(clone.uri).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]
    assert not catalog.manages(clone.uri)
