"""Change data feed: our ``DeltaTable.changes`` against deltalake's ``load_cdf`` on the same table.

deltalake writes the table with the feed on: ``--appends`` commits of ``--rows`` rows each, then
``--updates`` UPDATEs of 500 rows (each writes cdc files with pre- and post-images). Each case runs
in a fresh process, alternating engines, median of ``--runs``; the work (table open + feed read) is
timed apart from the import.

    python tests/benchmarks/bench_change_feed.py [--appends 60] [--rows 10000] [--updates 10] [--runs 5]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

CASE = r'''
import json, sys, time
t0 = time.perf_counter()
import pyarrow as pa
if sys.argv[1] == "ours":
    from airflow_provider_delta.log import DeltaTable
    t1 = time.perf_counter()
    n = DeltaTable(sys.argv[2]).changes(0).num_rows
else:
    from deltalake import DeltaTable
    t1 = time.perf_counter()
    n = pa.table(DeltaTable(sys.argv[2]).load_cdf(starting_version=0).read_all()).num_rows
t2 = time.perf_counter()
print(json.dumps({"rows": n, "work": t2 - t1, "total": t2 - t0}))
'''


def build(path: Path, appends: int, rows: int, updates: int) -> None:
    import pyarrow as pa
    from deltalake import DeltaTable, write_deltalake
    for i in range(appends):
        ids = pa.array(range(i * rows, (i + 1) * rows), pa.int64())
        write_deltalake(str(path), pa.table({"id": ids, "v": pa.array(["x"] * rows)}), mode="append",
                        configuration={"delta.enableChangeDataFeed": "true"} if i == 0 else None)
    for k in range(updates):
        lo = k * 2 * rows
        DeltaTable(str(path)).update(updates={"v": "'u'"}, predicate=f"id >= {lo} AND id < {lo + 500}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--appends", type=int, default=60)
    ap.add_argument("--rows", type=int, default=10_000)
    ap.add_argument("--updates", type=int, default=10)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--workdir", default=os.environ.get("DELTA_BENCH_DIR", "/tmp/delta-bench"))
    a = ap.parse_args()
    path = Path(a.workdir) / f"cdf_{a.appends}x{a.rows}_{a.updates}u"
    if not (path / "_delta_log").is_dir():
        build(path, a.appends, a.rows, a.updates)
    results: dict[str, list[dict]] = {"ours": [], "deltalake": []}
    for _ in range(a.runs):
        for engine in results:
            out = subprocess.run([sys.executable, "-c", CASE, engine, str(path)], check=True, capture_output=True,
                                 text=True).stdout
            results[engine].append(json.loads(out.strip().splitlines()[-1]))
    rows = {e: {r["rows"] for r in rs} for e, rs in results.items()}
    assert rows["ours"] == rows["deltalake"] and len(rows["ours"]) == 1, rows
    med = {e: {k: statistics.median(r[k] for r in rs) for k in ("work", "total")} for e, rs in results.items()}
    print(f"commits={a.appends + a.updates} change rows={rows['ours'].pop()} runs={a.runs}")
    for key in ("work", "total"):
        print(f"{key}: ours={med['ours'][key]:.3f} s deltalake={med['deltalake'][key]:.3f} s "
              f"ratio={med['ours'][key] / med['deltalake'][key]:.2f}")


if __name__ == "__main__":
    main()
