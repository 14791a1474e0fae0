"""Long logs made fast, for poll-cost tests and the sensor-poll benchmark.

A table of 100,000 versions written through the library takes far too long for a test.
The log made here is still a valid Delta log: a real table is created and written
with a few commits and checkpointed by the library; the versions after it are
commits that hold only ``commitInfo`` (they change nothing, as a blind append of no
files would). Because they change nothing, the table's state after the last of
them equals the state at the checkpoint, so the same checkpoint file is also a
correct checkpoint of the last version but one.
"""
from __future__ import annotations

import json

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.names import LAST_CHECKPOINT, commit_path
from airflow_provider_delta.log.base.storage import Storage

SCHEMA = pa.schema([("id", pa.int64())])
BASE_VERSIONS = 3          # create + 2 writes, checkpointed at version 2


def commit_info_only(version: int) -> bytes:
    return (json.dumps({"commitInfo": {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE",
                                       "operationParameters": {"mode": "Append"}}}) + "\n").encode()


def make_long_table(uri: str, versions: int, table_kwargs: dict, checkpoint_near_end: bool = False) -> DeltaTable:
    """A table whose latest version is ``versions - 1``; optionally with a checkpoint at the
    version before the latest (a "recent checkpoint")."""
    table = DeltaTable.create(uri, SCHEMA, **table_kwargs)
    table.auto_checkpoint = False
    for i in range(BASE_VERSIONS - 1):
        table.write(pa.table({"id": [i]}, schema=SCHEMA))
    table.checkpoint()
    storage: Storage = table.storage
    blobs = {storage.path(commit_path(v)): commit_info_only(v) for v in range(BASE_VERSIONS, versions)}
    if storage.is_local:
        for path, data in blobs.items():
            with open(path, "wb") as f:
                f.write(data)
    elif blobs:
        storage.fs.pipe(blobs)                 # concurrent uploads where the driver batches them
    if checkpoint_near_end:
        add_recent_checkpoint(storage, versions - 1)
    table = DeltaTable(uri, **table_kwargs)
    table.auto_checkpoint = False          # a checkpoint would replay every fabricated commit
    return table


def add_recent_checkpoint(storage: Storage, latest: int) -> None:
    """A checkpoint at ``latest - 1`` (and ``_last_checkpoint`` naming it): the base checkpoint's
    file, which is correct there because the fabricated commits change nothing."""
    v = latest - 1
    if v < BASE_VERSIONS:
        return
    base = f"_delta_log/{BASE_VERSIONS - 1:020d}.checkpoint.parquet"
    storage.write_atomic(f"_delta_log/{v:020d}.checkpoint.parquet", storage.read_bytes(base))
    hint = json.loads(storage.read_bytes(LAST_CHECKPOINT))
    storage.write_atomic(LAST_CHECKPOINT, json.dumps({**hint, "version": v}).encode())
