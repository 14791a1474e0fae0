"""Deletion-vector read benchmark: the same 1,000,000-row table read without and with DVs.

Set-up (not timed, once per ``--workdir``): Delta Spark writes 1,000,000 rows (``id``
long, ``s`` string, ``x`` double) in 4 files with ``delta.enableDeletionVectors=true``
(version 0), then ``DELETE WHERE id % 10 = 0`` marks 10% of the rows deleted through
deletion vectors (version 1; no file is rewritten). Reading version 0 reads the files
alone; reading version 1 reads the same files and applies the DVs, so the ratio of the
two is the cost of deletion vectors.

Each measurement is a fresh interpreter (this script with ``--measure``), engines and
versions alternating run by run; the median of ``--repeat`` runs is reported, import
apart from the work. Engines: ours ``DeltaTable(p).snapshot(version=v).to_pyarrow()``;
deltalake's kernel-based reader ``QueryBuilder().register(...).execute("select * ...")``
(its ``to_pyarrow_table`` refuses DV tables).

    python tests/benchmarks/bench_deletion_vectors.py [--repeat 5] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
ROWS = 1_000_000
#: target: reading with 10% of rows deleted through DVs takes at most this times the plain read
TARGET_DV_RATIO = 1.5


def make_table(path: Path) -> None:
    """Delta Spark writes the table (version 0) and deletes 10% of its rows with DVs (version 1)."""
    sys.path.insert(0, str(ROOT / "scripts"))
    import delta_spark
    from pyspark.sql import SparkSession
    # the set-up's own local Spark (not timed); only the Delta jars and a bit of memory matter
    spark = delta_spark.configure(SparkSession.builder.master("local[2]").appName("bench-dv")
                                  .config("spark.driver.memory", "2g")).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        spark.sql(f"""CREATE TABLE delta.`{path}` USING delta
                      TBLPROPERTIES ('delta.enableDeletionVectors' = 'true')
                      AS SELECT /*+ REPARTITION(4) */ id, concat('row-', CAST(id % 1000 AS STRING)) AS s,
                                id * 0.5D AS x FROM range(0, {ROWS})""").collect()
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id % 10 = 0").collect()
    finally:
        spark.stop()


def measure(engine: str, version: int, path: str) -> None:
    """One cold read in this process; prints one JSON line."""
    r0 = resource.getrusage(resource.RUSAGE_SELF)
    t0 = time.perf_counter()
    if engine == "ours":
        from airflow_provider_delta.log import DeltaTable
    else:
        import deltalake
        import pyarrow as pa
    t1 = time.perf_counter()
    if engine == "ours":
        n = DeltaTable(path).snapshot(version=version).to_pyarrow().num_rows
    else:
        query = deltalake.QueryBuilder().register("t", deltalake.DeltaTable(path, version=version))
        n = pa.table(query.execute("select * from t").read_all()).num_rows
    t2 = time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_SELF)
    print(json.dumps({"import_s": t1 - t0, "work_s": t2 - t1, "total_s": t2 - t0, "rows": n,
                      "cpu_s": (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime),
                      "peak_mb": r1.ru_maxrss / 1024}))


def _run(engine: str, version: int, path: Path) -> dict:
    proc = subprocess.run([sys.executable, __file__, "--measure", engine, str(version), str(path)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{engine} v{version} failed:\n{proc.stderr[-2000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workdir", default="/tmp/bench_deletion_vectors")
    ap.add_argument("--measure", nargs=3, metavar=("ENGINE", "VERSION", "PATH"), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.measure:
        measure(a.measure[0], int(a.measure[1]), a.measure[2])
        return
    path = Path(a.workdir).resolve() / "dv_1m"
    if not (path / "_delta_log" / f"{1:020d}.json").exists():
        print(f"set-up: Delta Spark writes {ROWS:,} rows and deletes 10% with DVs at {path}", flush=True)
        make_table(path)
    runs: dict[tuple[str, int], list[dict]] = {}
    for _ in range(a.repeat):
        for key in (("ours", 0), ("ours", 1), ("deltalake", 0), ("deltalake", 1)):
            runs.setdefault(key, []).append(_run(*key, path))
    med = {k: {m: statistics.median(r[m] for r in rs) for m in ("import_s", "work_s", "total_s", "cpu_s", "peak_mb")}
           | {"rows": rs[0]["rows"]} for k, rs in runs.items()}
    for (engine, version), m in med.items():
        print(f"{engine:9s} v{version} ({'with' if version else 'no'} DVs): rows {m['rows']:>9,}  "
              f"work {m['work_s']:.3f}s  total {m['total_s']:.3f}s  cpu {m['cpu_s']:.2f}s  peak {m['peak_mb']:.0f} MB")
    dv_ratio = med[("ours", 1)]["work_s"] / med[("ours", 0)]["work_s"]
    dl_ratio = med[("deltalake", 1)]["work_s"] / med[("deltalake", 0)]["work_s"]
    vs_dl = med[("ours", 1)]["work_s"] / med[("deltalake", 1)]["work_s"]
    vs_dl_total = med[("ours", 1)]["total_s"] / med[("deltalake", 1)]["total_s"]
    print(f"ours with DVs / without: {dv_ratio:.2f} (target <= {TARGET_DV_RATIO}); deltalake's own: {dl_ratio:.2f}")
    print(f"ours / deltalake on the DV version: work {vs_dl:.2f}, total {vs_dl_total:.2f}")
    assert med[("ours", 1)]["rows"] == med[("deltalake", 1)]["rows"] == ROWS - ROWS // 10, med
    if dv_ratio > TARGET_DV_RATIO:
        sys.exit(f"deletion vectors cost {dv_ratio:.2f}x, above the {TARGET_DV_RATIO}x target")


if __name__ == "__main__":
    main()
