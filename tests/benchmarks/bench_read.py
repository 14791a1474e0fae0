"""Read-path benchmark from a cold process: open a table and list its files as Arrow.

Ours ``DeltaTable(p).snapshot().files()``, deltalake (delta-rs)
``DeltaTable(p).get_add_actions(flatten=False)``, in the same run. Every run is a
fresh interpreter with no warm-up other than importing the library (``_measure.py``),
as an Airflow task or a reschedule poke starts; the engines alternate run by run and
the median of ``--repeat`` runs is reported, import time apart from the work.

Cases (logs from ``../shared/tools/gen_log.py``; 1,000 commits x 100 adds, 10 removes
per commit: 90,010 live files):

  json         JSON commits only
  dl_cp        + checkpoint written by deltalake
  spark_json   + checkpoint written by Delta Spark, stats as JSON strings
  spark_struct + checkpoint written by Delta Spark, JSON stats plus stats_parsed and
               partitionValues_parsed
  ours_cp      + checkpoint written by us
  1m           a 1,000,000-file checkpoint (deltalake's) plus 100 commits of 1,000 adds

The Delta Spark checkpoints are written by ``spark_checkpoint.py`` in a set-up step
(needs ``make jars``; skipped with a note when the jars are missing). Generated logs
are kept in ``--workdir``.

    python tests/benchmarks/bench_read.py [--cases json,dl_cp,...] [--repeat 5] [--workdir DIR]
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

CASES = ["json", "dl_cp", "spark_json", "spark_struct", "ours_cp", "1m"]
#: target ratio ours/deltalake of each case's end-to-end time (and, for 1m, of peak memory)
TARGETS = {"json": 0.5, "dl_cp": 0.7, "spark_json": 0.7, "spark_struct": 0.7, "ours_cp": 0.5, "1m": 1.0}


def gen(path: Path, commits: int, adds: int, removes: int = 0) -> None:
    if (path / "_delta_log").is_dir():
        return
    subprocess.run([sys.executable, str(GEN_LOG), str(path), "--commits", str(commits), "--adds", str(adds),
                    "--removes", str(removes)], check=True, stdout=subprocess.DEVNULL)


def _copy_of_json_log(workdir: Path, name: str) -> tuple[Path, bool]:
    """(path, already prepared?) of a copy of the JSON-only log to checkpoint."""
    p = workdir / name
    marker = p / ".prepared"
    if marker.exists():
        return p, True
    if p.exists():
        shutil.rmtree(p)
    shutil.copytree(prepare("json", workdir), p)
    return p, False


def prepare(case: str, workdir: Path) -> Path | None:
    """The table of ``case``, built once (None when it cannot be built here)."""
    if case == "json":
        p = workdir / "json_1000x100_r10"
        gen(p, 1000, 100, 10)
        return p
    if case == "1m":
        p = workdir / "c_1m_checkpoint_plus_100"
        gen(p, 1100, 1000)          # deterministic: the first 1000 commits hold 1,000,000 adds
        marker = p / ".prepared"
        if not marker.exists():
            import deltalake
            deltalake.DeltaTable(str(p), version=999).create_checkpoint()
            marker.touch()
        return p
    p, done = _copy_of_json_log(workdir, case)
    if done:
        return p
    if case == "dl_cp":
        import deltalake
        deltalake.DeltaTable(str(p)).create_checkpoint()
    elif case == "ours_cp":
        subprocess.run([sys.executable, "-c", "import sys; from airflow_provider_delta.log import DeltaTable; "
                        "DeltaTable(sys.argv[1]).checkpoint()", str(p)], check=True)
    elif case in ("spark_json", "spark_struct"):
        cmd = [sys.executable, str(HERE / "spark_checkpoint.py"), str(p)] + (["--struct"] if case == "spark_struct"
                                                                           else [])
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"case {case}: Delta Spark could not write the checkpoint (make jars?):\n"
                  f"{proc.stderr[-1500:]}", file=sys.stderr)
            return None
    else:
        raise SystemExit(f"unknown case {case}")
    (p / ".prepared").touch()
    return p


def child_env(workdir: Path) -> dict[str, str]:
    """The children's environment: bytecode cached, as in any installed package.

    With ``PYTHONDONTWRITEBYTECODE`` (set in some shells) an editable install would
    compile every module of ours on each start, while deltalake's come precompiled from
    pip; a cache directory of the benchmark's own gives both engines the same footing.
    """
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(workdir / "pycache")
    return env


def compile_imports(env: dict[str, str]) -> None:
    """Fill the bytecode cache (an install step, not a warm-up: no run reuses a process)."""
    subprocess.run([sys.executable, "-c", "import airflow_provider_delta.log, deltalake, pyarrow"],
                   check=True, env=env)


def _run_once(engine: str, op: str, path: Path, env: dict[str, str]) -> dict:
    proc = subprocess.run([sys.executable, str(HERE / "_measure.py"), engine, op, str(path)],
                          check=True, capture_output=True, text=True, env=env)
    return json.loads(proc.stdout.strip().splitlines()[-1])


def measure_pair(op: str, path: Path, repeat: int, env: dict[str, str]) -> tuple[dict, dict]:
    """Alternate the engines run by run, so slow phases of a noisy machine hit both alike."""
    runs: dict[str, list[dict]] = {"ours": [], "deltalake": []}
    for _ in range(repeat):
        for engine in runs:
            runs[engine].append(_run_once(engine, op, path, env))

    def med(rs: list[dict]) -> dict:
        out = {k: statistics.median(r[k] for r in rs) for k in ("import_s", "work_s", "total_s", "cpu_s", "peak_mb")}
        out.update(result=rs[0]["result"], pandas=any(r["pandas"] for r in rs))
        return out
    return med(runs["ours"]), med(runs["deltalake"])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default=",".join(CASES))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", default=os.environ.get("DELTA_BENCH_DIR", "/tmp/delta-bench"))
    a = ap.parse_args()
    workdir = Path(a.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    env = child_env(workdir)
    compile_imports(env)
    rows = []
    for case in a.cases.split(","):
        path = prepare(case, workdir)
        if path is None:
            continue
        ours, theirs = measure_pair("files", path, a.repeat, env)
        if ours["result"] != theirs["result"]:
            raise SystemExit(f"case {case}: file counts differ: ours {ours['result']}, deltalake {theirs['result']}")
        rows.append((case, ours, theirs))
        print(f"{case}: ours {json.dumps(ours)}\n{case}: deltalake {json.dumps(theirs)}", flush=True)
    print(f"\nmedian of {a.repeat} cold runs each (wall s, import and work apart; cpu = user+sys s of the "
          "whole run; MB = child ru_maxrss)")
    print(f"{'case':<13}{'files':>9}{'ours imp':>9}{'work':>7}{'total':>7}{'dl imp':>8}{'work':>7}{'total':>7}"
          f"{'ratio':>7}{'target':>7}{'cpu':>6}{'dl cpu':>7}{'ratio':>6}{'ours MB':>8}{'dl MB':>7}{'mem':>6}  pandas")
    for case, o, t in rows:
        print(f"{case:<13}{o['result']:>9}{o['import_s']:>9.3f}{o['work_s']:>7.3f}{o['total_s']:>7.3f}"
              f"{t['import_s']:>8.3f}{t['work_s']:>7.3f}{t['total_s']:>7.3f}{o['total_s'] / t['total_s']:>7.2f}"
              f"{TARGETS[case]:>7.2f}{o['cpu_s']:>6.2f}{t['cpu_s']:>7.2f}{o['cpu_s'] / t['cpu_s']:>6.2f}"
              f"{o['peak_mb']:>8.0f}{t['peak_mb']:>7.0f}{o['peak_mb'] / t['peak_mb']:>6.2f}"
              f"  {'ours' if o['pandas'] else ''}{' deltalake' if t['pandas'] else ''}")


if __name__ == "__main__":
    main()
