#!/usr/bin/env python3
"""Benchmark: checkpoint writing, ours vs deltalake (delta-rs), on synthetic logs.

Not a test (no assertions on time). For each size it generates a log with
``../shared/tools/gen_log.py`` (``--commits size/1000 --adds 1000``: JSON commits
only, no data files), then, each in a fresh subprocess so the peak memory
(``ru_maxrss``) is that run's alone:

* ours:      ``DeltaTable(path).snapshot()`` then ``write_checkpoint``;
* deltalake: ``deltalake.DeltaTable(path)`` then ``create_checkpoint()``.

Both start from the JSON commits (checkpoints and ``_last_checkpoint`` are removed
before every run). After our run the checkpoint is read back by deltalake (alone,
JSON commits hidden) to check it holds the same number of files.

    python tests/benchmarks/bench_checkpoint.py                  # 100k and 1M files
    python tests/benchmarks/bench_checkpoint.py --sizes 100000 --repeat 3 --parts 4
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
GEN_LOG = (ROOT.parent / "shared" / "tools" / "gen_log.py").resolve()
LOG = "_delta_log"


def _maxrss_mb() -> float:
    # Linux reports KiB, macOS bytes
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024 / 1024 if sys.platform == "darwin" else rss / 1024


def child(impl: str, path: str, parts: int | None) -> None:
    """Runs in the measured subprocess; prints one JSON line."""
    t0 = time.perf_counter()
    if impl == "ours":
        sys.path.insert(0, str(ROOT))
        from airflow_provider_delta.log import DeltaTable
        from airflow_provider_delta.log.maintenance.checkpoint import write_checkpoint
        table = DeltaTable(path)
        snap = table.snapshot()
        n_files = snap.files().num_rows
        load_rss = _maxrss_mb()
        t1 = time.perf_counter()
        write_checkpoint(table, snapshot=snap, parts=parts)
    else:
        from deltalake import DeltaTable as RsTable
        table = RsTable(path)
        n_files = len(table.file_uris())
        load_rss = _maxrss_mb()
        t1 = time.perf_counter()
        table.create_checkpoint()
    t2 = time.perf_counter()
    print(json.dumps({"load_s": t1 - t0, "checkpoint_s": t2 - t1, "total_s": t2 - t0,
                      "maxrss_mb": _maxrss_mb(), "load_rss_mb": load_rss, "files": n_files}))


def _clean_checkpoints(path: Path) -> None:
    for name in os.listdir(path / LOG):
        if ".checkpoint." in name or name == "_last_checkpoint" or name.endswith(".tmp"):
            os.remove(path / LOG / name)


def _run(impl: str, path: Path, parts: int | None) -> dict:
    _clean_checkpoints(path)
    cmd = [sys.executable, str(HERE), "--child", impl, str(path)]
    if parts:
        cmd += ["--parts", str(parts)]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def generate(work: Path, size: int) -> Path:
    """``work/log_<size>``: a gen_log.py log of ``size`` live files (1000 adds per commit), made once."""
    path = work / f"log_{size}"
    if not (path / LOG).is_dir():
        t = time.perf_counter()
        subprocess.run([sys.executable, str(GEN_LOG), str(path), "--commits", str(max(size // 1000, 1)),
                        "--adds", str(min(size, 1000))], check=True, capture_output=True)
        print(f"generated {size} files in {time.perf_counter() - t:.1f}s at {path}", flush=True)
    return path


def _verify_with_deltalake(path: Path, expected_files: int) -> str:
    """Hide the JSON commits before the checkpoint and let deltalake read our checkpoint alone."""
    from deltalake import DeltaTable as RsTable
    info = json.loads((path / LOG / "_last_checkpoint").read_text())
    v = info["version"]
    hidden = path / "_hidden_commits"
    hidden.mkdir(exist_ok=True)
    moved = []
    for name in os.listdir(path / LOG):
        if name.endswith(".json") and int(name[:20]) < v:
            os.rename(path / LOG / name, hidden / name)
            moved.append(name)
    try:
        t = RsTable(str(path))
        ok = t.version() == v and len(t.file_uris()) == expected_files
        return "ok" if ok else f"MISMATCH (version {t.version()}, {len(t.file_uris())} files)"
    finally:
        for name in moved:
            os.rename(hidden / name, path / LOG / name)
        hidden.rmdir()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("IMPL", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="100000,1000000", help="live files per table, comma separated")
    ap.add_argument("--repeat", type=int, default=1, help="runs per implementation (best time is reported)")
    ap.add_argument("--parts", type=int, default=None, help="also write our checkpoint in this many parts")
    ap.add_argument("--workdir", default=None, help="where generated logs go (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated logs")
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1], a.parts)
        return
    work = Path(a.workdir or tempfile.mkdtemp(prefix="bench_checkpoint_"))
    work.mkdir(parents=True, exist_ok=True)
    results = []
    try:
        for size in [int(s) for s in a.sizes.split(",") if s]:
            path = generate(work, size)
            variants = [("ours", None), ("deltalake", None)] + ([("ours", a.parts)] if a.parts else [])
            for impl, parts in variants:
                runs = [_run(impl, path, parts) for _ in range(a.repeat)]
                best = min(runs, key=lambda r: r["total_s"])
                best["maxrss_mb"] = max(r["maxrss_mb"] for r in runs)
                best["load_rss_mb"] = max(r["load_rss_mb"] for r in runs)
                label = impl if not parts else f"{impl} ({parts} parts)"
                check = _verify_with_deltalake(path, best["files"]) if impl == "ours" else "-"
                results.append((size, label, best, check))
                print(f"{size:>9} {label:<16} load {best['load_s']:7.2f}s  checkpoint {best['checkpoint_s']:7.2f}s  "
                      f"total {best['total_s']:7.2f}s  peak {best['maxrss_mb']:6.0f} MB (after load "
                      f"{best['load_rss_mb']:6.0f} MB)  deltalake-read: {check}",
                      flush=True)
            _clean_checkpoints(path)
    finally:
        if not a.keep and not a.workdir:
            shutil.rmtree(work, ignore_errors=True)
    print("\nratios ours / deltalake (lower is better for us):")
    for size in sorted({r[0] for r in results}):
        ours = next(r[2] for r in results if r[0] == size and r[1] == "ours")
        rs = next(r[2] for r in results if r[0] == size and r[1] == "deltalake")
        print(f"{size:>9} files: checkpoint time {ours['checkpoint_s'] / rs['checkpoint_s']:5.2f}x, "
              f"load+checkpoint {ours['total_s'] / rs['total_s']:5.2f}x, peak memory "
              f"{ours['maxrss_mb'] / rs['maxrss_mb']:5.2f}x")


if __name__ == "__main__":
    main()
