"""Managed-commit tables written by several processes at once through DeltaTable.

End to end: DeltaTable.write in each spawned process goes through the transaction,
which commits through the SQL commit owner and retries lost races. Afterwards
every row is in the table exactly once and ``_delta_log`` is contiguous.
"""
from __future__ import annotations

import multiprocessing as mp
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_owner import SqlCommitOwner

WRITES_PER_PROCESS = max(1, int(os.environ.get("DELTA_STRESS_SIZE", "25")) // 5)
PROCESSES = 3
CTX = mp.get_context("spawn")


# Both batch sizes on both databases are covered by the owner's own tests; here one each.
@pytest.fixture(params=[("sqlite", 3), ("postgres", 1)], ids=["sqlite-batch3", "postgres-batch1"])
def db_and_batch(request, tmp_path):
    backend, batch = request.param
    if backend == "sqlite":
        return f"sqlite:///{tmp_path}/owner.db", batch
    return request.getfixturevalue("postgres_url"), batch


def writer(url, uri, worker, count, batch, barrier):
    owner = SqlCommitOwner(url, backfill_batch_size=batch)
    table = DeltaTable(uri, commit_owner=owner)
    barrier.wait(120)
    for i in range(count):
        table.write(pa.table({"id": [worker * 1000 + i]}))
    owner.dispose()


def test_concurrent_writers_through_the_owner(db_and_batch, tmp_path):
    db_url, batch = db_and_batch
    owner = SqlCommitOwner(db_url, backfill_batch_size=batch)
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), commit_owner=owner)
    barrier = CTX.Barrier(PROCESSES)
    procs = [CTX.Process(target=writer, args=(db_url, table.uri, w, WRITES_PER_PROCESS, batch, barrier))
             for w in range(PROCESSES)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        if p.is_alive():
            p.kill()
            p.join()
    assert [p.exitcode for p in procs] == [0] * PROCESSES
    total = PROCESSES * WRITES_PER_PROCESS
    assert table.latest_version() == total
    expected = sorted(w * 1000 + i for w in range(PROCESSES) for i in range(WRITES_PER_PROCESS))
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == expected
    # in-commit timestamps: commitInfo first, strictly increasing across all writers
    icts = [table.read_commit(v)[0]["commitInfo"]["inCommitTimestamp"] for v in range(total + 1)]
    assert all(b > a for a, b in zip(icts, icts[1:])), icts
    # readers without the owner (deltalake, plain DeltaTable) see the backfilled prefix ...
    import deltalake
    prefix = DeltaTable(table.uri).latest_version()
    assert total - batch < prefix <= total
    theirs = deltalake.DeltaTable(table.uri)
    assert theirs.version() == prefix
    ours_prefix = table.snapshot(version=prefix).to_pyarrow().column("id").to_pylist()
    assert sorted(theirs.to_pyarrow_table().column("id").to_pylist()) == sorted(ours_prefix)
    # ... and everything once it is backfilled
    table.backfill()
    plain = DeltaTable(table.uri)
    assert plain.latest_version() == total
    assert sorted(plain.snapshot().to_pyarrow().column("id").to_pylist()) == expected
    theirs = deltalake.DeltaTable(table.uri)
    assert theirs.version() == total
    assert sorted(theirs.to_pyarrow_table().column("id").to_pylist()) == expected
    owner.dispose()
