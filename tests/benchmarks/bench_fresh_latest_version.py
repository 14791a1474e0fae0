"""``latest_version()`` of a freshly opened PLAIN table: what a reschedule-mode sensor or a hook pays
on every poke since the catalog-managed check (is the table catalog-managed? then refuse).

Not a test (no assertions on time). Two logs made with ``../shared/tools/gen_log.py``: 5 commits of
1000 adds checkpointed at the latest version (a 5,000-file checkpoint), and 300 commits of one add
checkpointed at the latest version. For each: the median of ``DeltaTable(uri).latest_version()`` on
a new object (listing + protocol check) and of the listing alone (``new_listing()``), in ms.

    python tests/benchmarks/bench_fresh_latest_version.py [--runs 50]
"""
from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GEN_LOG = (ROOT.parent / "shared" / "tools" / "gen_log.py").resolve()


def make(work: Path, name: str, commits: int, adds: int) -> str:
    from airflow_provider_delta.log import DeltaTable
    path = work / name
    subprocess.run([sys.executable, str(GEN_LOG), str(path), "--commits", str(commits), "--adds", str(adds)],
                   check=True, capture_output=True)
    DeltaTable(str(path)).checkpoint()
    return str(path)


def median_ms(call, runs: int) -> float:
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        call()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def main() -> None:
    from airflow_provider_delta.log import DeltaTable
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=50)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        cases = {"5,000-file checkpoint": make(work, "wide", 5, 1000),
                 "300 commits + checkpoint": make(work, "long", 300, 1)}
        for label, uri in cases.items():
            fresh = median_ms(lambda: DeltaTable(uri).latest_version(), args.runs)
            listing = median_ms(lambda: DeltaTable(uri).new_listing(), args.runs)
            print(f"{label}: fresh latest_version() {fresh:.2f} ms (listing alone {listing:.2f} ms)", flush=True)


if __name__ == "__main__":
    main()
