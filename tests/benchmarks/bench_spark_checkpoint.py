#!/usr/bin/env python3
"""Benchmark: the Spark checkpoint engine vs the local writer (and deltalake) on very large logs.

Not a test, and not in ``run_all.py``: one 10-million-file case takes many minutes. For
each size a log is generated with ``../shared/tools/gen_log.py`` (``--commits size/1000
--adds 1000``: JSON commits only, no data files, about 450 bytes per file); then each
implementation runs in a fresh process, starting from the JSON commits (checkpoints and
``_last_checkpoint`` removed before every run):

* ``local``:     ``DeltaTable(path)`` + ``write_checkpoint(parts=P)``;
* ``spark``:     ``spark_checkpoint(spark, DeltaTable(path), parts=P)`` in a local-mode
  SparkSession (``local[N]``, ``spark.driver.memory``); P is the Spark engine's default,
  one part per million actions, and the local writer gets the same P;
* ``deltalake``: ``deltalake.DeltaTable(path).create_checkpoint()`` (the same-run reference).

Time is wall clock from the start of the fresh process to the published checkpoint (imports
and, for Spark, the JVM start included). Memory is the peak resident set, sampled every
0.2 s over the whole process tree: for ``local`` and ``deltalake`` that is one process; for
``spark`` it is reported twice, the JVM alone (in local mode the driver *is* the whole
JVM, executors included: "driver memory" here is that process) and the whole tree (JVM,
the Python driver and its Python workers). After each Spark run the checkpoint is read back
by deltalake alone (commits before it hidden) to check it names every file.

    python tests/benchmarks/bench_spark_checkpoint.py --sizes 1000000
    python tests/benchmarks/bench_spark_checkpoint.py --sizes 1000000,5000000,10000000 \\
        --workdir /tmp/spark-ckpt-logs --keep          # check disk first: df -h /tmp (~4.5 GB per 10M files)
"""
from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import psutil

from bench_checkpoint import _clean_checkpoints, _verify_with_deltalake, generate

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
LOG = "_delta_log"
ACTIONS_PER_PART = 1_000_000


def child(impl: str, path: str, parts: int, cores: int, driver_memory: str) -> None:
    """Runs in the measured subprocess; prints one JSON line."""
    t0 = time.perf_counter()
    if impl == "deltalake":
        from deltalake import DeltaTable as RsTable
        RsTable(path).create_checkpoint()
    else:
        sys.path.insert(0, str(ROOT))
        from airflow_provider_delta.log import DeltaTable
        if impl == "local":
            from airflow_provider_delta.log.maintenance.checkpoint import write_checkpoint
            write_checkpoint(DeltaTable(path), parts=parts)
        else:
            from pyspark.sql import SparkSession
            from airflow_provider_delta.spark.checkpoint_engine import spark_checkpoint
            spark = (SparkSession.builder.master(f"local[{cores}]").appName("bench-spark-checkpoint")
                     .config("spark.driver.memory", driver_memory).config("spark.ui.enabled", "false")
                     .config("spark.ui.showConsoleProgress", "false").getOrCreate())
            spark.sparkContext.setLogLevel("ERROR")
            t_spark = time.perf_counter()
            spark_checkpoint(spark, DeltaTable(path), parts=parts)
            t_done = time.perf_counter()
            spark.stop()
            print(json.dumps({"total_s": t_done - t0, "session_s": t_spark - t0}))
            return
    print(json.dumps({"total_s": time.perf_counter() - t0, "session_s": 0.0}))


class TreeSampler(threading.Thread):
    """Peak RSS of a process and its descendants, and of the largest java process among them."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.peak_tree = self.peak_jvm = 0
        self.done = threading.Event()

    def run(self) -> None:
        while not self.done.is_set():
            try:
                procs = [self.root] + self.root.children(recursive=True)
            except psutil.NoSuchProcess:
                return
            total = jvm = 0
            for p in procs:
                try:
                    rss = p.memory_info().rss
                    name = p.name()
                except psutil.Error:
                    continue
                total += rss
                if name == "java":
                    jvm = max(jvm, rss)
            self.peak_tree = max(self.peak_tree, total)
            self.peak_jvm = max(self.peak_jvm, jvm)
            self.done.wait(0.2)


def _run(impl: str, path: Path, parts: int, cores: int, driver_memory: str) -> dict:
    _clean_checkpoints(path)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": os.environ.get("SPARK_LOCAL_IP", "127.0.0.1")}
    cmd = [sys.executable, str(HERE), "--child", impl, str(path), "--parts", str(parts), "--cores", str(cores),
           "--driver-memory", driver_memory]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    sampler = TreeSampler(proc.pid)
    sampler.start()
    out, err = proc.communicate()
    sampler.done.set()
    sampler.join()
    if proc.returncode != 0:
        raise RuntimeError(f"{impl} failed:\n{err[-4000:]}")
    result = json.loads(out.strip().splitlines()[-1])
    result.update(peak_tree_mb=sampler.peak_tree / 2**20, peak_jvm_mb=sampler.peak_jvm / 2**20)
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--child", nargs=2, metavar=("IMPL", "PATH"), help=argparse.SUPPRESS)
    ap.add_argument("--parts", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--sizes", default="1000000", help="live files per log, comma separated")
    ap.add_argument("--impls", default="spark,local,deltalake", help="which implementations to run")
    ap.add_argument("--cores", type=int, default=2, help="local[N] of the Spark engine")
    ap.add_argument("--driver-memory", default="6g", help="spark.driver.memory (local mode: the whole JVM)")
    ap.add_argument("--workdir", default=None, help="where generated logs go (default: a temp dir)")
    ap.add_argument("--keep", action="store_true", help="keep the generated logs")
    a = ap.parse_args()
    if a.child:
        child(a.child[0], a.child[1], a.parts, a.cores, a.driver_memory)
        return
    work = Path(a.workdir or tempfile.mkdtemp(prefix="bench_spark_checkpoint_"))
    work.mkdir(parents=True, exist_ok=True)
    print(f"disk free at {work}: {shutil.disk_usage(work).free / 2**30:.0f} GB; {os.cpu_count()} cores; "
          f"Spark local[{a.cores}], driver memory {a.driver_memory}", flush=True)
    try:
        for size in [int(s) for s in a.sizes.split(",") if s]:
            path = generate(work, size)
            parts = max(1, math.ceil(size / ACTIONS_PER_PART))
            for impl in a.impls.split(","):
                r = _run(impl, path, parts, a.cores, a.driver_memory)
                check = _verify_with_deltalake(path, size) if impl != "deltalake" else "-"
                jvm = f"  JVM (driver) peak {r['peak_jvm_mb']:6.0f} MB" if impl == "spark" else ""
                print(f"{size:>9} {impl:<9} parts {parts:>3}  total {r['total_s']:7.1f}s "
                      f"(session start {r['session_s']:4.1f}s)  peak RSS {r['peak_tree_mb']:6.0f} MB{jvm}  "
                      f"deltalake-read: {check}", flush=True)
            _clean_checkpoints(path)
    finally:
        if not a.keep and not a.workdir:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
