"""Eight writers on one managed-commit table: no false corruption from the listing race.

Every commit lists ``_delta_log`` and asks the owner for its un-backfilled tail. With
backfill batch 1 other writers keep moving commits from the owner into ``_delta_log``
between those two calls; the listing must complete itself instead of reporting a
corrupt log. Before the fix this raised CorruptLogError about 5 times in 800 commits.
``DELTA_STRESS_SIZE`` (default 25) sets the commits per writer: 100 reproduces the
issue's 800-commit run.
"""
from __future__ import annotations

import multiprocessing as mp
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, SqlCommitOwner

WRITERS = 8
COMMITS_PER_WRITER = int(os.environ.get("DELTA_STRESS_SIZE", "25"))
CTX = mp.get_context("spawn")


def writer(url, uri, worker, count, barrier, results):
    owner = SqlCommitOwner(url, backfill_batch_size=1)
    table = DeltaTable(uri, commit_owner=owner)
    errors = []
    barrier.wait(120)
    for i in range(count):
        try:
            # generous retries: this tests the listing, not starvation under 8 writers
            table.write(pa.table({"id": [worker * 100_000 + i]}), max_retries=200)
        except Exception as e:  # noqa: BLE001 - every failure is reported by the parent
            errors.append(f"{type(e).__name__}: {e}")
    owner.dispose()
    results.put(errors)


@pytest.mark.slow
@pytest.mark.parametrize("db", ["sqlite", "postgres"])
def test_busy_writers_never_see_a_false_corrupt_log(db, tmp_path, request):
    url = f"sqlite:///{tmp_path}/owner.db" if db == "sqlite" else request.getfixturevalue("postgres_url")
    owner = SqlCommitOwner(url, backfill_batch_size=1)
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), commit_owner=owner)
    barrier, results = CTX.Barrier(WRITERS), CTX.Queue()
    procs = [CTX.Process(target=writer, args=(url, table.uri, w, COMMITS_PER_WRITER, barrier, results))
             for w in range(WRITERS)]
    for p in procs:
        p.start()
    errors = [e for _ in procs for e in results.get(timeout=600)]
    for p in procs:
        p.join(60)
    assert errors == []
    assert table.latest_version() == WRITERS * COMMITS_PER_WRITER
    ids = table.snapshot().to_pyarrow().column("id").to_pylist()
    assert sorted(ids) == sorted(w * 100_000 + i for w in range(WRITERS) for i in range(COMMITS_PER_WRITER))
    owner.dispose()
