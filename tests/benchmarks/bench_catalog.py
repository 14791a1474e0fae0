"""Group commits against single-table commits through the same SqlCatalog.

Each case commits N times one small log-only append (one AddFile per table) in one
process, through one catalog on SQLite or PostgreSQL, the cases taking turns (this machine
is shared, so its load weighs on all cases alike):

- single: a plain commit to one catalog-managed table (stage, ratify, publish)
- group of 2 / group of 5: one multi-table transaction over 2 or 5 tables
  (stage each, group-ratify in one database transaction, publish each; the participants'
  staged and published files are written in parallel threads)

Reported: median and p90 latency per commit (or group), commits (groups) per second, and
the ratio of a group's median to a single commit's (goal: 2 tables within 2x).

    python tests/benchmarks/bench_catalog.py [--n 100]
"""
from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable, SqlCatalog
from airflow_provider_delta.log.base.commit_actions import AddFile

POSTGRES_URL = os.environ.get("DELTA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")
SCHEMA = pa.schema([("id", pa.int64())])
PROPS = {"delta.checkpointInterval": "1000000"}


def tables(catalog: SqlCatalog, root: str, k: int) -> list[str]:
    return [DeltaTable.create(f"{root}/t{j}", SCHEMA, catalog=catalog, properties=PROPS).uri for j in range(k)]


def interleaved(catalog: SqlCatalog, root: str, n: int) -> dict[str, list[float]]:
    """One single commit, one group of 2, one group of 5, in turn, n times: the machine's load
    (shared with other work) then weighs on every case alike."""
    (single_uri,) = tables(catalog, f"{root}/s", 1)
    single = DeltaTable(single_uri, catalog=catalog)
    groups = {k: tables(catalog, f"{root}/g{k}", k) for k in (2, 5)}
    lat: dict[str, list[float]] = {"single": [], "group of 2": [], "group of 5": []}
    for i in range(n):
        t0 = time.perf_counter()
        with single.transaction() as txn:
            txn.add_file(AddFile(f"f{i}.parquet", 1, {}, 1))
        lat["single"].append(time.perf_counter() - t0)
        for k, uris in groups.items():
            t0 = time.perf_counter()
            with catalog.transaction() as tx:
                for uri in uris:
                    with tx.table(uri).transaction() as txn:
                        txn.add_file(AddFile(f"f{i}.parquet", 1, {}, 1))
            lat[f"group of {k}"].append(time.perf_counter() - t0)
    assert DeltaTable(single_uri, catalog=catalog).latest_version() == n
    assert set(catalog.latest_versions(groups[2] + groups[5]).values()) == {n}
    return lat


def report(name: str, lat: list[float], base: float | None) -> float:
    med = statistics.median(lat)
    p90 = sorted(lat)[int(0.9 * (len(lat) - 1))]
    ratio = f"{med / base:.2f}x" if base else "1.00x"
    print(f"| {name:<24} | {med * 1000:7.1f} | {p90 * 1000:7.1f} | {1 / statistics.mean(lat):7.1f} | {ratio:>6} |")
    return med


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=100)
    a = ap.parse_args()
    print("| case                     | median ms | p90 ms | per s | vs single |")
    print("|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as d:
        for label, url in (("SQLite", f"sqlite:///{d}/catalog.db"), ("PostgreSQL", POSTGRES_URL)):
            try:
                catalog = SqlCatalog(url)
            except Exception as e:  # no server: say so and go on
                print(f"{label} skipped: {type(e).__name__}: {str(e).splitlines()[0]}")
                continue
            lat = interleaved(catalog, f"{d}/{label}", a.n)
            base = report(f"{label} single", lat["single"], None)
            report(f"{label} group of 2", lat["group of 2"], base)
            report(f"{label} group of 5", lat["group of 5"], base)
            catalog.dispose()


if __name__ == "__main__":
    main()
