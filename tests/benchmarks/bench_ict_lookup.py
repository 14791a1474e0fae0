"""Timestamp -> version on a 10,000-commit in-commit-timestamp table: how many commit files are read.

The lookup is a binary search over in-commit timestamps, so it should read about
log2(10,000) ~ 14 commit files, not 10,000. The table gets a checkpoint at the end
(as a real table would have many), so opening it reads few commits; the counts
below are for the lookups themselves, on a table object that already holds its
latest snapshot. Also times the same lookups with deltalake (which loads history).

    python tests/benchmarks/bench_ict_lookup.py [--commits 10000] [--workdir /tmp/delta-bench]
"""
from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEN_LOG = HERE.parents[2] / "shared" / "tools" / "gen_log.py"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--commits", type=int, default=10_000)
    ap.add_argument("--workdir", default=os.environ.get("DELTA_BENCH_DIR", "/tmp/delta-bench"))
    a = ap.parse_args()
    path = Path(a.workdir) / f"ict_{a.commits}"
    if not (path / "_delta_log").is_dir():
        subprocess.run([sys.executable, str(GEN_LOG), str(path), "--commits", str(a.commits), "--adds", "1",
                        "--ict"], check=True, stdout=subprocess.DEVNULL)
    from airflow_provider_delta.log import DeltaTable
    table = DeltaTable(str(path))
    if table.snapshot().segment.checkpoint_version is None:
        table.checkpoint()
    table = DeltaTable(str(path))
    table.snapshot()
    reads: list[str] = []
    real = table.storage.read_bytes

    def counting(p, *args, **kw):
        reads.append(p)
        return real(p, *args, **kw)

    table.storage.read_bytes = counting  # observe only: count commit files opened
    import builtins
    real_open = builtins.open

    def counting_open(f, *args, **kw):
        if isinstance(f, str) and f.endswith(".json") and "_delta_log" in f:
            reads.append(f)
        return real_open(f, *args, **kw)

    builtins.open = counting_open
    start = 1_700_000_000_000
    probes = [start + 1000 * k + 500 for k in (1, a.commits // 3, a.commits // 2, a.commits - 2)]
    worst, total_t = 0, 0.0
    try:
        for ts in probes:
            reads.clear()
            t0 = time.perf_counter()
            v = table.version_at(ts)
            total_t += time.perf_counter() - t0
            assert v == (ts - start) // 1000 - 1, (ts, v)
            worst = max(worst, len(reads))
    finally:
        builtins.open = real_open
    import deltalake
    t0 = time.perf_counter()
    dt = deltalake.DeltaTable(str(path))
    for ts in probes:
        from datetime import datetime, timezone
        dt.load_as_version(datetime.fromtimestamp(ts / 1000, tz=timezone.utc))
    theirs = time.perf_counter() - t0
    print(f"commits={a.commits} log2={math.log2(a.commits):.1f} max commit files read per lookup={worst} "
          f"ours={total_t / len(probes) * 1000:.1f} ms/lookup deltalake={theirs / len(probes) * 1000:.1f} ms/lookup")


if __name__ == "__main__":
    main()
