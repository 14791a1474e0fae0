"""Review (session 11, s11-rv-restore): the pair-undone-by-RESTORE rule (#27) against Delta Spark's
RESTORE TO TIMESTAMP AS OF run by a Spark whose JVM time zone is not UTC.

Delta Spark records a timestamp RESTORE as ``operationParameters: {"version": null, "timestamp":
"2026-11-27 20:29:49.535"}``: ``java.sql.Timestamp.toString()``, the JVM's local wall-clock time, no zone
(RestoreTableCommand.getTimestamp; it parses it back in the session time zone). We resolve that string
as UTC (restore_target_of -> to_epoch_ms), so on a cluster in Europe/Berlin the RESTORE's target is
taken an hour later than the one Delta Spark restored.

The Spark part runs in its own process (its JVM's default time zone is Europe/Berlin; the shared
session of tests/conftest.py is UTC). Run it under ``flock /tmp/spark.lock``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from airflow_provider_delta.log import DeltaTable, PairUndoneByRestoreError, check_pair_not_undone

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
APP, APP_VERSION = "orders_load", 7
TZ = "Europe/Berlin"

_SPARK = textwrap.dedent('''
    import importlib.util, json, os, sys, time
    spec = importlib.util.spec_from_file_location("ds", os.path.join(sys.argv[1], "scripts", "delta_spark.py"))
    ds = importlib.util.module_from_spec(spec); spec.loader.exec_module(ds)
    from pyspark.sql import SparkSession
    tz, base = sys.argv[2], sys.argv[3]
    b = (SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false")
         .config("spark.sql.session.timeZone", tz)
         .config("spark.driver.extraJavaOptions", f"-Duser.timezone={tz} -XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
         .config("spark.sql.shuffle.partitions", "1").config("spark.databricks.delta.snapshotPartitions", "1")
         .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "1"))
    for k, v in ds.spark_conf().items():
        b = b.config(k, v)
    s = b.getOrCreate(); s.sparkContext.setLogLevel("ERROR")

    def log(p, v):
        return os.path.join(p, "_delta_log", f"{v:020d}.json")

    def at(p, v, t):                                 # the commit file's time (a table without ICT)
        os.utime(log(p, v), (t, t))

    def ts_string(p, v):                             # what a user passes: Delta Spark's own history timestamp
        return str(s.sql(f"DESCRIBE HISTORY delta.`{p}`").filter(f"version = {v}").select("timestamp").collect()[0][0])

    out = {}
    now = time.time()
    for case in ("undone", "kept"):
        p = os.path.join(base, case)
        s.range(1).write.format("delta").save(p)                                                   # v0
        s.range(10, 12).write.format("delta").mode("append") \\
            .option("txnAppId", "%(app)s").option("txnVersion", %(ver)d).save(p)                     # v1: the pair
        s.range(20, 21).write.format("delta").mode("append").save(p)                              # v2
        s.range(30, 31).write.format("delta").mode("append").save(p)                              # v3
        if case == "undone":
            # v0 3h ago, the pair 2.5h ago, v2 1h ago, v3 30 min ago: restoring to 2h45m ago restores v0 (undoes
            # the pair); that instant read as UTC (one hour later in Berlin) falls after the pair's commit
            for v, ago in ((0, 3 * 3600), (1, 2.5 * 3600), (2, 3600), (3, 1800)):
                at(p, v, now - ago)
            target = ts_string(p, 0)
            target = str(s.sql(f"SELECT timestamp'{target}' + INTERVAL 15 MINUTES").collect()[0][0])
        else:
            target = ts_string(p, 2)                  # to v2, after the pair: the pair's rows stay
        s.sql(f"RESTORE TABLE delta.`{p}` TO TIMESTAMP AS OF '{target}'")                        # v4
        info = [json.loads(l)["commitInfo"] for l in open(log(p, 4)) if "commitInfo" in l][0]
        ids = sorted(r[0] for r in s.read.format("delta").load(p).collect())
        out[case] = {"params": info["operationParameters"], "ids": ids}
    print("@@RESULT@@" + json.dumps(out))
    s.stop()
''') % {"app": APP, "ver": APP_VERSION}


@pytest.fixture(scope="module")
def berlin_tables(tmp_path_factory, java, delta_spark_conf):
    """Two tables written and RESTOREd TO TIMESTAMP by Delta Spark in a Europe/Berlin JVM (see _SPARK)."""
    base = tmp_path_factory.mktemp("berlin")
    script = base / "spark_job.py"
    script.write_text(_SPARK)
    env = {**os.environ, "TZ": TZ, "PYTHONPATH": str(ROOT), "SPARK_LOCAL_IP": "127.0.0.1",
           "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable}
    proc = subprocess.run([sys.executable, str(script), str(ROOT), TZ, str(base)], env=env, capture_output=True,
                          text=True, timeout=600)
    line = next((ln for ln in proc.stdout.splitlines() if ln.startswith("@@RESULT@@")), None)
    assert proc.returncode == 0 and line, proc.stdout[-3000:] + proc.stderr[-5000:]
    return base, json.loads(line[len("@@RESULT@@"):])


def test_delta_spark_records_a_local_time_without_zone(berlin_tables):
    """Held (the premise): the RESTORE records no version, and a zone-less local time."""
    _, out = berlin_tables
    params = out["kept"]["params"]
    assert params["version"] is None and "T" not in params["timestamp"] and "+" not in params["timestamp"]
    assert out["undone"]["ids"] == [0] and out["kept"]["ids"] == [0, 10, 11, 20]    # what Spark restored


def test_a_spark_timestamp_restore_in_berlin_that_undid_the_pair_is_seen(berlin_tables):
    base, _ = berlin_tables
    table = DeltaTable(str(base / "undone"))
    assert table.snapshot().transaction_version(APP) == APP_VERSION           # a writer would skip
    with pytest.raises(PairUndoneByRestoreError):
        check_pair_not_undone(table, APP, APP_VERSION)


def test_a_spark_timestamp_restore_in_berlin_that_kept_the_pair_is_not_an_undo(berlin_tables):
    base, _ = berlin_tables
    table = DeltaTable(str(base / "kept"))
    check_pair_not_undone(table, APP, APP_VERSION)
