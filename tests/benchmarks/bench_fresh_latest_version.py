"""``latest_version()`` of a freshly opened PLAIN table, against deltalake (delta-rs): what a
reschedule-mode sensor or a hook pays on every poke since the catalog-managed check (is the table
catalog-managed? then refuse), which reads the protocol (of a checkpoint, only its ``protocol``
column).

Not a test (no assertions on time). Every run is a fresh interpreter (``_measure.py``): nothing
imported or warmed up before the clock starts, as in an Airflow task. Three engines alternate run
by run on the same log:

* ``ours``: ``DeltaTable(uri).latest_version()``;
* ``deltalake``: ``deltalake.DeltaTable(uri).version()`` (its default open, which loads the file list);
* ``deltalake without_files``: ``deltalake.DeltaTable(uri, without_files=True).version()``.

Logs made with ``../shared/tools/gen_log.py`` (checkpoints written by ours, untimed): a small log
(10 commits x 10 adds, no checkpoint), 300 commits of one add checkpointed at the latest version,
5 commits of 1,000 adds checkpointed at the latest (a 5,000-file checkpoint), and a large log
(1,000 commits x 100 adds, 10 removes: 90,010 live files) checkpointed at the latest. Reported per
case: median (min-max) of total (import + work) and of the work alone, and the ratios of the medians.

    python tests/benchmarks/bench_fresh_latest_version.py [--repeat 7] [--cases small,long,wide,large]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from bench_read import GEN_LOG, _run_once, child_env, compile_imports  # noqa: E402

#: name: (label, gen_log arguments, checkpoint at the latest)
CASES = {"small": ("10 commits x 10 adds, no checkpoint", ["--commits", "10", "--adds", "10"], False),
         "long": ("300 commits x 1 add, checkpoint at the latest", ["--commits", "300", "--adds", "1"], True),
         "wide": ("5 commits x 1,000 adds, checkpoint at the latest", ["--commits", "5", "--adds", "1000"], True),
         "large": ("1,000 commits x 100 adds, 10 removes (90,010 live files), checkpoint at the latest",
                   ["--commits", "1000", "--adds", "100", "--removes", "10"], True)}
ENGINES = (("ours", "ours", "version"), ("deltalake", "deltalake", "open_version"),
           ("deltalake without_files", "deltalake", "version"))


def make(work: Path, name: str, gen_args: list[str], checkpoint: bool) -> Path:
    path = work / name
    subprocess.run([sys.executable, str(GEN_LOG), str(path), *gen_args], check=True, capture_output=True)
    if checkpoint:
        sys.path.insert(0, str(HERE.parents[1]))
        from airflow_provider_delta.log import DeltaTable
        DeltaTable(str(path)).checkpoint()
    return path


def _fmt(values: list[float]) -> str:
    return f"{statistics.median(values) * 1000:.0f} ms ({min(values) * 1000:.0f}-{max(values) * 1000:.0f})"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--cases", default=",".join(CASES))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-fresh-version-") as tmp:
        work = Path(tmp)
        env = child_env(work)
        compile_imports(env)
        for name in args.cases.split(","):
            label, gen_args, checkpoint = CASES[name]
            path = make(work, name, gen_args, checkpoint)
            runs: dict[str, list[dict]] = {e[0]: [] for e in ENGINES}
            for _ in range(args.repeat):
                for key, engine, op in ENGINES:
                    runs[key].append(_run_once(engine, op, path, env))
            versions = {key: rs[0]["result"] for key, rs in runs.items()}
            if len(set(versions.values())) != 1:
                raise SystemExit(f"{name}: engines disagree on the version: {versions}")
            print(f"{label} (version {versions['ours']}; load {' '.join(f'{x:.1f}' for x in os.getloadavg())})",
                  flush=True)
            for key, rs in runs.items():
                print(f"  {key:24s} total {_fmt([r['total_s'] for r in rs])}  work {_fmt([r['work_s'] for r in rs])}"
                      f"  cpu {_fmt([r['cpu_s'] for r in rs])}", flush=True)
            med = {key: statistics.median(r["total_s"] for r in rs) for key, rs in runs.items()}
            work_med = {key: statistics.median(r["work_s"] for r in rs) for key, rs in runs.items()}
            for other in ("deltalake", "deltalake without_files"):
                print(f"  ratio ours/{other}: total {med['ours'] / med[other]:.2f}, "
                      f"work {work_med['ours'] / work_med[other]:.2f}", flush=True)


if __name__ == "__main__":
    main()
