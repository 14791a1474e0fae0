"""Commits per second: managed commits through the SQL commit owner vs plain filesystem commits.

Each case commits N small log-only appends (one AddFile each) to a fresh table, in one
process, with the same Transaction code; only the commit path differs:

- filesystem: put-if-absent of _delta_log/<v>.json
- in-memory owner (batch 1): the owner protocol without a database
- SQLite owner, backfill batch 1 and 10 (the embedded default)
- PostgreSQL owner, backfill batch 1 and 10 (DELTA_TEST_POSTGRES_URL; skipped if unreachable)

    python tests/benchmarks/bench_managed.py [--n 200]
"""
from __future__ import annotations

import argparse
import os
import tempfile
import time
import uuid

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable, InMemoryCommitOwner, SqlCommitOwner
from airflow_provider_delta.log.base.commit_actions import AddFile

POSTGRES_URL = os.environ.get("DELTA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
SCHEMA = pa.schema([("id", pa.int64())])


def run(root: str, owner, n: int) -> float:
    table = DeltaTable.create(root, SCHEMA, commit_owner=owner, properties={"delta.checkpointInterval": "1000000"})
    t0 = time.perf_counter()
    for i in range(n):
        with table.transaction() as txn:
            txn.add_file(AddFile(f"f{i}.parquet", 1, {}, 1))
    elapsed = time.perf_counter() - t0
    if owner is not None:
        table.backfill()
    assert DeltaTable(root).latest_version() == n  # everything landed (and is backfilled)
    return n / elapsed


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    a = ap.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as d:
        rows.append(("filesystem", run(f"{d}/fs", None, a.n)))
        rows.append(("in-memory owner, batch 1", run(f"{d}/mem", InMemoryCommitOwner(), a.n)))
        for batch in (1, 10):
            owner = SqlCommitOwner(f"sqlite:///{d}/owner.db", backfill_batch_size=batch)
            rows.append((f"SQLite owner, batch {batch}", run(f"{d}/sqlite{batch}", owner, a.n)))
        for batch in (1, 10):
            try:
                owner = SqlCommitOwner(POSTGRES_URL, backfill_batch_size=batch)
                owner.get_commits(str(uuid.uuid4()), 0)
            except Exception as e:  # no server: say so and go on
                print(f"PostgreSQL skipped: {type(e).__name__}: {str(e).splitlines()[0]}")
                break
            rows.append((f"PostgreSQL owner, batch {batch}", run(f"{d}/pg{batch}", owner, a.n)))
    base = rows[0][1]
    print(f"{'commit path':<30}{'commits/s':>12}{'vs filesystem':>16}   (N={a.n} log-only appends)")
    for name, rate in rows:
        print(f"{name:<30}{rate:>12.0f}{rate / base:>15.2f}x")


if __name__ == "__main__":
    main()
