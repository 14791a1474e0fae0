"""Read-path benchmark: time and peak memory from opening a table to its file list as Arrow.

Compares this project's log reader with deltalake (delta-rs) in the same run, on
logs written by ../shared/tools/gen_log.py:

  (a) 1,000 commits x 100 adds, JSON only
  (b) the same with a checkpoint at the end (written by deltalake)
  (c) a checkpoint of 1,000,000 files plus 100 commits of 1,000 adds

Every measurement runs in a fresh process (warm OS cache, cold interpreter, all
imports done before the clock starts); the engines alternate run by run and the
median of --repeat runs is reported. Generated logs are cached in --workdir.

    python tests/benchmarks/bench_read.py [--cases a,b,c] [--repeat 3] [--workdir /tmp/delta-bench]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
GEN_LOG = HERE.parents[2] / "shared" / "tools" / "gen_log.py"


def gen(path: Path, commits: int, adds: int, extra: list[str] = ()) -> None:
    if (path / "_delta_log").is_dir():
        return
    subprocess.run([sys.executable, str(GEN_LOG), str(path), "--commits", str(commits), "--adds", str(adds),
                    *extra], check=True, stdout=subprocess.DEVNULL)


def deltalake_checkpoint(path: Path, version: int | None = None) -> None:
    import deltalake
    marker = path / f".checkpointed-{version}"
    if marker.exists():
        return
    dt = deltalake.DeltaTable(str(path), version=version) if version is not None else deltalake.DeltaTable(str(path))
    dt.create_checkpoint()
    marker.touch()


def _run_once(engine: str, op: str, path: Path) -> dict:
    out = subprocess.run([sys.executable, str(HERE / "_measure.py"), engine, op, str(path)],
                         check=True, capture_output=True, text=True).stdout.strip().splitlines()[-1]
    return json.loads(out)


def measure_pair(op: str, path: Path, repeat: int) -> tuple[dict, dict]:
    """Alternate the engines run by run, so slow phases of a noisy machine hit both alike."""
    runs: dict[str, list[dict]] = {"ours": [], "deltalake": []}
    for _ in range(repeat):
        for engine in runs:
            runs[engine].append(_run_once(engine, op, path))

    def med(rs: list[dict]) -> dict:
        return {"seconds": statistics.median(r["seconds"] for r in rs),
                "peak_mb": statistics.median(r["peak_mb"] for r in rs), "result": rs[0]["result"]}
    return med(runs["ours"]), med(runs["deltalake"])


def prepare(case: str, workdir: Path) -> Path:
    if case == "a":
        p = workdir / "a_1000x100_json"
        gen(p, 1000, 100)
    elif case == "b":
        p = workdir / "b_1000x100_checkpoint"
        if not p.exists():
            gen(workdir / "a_1000x100_json", 1000, 100)
            shutil.copytree(workdir / "a_1000x100_json", p)
        deltalake_checkpoint(p)
    elif case == "c":
        p = workdir / "c_1m_checkpoint_plus_100"
        gen(p, 1100, 1000)          # deterministic: the first 1000 commits hold 1,000,000 adds
        deltalake_checkpoint(p, 999)
    else:
        raise SystemExit(f"unknown case {case}")
    return p


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="a,b,c")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--workdir", default=os.environ.get("DELTA_BENCH_DIR", "/tmp/delta-bench"))
    a = ap.parse_args()
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    rows = []
    for case in a.cases.split(","):
        path = prepare(case, workdir)
        ours, theirs = measure_pair("files", path, a.repeat)
        if ours["result"] != theirs["result"]:
            raise SystemExit(f"case {case}: file counts differ: ours {ours['result']}, deltalake {theirs['result']}")
        rows.append((case, ours, theirs))
    print(f"{'case':<6}{'files':>10}{'ours s':>10}{'delta-rs s':>12}{'time ratio':>12}"
          f"{'ours MB':>10}{'delta-rs MB':>13}{'mem ratio':>11}")
    for case, o, t in rows:
        print(f"{case:<6}{o['result']:>10}{o['seconds']:>10.3f}{t['seconds']:>12.3f}"
              f"{o['seconds'] / t['seconds']:>12.2f}{o['peak_mb']:>10.0f}{t['peak_mb']:>13.0f}"
              f"{(o['peak_mb'] / t['peak_mb']) if t['peak_mb'] else float('nan'):>11.2f}")


if __name__ == "__main__":
    main()
