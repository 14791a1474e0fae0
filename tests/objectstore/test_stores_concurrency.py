"""Concurrent appenders on each object store: no commit lost, none duplicated.

Writers are separate processes, each with its own driver instance, as Airflow tasks
would be. S3 and Azure commit through the store's conditional create; on the GCS
emulator (which overwrites despite the precondition) the writers go through the SQL
commit owner, as docs/guides/object-stores.md advises for such stores. ``DELTA_STRESS_SIZE`` sets the appends
per writer and turns on the full 8 writers (e.g. ``DELTA_STRESS_SIZE=25`` for 8 x 25);
by default CI runs 3 x 4.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, SqlCommitOwner

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "log"))
from test_busy_blind_appends import run_appenders  # noqa: E402 - the same writers as the local stress test

STRESS = os.environ.get("DELTA_STRESS_SIZE")
WRITERS = 8 if STRESS else 3
COMMITS = int(STRESS or 4)
SCHEMA = pa.schema([("id", pa.int64())])


@pytest.mark.slow
def test_concurrent_appends_all_land_once(store, tmp_path):
    uri = store.uri("busy")
    owner_url = None if store.conditional_create else f"sqlite:///{tmp_path}/owner.db"
    owner = SqlCommitOwner(owner_url, backfill_batch_size=1) if owner_url else None
    DeltaTable.create(uri, SCHEMA, commit_owner=owner, **store.table_kwargs)
    assert run_appenders(uri, owner_url, WRITERS, COMMITS, store.table_kwargs) == []
    reader = DeltaTable(uri, commit_owner=owner, **store.table_kwargs)
    total = WRITERS * COMMITS
    assert reader.latest_version() == total
    paths = reader.snapshot().files().column("path").to_pylist()
    assert sorted(paths) == sorted(f"w{w}-{i}.parquet" for w in range(WRITERS) for i in range(COMMITS))
    adds_per_version = [sum("add" in a for a in c.actions) for c in reader.commits_since(0).commits]
    assert adds_per_version == [1] * total                   # one append per version, none twice
    if store.deltalake_options is not None:
        import deltalake
        dt = deltalake.DeltaTable(uri, storage_options=store.deltalake_options)
        assert dt.version() == total
        assert sorted(dt.file_uris()) == sorted(f"{uri}/{p}" for p in paths)
    if owner is not None:
        owner.dispose()
