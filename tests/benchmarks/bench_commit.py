"""Commit latency of a small append: this package vs delta-rs (``deltalake``), in one run.

Not a test: run it and read the table it prints.

    .venv/bin/python tests/benchmarks/bench_commit.py [--n 50] [--history 100] [--dir /tmp/x]

Four cases, each measured N times on a table that already has ``--history``
commits (so snapshot refresh is part of the price, as it is for a real writer):

- ``log-only``: commit one AddFile of an existing parquet file
  (ours: ``Transaction.add_file``; delta-rs: ``create_write_transaction``);
- ``write 10 rows``: write a 10-row parquet file and commit it
  (ours: ``DeltaTable.write``; delta-rs: ``write_deltalake``).

Both sides open their table object once and keep it (a long-running writer), and
both get automatic checkpoints disabled the same way (a large interval) so the
numbers compare commits, not checkpoints. Reported: median and p90 in ms.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time

import pyarrow as pa
import pyarrow.parquet as pq

import deltalake
from deltalake.transaction import AddAction

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile

PROPS = {"delta.checkpointInterval": "1000000"}


def small_data(i: int) -> pa.Table:
    return pa.table({"id": pa.array(range(i * 10, i * 10 + 10), pa.int64()),
                     "name": [f"row-{j}" for j in range(10)]})


def timed(fn, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out.append((time.perf_counter() - t0) * 1000)
    return out


def prepare_parquet(root: str) -> tuple[str, int, str]:
    path = "data/part-bench.parquet"
    os.makedirs(os.path.join(root, "data"), exist_ok=True)
    pq.write_table(small_data(0), os.path.join(root, path))
    size = os.path.getsize(os.path.join(root, path))
    return path, size, json.dumps({"numRecords": 10})


def ours_setup(root: str, history: int) -> DeltaTable:
    t = DeltaTable.create(root, small_data(0).schema, properties=PROPS)
    t.auto_checkpoint = False
    for i in range(history):
        with t.transaction() as txn:
            txn.add_file(AddFile(f"data/h{i}.parquet", 1, {}, 1))
    return t


def theirs_setup(root: str, history: int) -> deltalake.DeltaTable:
    deltalake.write_deltalake(root, small_data(0).slice(0, 0), configuration=PROPS)
    dt = deltalake.DeltaTable(root)
    for i in range(history):
        dt.create_write_transaction([AddAction(f"data/h{i}.parquet", 1, {}, 1, True, "")], mode="append",
                                    schema=small_data(0).schema)
    return dt


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=50, help="commits measured per case")
    ap.add_argument("--history", type=int, default=100, help="commits already in the table")
    ap.add_argument("--dir", default=None, help="scratch directory (default: a temporary one)")
    args = ap.parse_args()
    base = args.dir or tempfile.mkdtemp(prefix="bench_commit_")
    os.makedirs(base, exist_ok=True)
    results: list[tuple[str, str, list[float]]] = []
    try:
        # log-only commits
        root = os.path.join(base, "ours_log")
        ours = ours_setup(root, args.history)
        path, size, stats = prepare_parquet(root)

        def ours_log(i: int) -> None:
            with ours.transaction() as txn:
                txn.add_file(AddFile(f"data/b{i}.parquet" if i else path, size, {}, 1, True, stats))
        results.append(("log-only commit", "airflow-provider-delta", timed(ours_log, args.n)))

        root = os.path.join(base, "theirs_log")
        theirs = theirs_setup(root, args.history)
        path, size, stats = prepare_parquet(root)
        schema = small_data(0).schema

        def theirs_log(i: int) -> None:
            theirs.create_write_transaction([AddAction(f"data/b{i}.parquet" if i else path, size, {}, 1, True,
                                                       stats)], mode="append", schema=schema)
        results.append(("log-only commit", "deltalake (delta-rs)", timed(theirs_log, args.n)))

        # data + commit
        root = os.path.join(base, "ours_write")
        ours_w = ours_setup(root, args.history)
        results.append(("write 10 rows", "airflow-provider-delta",
                        timed(lambda i: ours_w.write(small_data(i)), args.n)))

        root = os.path.join(base, "theirs_write")
        theirs_w = theirs_setup(root, args.history)
        results.append(("write 10 rows", "deltalake (delta-rs)",
                        timed(lambda i: deltalake.write_deltalake(theirs_w, small_data(i), mode="append"), args.n)))

        # sanity: every commit landed on both sides
        assert ours.latest_version() == args.history + args.n
        assert deltalake.DeltaTable(os.path.join(base, "theirs_log")).version() == args.history + args.n
    finally:
        if args.dir is None:
            shutil.rmtree(base, ignore_errors=True)

    print(f"commit latency, small append: N={args.n} per case, table history={args.history} commits, "
          f"deltalake {deltalake.__version__}, pyarrow {pa.__version__}")
    print(f"{'case':<18} {'implementation':<24} {'median ms':>10} {'p90 ms':>9} {'min ms':>8}")
    for case, impl, xs in results:
        xs_sorted = sorted(xs)
        p90 = xs_sorted[max(0, int(round(0.9 * len(xs_sorted))) - 1)]
        print(f"{case:<18} {impl:<24} {statistics.median(xs):>10.2f} {p90:>9.2f} {xs_sorted[0]:>8.2f}")


if __name__ == "__main__":
    main()
