"""Shallow clone and restore on an object store (break-restore review): the clone's writes, vacuum and
restore never delete or change a source object; a clone at a key that merely starts with the source's
key is allowed, one below it refused with nothing written."""
from __future__ import annotations

import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.log.base.storage import Storage

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
ODD_DAYS = ["2026-01-01", "a b%c", "x=y/z", "é中"]


@pytest.fixture(params=["s3"])
def s3(request, object_stores):
    return object_stores(request.param)


def objects(store, uri) -> dict[str, int]:
    storage = Storage(uri, store.options)
    return {storage.relative(i.path): i.size for i in storage.walk_files("")}


def ids(table) -> list[int]:
    return sorted(table.snapshot().to_pyarrow(columns=["id"]).column("id").to_pylist())


def test_clone_writes_vacuum_and_restore_never_touch_source_objects(s3):
    uri = s3.uri("clonesrc")
    src = DeltaTable.create(uri, SCHEMA, partition_by=["day"], **s3.table_kwargs)
    for i, day in enumerate(ODD_DAYS):
        src.write(pa.table({"id": [i], "day": [day]}, schema=SCHEMA))
    before = objects(s3, uri)

    with pytest.raises(InvalidArgumentError):
        src.clone(uri + "/inner")
    assert objects(s3, uri) == before

    clone = src.clone(uri + "-clone", **s3.table_kwargs)     # a key that starts with the source's key
    assert ids(clone) == [0, 1, 2, 3]
    with pytest.raises(InvalidArgumentError):                 # a clone of the clone inside the original table
        clone.clone(uri + "/day=x/inner", **s3.table_kwargs)
    assert objects(s3, uri) == before
    assert ids(clone.clone(uri + "-second", **s3.table_kwargs)) == [0, 1, 2, 3]   # outside it: fine
    clone.write(pa.table({"id": [9], "day": ["a b%c"]}, schema=SCHEMA), mode="overwrite")
    clone.restore(0)
    assert ids(clone) == [0, 1, 2, 3]
    later = int(time.time() * 1000) + 60_000
    clone.vacuum(retention_hours=0, enforce_retention=False, dry_run=False, now_ms=later)
    clone.cleanup_metadata(now_ms=later, retention_ms=0, truncate=None, force=True)
    assert objects(s3, uri) == before
    assert ids(src) == [0, 1, 2, 3] and ids(clone) == [0, 1, 2, 3]
