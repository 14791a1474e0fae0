#!/usr/bin/env python3
"""Benchmark: OPTIMIZE compaction and Z-order, ours vs deltalake (delta-rs), same data, same target size.

Not a test (no assertions on time). One source table is written once per size: ``--files``
appends of random points (``id`` int64, ``x`` and ``y`` float64 in [0, 1), ``s`` a short
string), unpartitioned. Every run copies it and then, in a fresh process (cold: the import
is timed too, as an Airflow task pays it), runs one of

* ``ours compact``:       ``DeltaTable(p).optimize(target_size=T)``
* ``deltalake compact``:  ``deltalake.DeltaTable(p).optimize.compact(target_size=T)``
* ``ours zorder``:        ``DeltaTable(p).optimize(z_order_by=["x", "y"], target_size=T)``
* ``deltalake zorder``:   ``deltalake.DeltaTable(p).optimize.z_order(["x", "y"], target_size=T)``

and reports wall time (import + work), CPU time and the process's peak RSS (``ru_maxrss``),
the median (and min-max) of ``--repeat`` runs, the engines alternating run by run; each result is read back by deltalake to check the rows.

    python tests/benchmarks/bench_optimize.py
    python tests/benchmarks/bench_optimize.py --rows 4000000 --files 400 --target 32mb --repeat 3
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from bench_read import child_env, compile_imports  # noqa: E402  (children's bytecode cache)


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def child(impl: str, op: str, path: str, target: int) -> None:
    c0, t0 = _cpu(), time.perf_counter()
    if impl == "ours":
        sys.path.insert(0, str(ROOT))
        from airflow_provider_delta.log import DeltaTable
        table = DeltaTable(path)
        m = table.optimize(target_size=target) if op == "compact" else \
            table.optimize(z_order_by=["x", "y"], target_size=target)
        added, removed = m["numFilesAdded"], m["numFilesRemoved"]
    else:
        from deltalake import DeltaTable as RsTable
        table = RsTable(path)
        m = table.optimize.compact(target_size=target) if op == "compact" else \
            table.optimize.z_order(["x", "y"], target_size=target)
        added, removed = m["numFilesAdded"], m["numFilesRemoved"]
    t1 = time.perf_counter()
    print(json.dumps({"total_s": t1 - t0, "cpu_s": _cpu() - c0,
                      "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                      "added": added, "removed": removed}))


def make_source(path: Path, rows: int, files: int, partitioned: bool = False) -> None:
    """``files`` appends of random points (``p``: two partitions when ``partitioned``)."""
    import numpy as np
    import pyarrow as pa
    sys.path.insert(0, str(ROOT))
    from airflow_provider_delta.log import DeltaTable
    rng = np.random.default_rng(42)
    per = rows // files
    table = DeltaTable(str(path))
    for i in range(files):
        data = pa.table({"id": pa.array(np.arange(i * per, (i + 1) * per), pa.int64()),
                         "x": rng.random(per), "y": rng.random(per),
                         "s": pa.array([f"k{v}" for v in rng.integers(0, 100_000, per)])})
        if partitioned:
            data = data.append_column("p", pa.array([str(j % 2) for j in range(per)]))
        table.write(data, partition_by=["p"] if partitioned else None)


def _rows(path: Path) -> int:
    from deltalake import DeltaTable as RsTable
    return RsTable(str(path)).to_pyarrow_dataset().count_rows()


def run(impl: str, op: str, source: Path, work: Path, target: int, expected_rows: int,
        env: dict[str, str] | None = None) -> dict:
    dst = work / f"{impl}-{op}"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(source, dst)
    out = subprocess.run([sys.executable, str(HERE), "--child", impl, op, str(dst), str(target)],
                         check=True, capture_output=True, text=True, env=env)
    result = json.loads(out.stdout.strip().splitlines()[-1])
    rows = _rows(dst)
    if rows != expected_rows:
        raise SystemExit(f"{impl} {op}: {rows} rows after OPTIMIZE, expected {expected_rows}")
    shutil.rmtree(dst)
    return result


def _size(text: str) -> int:
    units = {"kb": 1 << 10, "mb": 1 << 20, "gb": 1 << 30}
    t = text.lower()
    for u, m in units.items():
        if t.endswith(u):
            return int(float(t[:-2]) * m)
    return int(t)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=4)
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--files", type=int, default=200)
    ap.add_argument("--target", default="16mb")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--ops", default="compact,zorder")
    args = ap.parse_args()
    if args.child:
        impl, op, path, target = args.child
        child(impl, op, path, int(target))
        return
    target = _size(args.target)
    with tempfile.TemporaryDirectory(prefix="bench-optimize-") as d:
        work = Path(d)
        env = child_env(work)
        compile_imports(env)
        source = work / "source"
        make_source(source, args.rows, args.files)
        size = sum(p.stat().st_size for p in source.glob("*.parquet"))
        print(f"table: {args.rows:,} rows in {args.files} files, {size / 1e6:.1f} MB; target {target:,} bytes")
        for op in args.ops.split(","):
            results = {}
            all_runs: dict[str, list[dict]] = {"ours": [], "deltalake": []}
            for _ in range(args.repeat):        # the engines alternate run by run
                for impl in all_runs:
                    all_runs[impl].append(run(impl, op, source, work, target, args.rows, env))
            for impl, runs in all_runs.items():
                med = {k: statistics.median(r[k] for r in runs) for k in ("total_s", "cpu_s", "peak_mb")}
                med.update({"added": runs[0]["added"], "removed": runs[0]["removed"]})
                results[impl] = med
                spread = {k: f"{min(r[k] for r in runs):.2f}-{max(r[k] for r in runs):.2f}" for k in ("total_s", "cpu_s")}
                print(f"  {op:8s} {impl:10s} total {med['total_s']:.2f}s ({spread['total_s']})  "
                      f"cpu {med['cpu_s']:.2f}s ({spread['cpu_s']})  peak {med['peak_mb']:.0f} MB  "
                      f"files {med['removed']} -> {med['added']}  load {os.getloadavg()[0]:.1f}", flush=True)
            o, t = results["ours"], results["deltalake"]
            print(f"  {op:8s} ratio ours/deltalake: time {o['total_s'] / t['total_s']:.2f}, "
                  f"peak memory {o['peak_mb'] / t['peak_mb']:.2f}", flush=True)


if __name__ == "__main__":
    main()
