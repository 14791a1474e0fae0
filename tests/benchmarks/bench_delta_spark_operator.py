"""DeltaSparkApplicationOperator's overhead against a bare ``spark-submit`` of the same Delta Spark job.

Not a test: run it and read the table it prints (needs Java 17+ and the Delta Spark jars of
``make jars``).

    .venv/bin/python tests/benchmarks/bench_delta_spark_operator.py [--runs 3] [--rows 1000] [--dir /tmp/x]

The job copies a pinned version of a small input table (``--rows`` rows over 3 commits)
into a new output table with Delta Spark, using ``versionAsOf`` and ``txnAppId`` /
``txnVersion`` from ``delta_job_context()``. Every run is a fresh process writing a fresh
output table, alternating between:

- ``bare``: ``spark-submit`` of the job with the context argument and the same settings
  (master ``local[*]``, the Delta jars, extension and catalog, the same ``--conf``);
- ``operator``: a Python process that builds the operator and calls ``execute(context)``
  (input pinning, the exactly-once check before and after, the asset/XCom report, and the
  same spark-submit). Timed: ``execute()`` only (an Airflow worker has Airflow imported
  already); the whole process, imports included, is reported too.

Then ``re-run``: ``execute()`` when the output already records the pair (no submit).
Reported: median seconds per case, ratio operator / bare and the overhead in seconds, and the
operator's own work (``execute()`` minus the spark-submit inside it), which is what the ratio
measures but without the run-to-run spread of the Spark job itself.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

JOB = '''
from pyspark.sql import SparkSession
from airflow_provider_delta.spark.delta_job import delta_job_context

ctx = delta_job_context()
spark = SparkSession.builder.getOrCreate()
df = spark.read.format("delta").option("versionAsOf", ctx.input_version).load(ctx.input_table_uri)
df.write.format("delta").options(**ctx.write_options).mode("append").save(ctx.output_table_uri)
spark.stop()
'''

CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
        "spark.databricks.delta.snapshotPartitions": "2", "spark.log.level": "WARN"}
APP_ID, APP_VERSION, PINNED = "bench.delta_job", 1767312000, 2


def _jars() -> str:
    sys.path.insert(0, str(ROOT / "scripts"))
    import delta_spark
    return ",".join(str(p) for p in delta_spark.jar_paths())


def _env(airflow_home: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
    env.update({"AIRFLOW_HOME": str(airflow_home), "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
                "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{airflow_home}/airflow.db",
                "SPARK_LOCAL_IP": "127.0.0.1", "PYSPARK_PYTHON": sys.executable,
                "PYSPARK_DRIVER_PYTHON": sys.executable})
    return env


def make_input(path: Path, rows: int) -> None:
    import pyarrow as pa

    from airflow_provider_delta.log import DeltaTable
    schema = pa.schema([("id", pa.int64()), ("name", pa.string())])
    table = DeltaTable.create(str(path), schema)
    for part in range(3):
        ids = list(range(part * rows // 3, (part + 1) * rows // 3))
        table.write(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=schema))


def bare(job: Path, source: Path, out: Path, jars: str, env: dict[str, str]) -> float:
    from airflow_provider_delta.operators.spark_base import bundled_spark_submit
    from airflow_provider_delta.spark.delta_job import DeltaJobContext
    ctx = DeltaJobContext(input_table_uri=f"file://{source}", input_version=PINNED,
                          output_table_uri=f"file://{out}", txn_app_id=APP_ID, txn_version=APP_VERSION)
    conf = {**CONF, "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog"}
    cmd = [bundled_spark_submit() or "spark-submit", "--master", "local[*]", "--jars", jars]
    for k, v in conf.items():
        cmd += ["--conf", f"{k}={v}"]
    cmd += [str(job), ctx.to_argument()]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env={**env, **ctx.to_env()}, capture_output=True, text=True)
    secs = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"bare spark-submit failed:\n{proc.stderr[-5000:]}")
    return secs


def operator_process(job: Path, source: Path, out: Path, jars: str, env: dict[str, str]) -> dict[str, float]:
    t0 = time.perf_counter()
    proc = subprocess.run([sys.executable, __file__, "--one", str(job), str(source), str(out), jars],
                          env=env, capture_output=True, text=True)
    total = time.perf_counter() - t0
    if proc.returncode != 0:
        raise SystemExit(f"operator run failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-5000:]}")
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    result["process"] = total
    return result


def one(job: str, source: str, out: str, jars: str) -> None:
    """In a fresh process: build the operator, execute it (and once more: the re-run)."""
    import datetime as dt
    import logging

    logging.disable(logging.INFO)
    t_import = time.perf_counter()
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator

    class TI:
        dag_id, task_id, run_id, try_number, map_index = "bench", "delta_job", "r", 1, -1

        def xcom_push(self, key, value):
            pass

    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    context = {"ti": TI(), "run_id": "r", "logical_date": dt.datetime.fromtimestamp(APP_VERSION, dt.timezone.utc)}
    imported = time.perf_counter() - t_import
    submit_seconds: list[float] = []
    submit = SparkSubmitOperator.execute

    def timed_submit(self, ctx):             # the spark-submit inside execute(), timed apart
        t0 = time.perf_counter()
        try:
            return submit(self, ctx)
        finally:
            submit_seconds.append(time.perf_counter() - t0)
    SparkSubmitOperator.execute = timed_submit  # type: ignore[method-assign]

    def execute() -> tuple[float, int]:
        op = DeltaSparkApplicationOperator(task_id="delta_job", application=job, input_table_uri=source,
                                           input_version=PINNED, output_table_uri=out, app_id=APP_ID,
                                           jars=jars, conf=dict(CONF), conn_id="spark_not_defined")
        t0 = time.perf_counter()
        version = op.execute(context)
        return time.perf_counter() - t0, version

    secs, version = execute()
    rerun, again = execute()
    assert version == again == 0, (version, again)
    assert len(submit_seconds) == 1, submit_seconds
    print(json.dumps({"execute": secs, "rerun": rerun, "imports": imported, "submit": submit_seconds[0]}))


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--rows", type=int, default=1000)
    p.add_argument("--dir", default=None)
    args = p.parse_args()
    work = Path(args.dir or tempfile.mkdtemp(prefix="bench-delta-spark-"))
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    jars = _jars()
    env = _env(work / "airflow-home")
    job = work / "job.py"
    job.write_text(JOB)
    source = work / "source"
    make_input(source, args.rows)

    bare_s: list[float] = []
    op_runs: list[dict[str, float]] = []
    for i in range(args.runs):
        bare_s.append(bare(job, source, work / f"out-bare-{i}", jars, env))
        op_runs.append(operator_process(job, source, work / f"out-op-{i}", jars, env))
        print(f"run {i + 1}/{args.runs}: bare {bare_s[-1]:.2f} s, operator execute() {op_runs[-1]['execute']:.2f} s "
              f"(process {op_runs[-1]['process']:.2f} s), re-run {op_runs[-1]['rerun'] * 1000:.0f} ms", flush=True)

    from airflow_provider_delta.log import DeltaTable
    for i in range(args.runs):
        for kind in ("bare", "op"):
            rows = DeltaTable(str(work / f"out-{kind}-{i}")).snapshot().to_pyarrow().num_rows
            assert rows == 2 * args.rows // 3, (kind, i, rows)

    med = statistics.median
    b = med(bare_s)
    ex = med(r["execute"] for r in op_runs)
    proc = med(r["process"] for r in op_runs)
    rerun = med(r["rerun"] for r in op_runs)
    imports = med(r["imports"] for r in op_runs)
    own = med(r["execute"] - r["submit"] for r in op_runs)
    print(f"\nDelta Spark job: copy version {PINNED} ({2 * args.rows // 3} rows) into a new table, "
          f"{args.runs} runs each, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    print(f"{'case':<48} {'median s':>9}  runs")
    print(f"{'bare spark-submit':<48} {b:>9.2f}  {[round(x, 2) for x in bare_s]}")
    print(f"{'operator execute()':<48} {ex:>9.2f}  {[round(r['execute'], 2) for r in op_runs]}")
    print(f"{'operator process (Python start + imports too)':<48} {proc:>9.2f}  "
          f"{[round(r['process'], 2) for r in op_runs]}")
    print(f"{'  of which importing the operator':<48} {imports:>9.2f}")
    print(f"{'  of which its own work (execute() - spark-submit)':<48} {own:>9.3f}  "
          f"{[round(r['execute'] - r['submit'], 3) for r in op_runs]}")
    print(f"{'re-run, pair already committed (no submit)':<48} {rerun:>9.3f}  "
          f"{[round(r['rerun'], 3) for r in op_runs]}")
    print(f"\nratio operator execute() / bare spark-submit: {ex / b:.2f} (overhead {ex - b:+.2f} s)")
    print(f"ratio operator process / bare spark-submit:   {proc / b:.2f} (overhead {proc - b:+.2f} s)")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--one":
        one(*sys.argv[2:6])
    else:
        main()
