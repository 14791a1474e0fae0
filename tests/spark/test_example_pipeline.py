"""The example pipeline end to end: scripts/run_example.py in a subprocess, real Airflow and Spark.

One ingest day keeps it short (three spark-submits: the ingest and daily_totals jobs
commit on the driver, customer_totals is a Delta Spark application); the script itself checks the
DAG runs and the tables and exits non-zero otherwise. This test checks the
outputs again from the outside, with our reader and with delta-rs.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_delta.log import DeltaTable

ROOT = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.spark, pytest.mark.airflow, pytest.mark.slow]


@pytest.mark.timeout(900)
def test_example_pipeline(java, tmp_path):
    base, home = tmp_path / "tables", tmp_path / "airflow-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_", "AIRFLOW_HOME"))}
    env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.run([sys.executable, str(ROOT / "scripts" / "run_example.py"), "--base", str(base),
                           "--airflow-home", str(home), "--days", "1"],
                          cwd=str(tmp_path), env=env, capture_output=True, text=True, timeout=880)
    output = proc.stdout + "\n" + proc.stderr
    assert proc.returncode == 0, output[-20000:]
    assert "Example pipeline finished" in proc.stdout and ": OK" in proc.stdout
    assert "by delta_ingest:ingest_orders" in proc.stdout          # the task key as the default appId spells it
    assert "by delta_ingest.ingest_orders" not in proc.stdout

    orders = DeltaTable(str(base / "orders"))
    snap = orders.snapshot()
    assert snap.version == 2                      # create + one ingest (the re-run added nothing) + OPTIMIZE
    assert snap.to_pyarrow().num_rows == 200
    assert [a for a in snap.transactions() if a.startswith("delta_ingest:ingest_orders@")]   # one per interval
    assert snap.segment.checkpoint_version == 2               # the maintenance DAG's checkpoint, after its OPTIMIZE
    assert snap.commits_are_coordinated                       # managed commits: the SQLite commit owner
    history = orders.history()
    assert [h["operation"] for h in history] == ["OPTIMIZE", "WRITE", "CREATE TABLE"]
    assert history[0]["job"]["dag_id"] == "delta_maintenance"
    assert history[1]["job"]["dag_id"] == "delta_ingest" and history[1]["job"]["task_id"] == "ingest_orders"

    import deltalake
    totals = deltalake.DeltaTable(str(base / "daily_totals")).to_pyarrow_table().to_pylist()
    assert sum(r["orders"] for r in totals) == 200
    assert sum(r["revenue"] for r in totals) == sum(r["amount"] for r in snap.to_pyarrow().to_pylist())
    # the Delta Spark application: orders at the pinned version 1, appended once with txnAppId/txnVersion
    customers = DeltaTable(str(base / "customer_totals"))
    csnap = customers.snapshot()
    assert csnap.version == 0 and not csnap.commits_are_coordinated
    assert csnap.transaction_version("delta_downstream.customer_totals") == 1     # keyed by the pinned version
    assert "Delta-Lake/" in customers.history()[0]["engineInfo"]          # committed by Delta Spark
    rows = csnap.to_pyarrow().to_pylist()
    assert sum(r["orders"] for r in rows) == 200 and {r["orders_version"] for r in rows} == {1}
    assert sum(r["revenue"] for r in rows) == sum(r["amount"] for r in snap.to_pyarrow().to_pylist())
    assert sum(r["orders"] for r in deltalake.DeltaTable(str(base / "customer_totals")).to_pyarrow_table()
               .to_pylist()) == 200
    manifests = list((base / "orders" / "_delta_manifests").rglob("v1.json"))
    assert len(manifests) == 1
    assert not list(base.rglob("_delta_spark_staging"))
