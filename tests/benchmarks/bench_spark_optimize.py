#!/usr/bin/env python3
"""Benchmark: our Spark OPTIMIZE engine vs Delta Spark's ``OPTIMIZE`` on the same local Spark.

Not a test, and not in ``run_all.py`` (each case starts a JVM). For each size a source table
of random points is written once (``--files`` appends, two partitions); every run copies it
and, in a fresh process, starts one local SparkSession with the Delta Spark jars (same
``local[N]``, same settings for both), then times only the OPTIMIZE:

* ``ours``:        ``spark_optimize(spark, DeltaTable(p), target_size=T)`` (one Spark task
  per bin rewriting with pyarrow, one commit on the driver through the log layer);
* ``delta-spark``: ``OPTIMIZE delta.`p``` with ``spark.databricks.delta.optimize.maxFileSize=T``
  (and ``minFileSize=T``, the same selection rule);
* ``deltalake``:   ``deltalake.DeltaTable(p).optimize.compact(target_size=T)`` (or ``z_order``),
  no JVM (import and open timed, as for ours);
* with ``--zorder``, all Z-order by ``(x, y)``.

The JVM start is outside the timed part for both Spark cases. Reported: the median of ``--repeat`` runs,
and the ratio ours / Delta Spark per size (scaling with table size).

    python tests/benchmarks/bench_spark_optimize.py
    python tests/benchmarks/bench_spark_optimize.py --sizes 1000000,4000000 --zorder --repeat 3
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
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
from bench_optimize import make_source  # noqa: E402  (the same source table)


def _spark(cores: int):
    spec = importlib.util.spec_from_file_location("delta_spark", ROOT / "scripts" / "delta_spark.py")
    helper = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(helper)
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master(f"local[{cores}]").appName("bench-optimize")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", str(cores))
               .config("spark.driver.memory", "2g")
               # small local tables: Delta Spark's log replay on `cores` tasks, not 50 (as the test session)
               .config("spark.databricks.delta.snapshotPartitions", str(cores)))
    for k, v in helper.spark_conf().items():
        builder = builder.config(k, v)
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def child(impl: str, path: str, target: int, zorder: bool, cores: int) -> None:
    sys.path.insert(0, str(ROOT))
    if impl == "deltalake":
        t0 = time.perf_counter()
        from deltalake import DeltaTable as RsTable
        table = RsTable(path)
        m = table.optimize.z_order(["x", "y"], target_size=target) if zorder else \
            table.optimize.compact(target_size=target)
        print(json.dumps({"optimize_s": time.perf_counter() - t0, "added": m["numFilesAdded"],
                          "removed": m["numFilesRemoved"]}))
        return
    spark = _spark(cores)
    t0 = time.perf_counter()
    if impl == "ours":
        from airflow_provider_delta.log import DeltaTable
        from airflow_provider_delta.spark.optimize_engine import spark_optimize
        extra = {"z_order_by": ["x", "y"]} if zorder else {}
        m = spark_optimize(spark, DeltaTable(path), target_size=target, **extra)
        added, removed = m["numFilesAdded"], m["numFilesRemoved"]
    else:
        spark.conf.set("spark.databricks.delta.optimize.maxFileSize", str(target))
        spark.conf.set("spark.databricks.delta.optimize.minFileSize", str(target))
        row = spark.sql(f"OPTIMIZE delta.`{path}`" + (" ZORDER BY (x, y)" if zorder else "")).collect()[0]
        metrics = row["metrics"]
        added, removed = metrics["numFilesAdded"], metrics["numFilesRemoved"]
    t1 = time.perf_counter()
    spark.stop()
    print(json.dumps({"optimize_s": t1 - t0, "added": added, "removed": removed}))


def run(impl: str, source: Path, work: Path, target: int, zorder: bool, cores: int) -> dict:
    dst = work / impl
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(source, dst)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1"}
    out = subprocess.run([sys.executable, str(HERE), "--child", impl, str(dst), str(target), str(int(zorder)),
                          str(cores)], capture_output=True, text=True, env=env)
    if out.returncode != 0:
        raise SystemExit(f"{impl} failed:\n{out.stderr[-3000:]}")
    result = json.loads(out.stdout.strip().splitlines()[-1])
    shutil.rmtree(dst)
    return result


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=5)
    ap.add_argument("--sizes", default="1000000,4000000")
    ap.add_argument("--files", type=int, default=100)
    ap.add_argument("--target", type=int, default=16 << 20)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--zorder", action="store_true")
    ap.add_argument("--impls", default="ours,delta-spark,deltalake")
    args = ap.parse_args()
    if args.child:
        impl, path, target, zorder, cores = args.child
        child(impl, path, int(target), zorder == "1", int(cores))
        return
    for size in (int(s) for s in args.sizes.split(",")):
        with tempfile.TemporaryDirectory(prefix="bench-spark-optimize-") as d:
            work = Path(d)
            source = work / "source"
            make_source(source, size, args.files, partitioned=True)
            mb = sum(p.stat().st_size for p in source.rglob("*.parquet")) / 1e6
            res = {}
            impls = args.impls.split(",")
            for impl in impls:
                runs = [run(impl, source, work, args.target, args.zorder, args.cores) for _ in range(args.repeat)]
                res[impl] = (statistics.median(r["optimize_s"] for r in runs), runs[0]["removed"], runs[0]["added"])
                spread = ", ".join(f"{r['optimize_s']:.2f}" for r in runs)
                print(f"{size:>10,} rows {mb:7.1f} MB {'zorder' if args.zorder else 'compact'} {impl:12s} "
                      f"{res[impl][0]:.2f}s (runs {spread})  files {res[impl][1]} -> {res[impl][2]}  "
                      f"load {os.getloadavg()[0]:.1f}", flush=True)
            for other, label in (("delta-spark", "Delta Spark"), ("deltalake", "deltalake")):
                if "ours" in res and other in res:
                    print(f"{size:>10,} rows ratio ours/{label}: {res['ours'][0] / res[other][0]:.2f}", flush=True)


if __name__ == "__main__":
    main()
