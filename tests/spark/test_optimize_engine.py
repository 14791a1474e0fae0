"""The Spark OPTIMIZE engine: bins rewritten by Spark tasks, one commit on the driver.

The same rows and the same kind of commit as the local engine, read alike by Delta Spark;
a managed-commit table commits through its owner; the operator runs the job through
``spark-submit``; a killed job commits nothing.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InMemoryCommitOwner, InvalidArgumentError
from airflow_provider_delta.spark.optimize_engine import spark_optimize
from task_context import task_context

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
JOB = ROOT / "airflow_provider_delta" / "spark" / "optimize_job.py"


def _table(path: str, appends: int = 8, rows: int = 200, owner=None) -> DeltaTable:
    rng = np.random.default_rng(1)
    table = DeltaTable(path, commit_owner=owner) if owner else DeltaTable(path)
    schema = pa.schema([("p", pa.string()), ("id", pa.int64()), ("x", pa.float64())])
    if owner is not None:
        DeltaTable.create(path, schema, partition_by=["p"], commit_owner=owner)
    for i in range(appends):
        n = rows
        data = pa.table({"p": pa.array(["a", "b"] * (n // 2)), "id": pa.array(range(i * n, (i + 1) * n), pa.int64()),
                         "x": rng.random(n)})
        table.write(data, partition_by=["p"] if owner is None else None)
    return table


def _rows(table: DeltaTable) -> list:
    return sorted(table.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])


def test_spark_engine_compacts_and_zorders_like_the_local_engine(spark, tmp_path):
    ours, local = str(tmp_path / "spark"), str(tmp_path / "local")
    t_spark, t_local = _table(ours), _table(local)
    before = _rows(t_spark)
    m = spark_optimize(spark, t_spark, target_size="64mb")
    m_local = t_local.optimize(target_size="64mb")
    for key in ("numFilesAdded", "numFilesRemoved", "partitionsOptimized", "numBins"):
        assert m[key] == m_local[key], key
    assert _rows(t_spark) == before
    assert t_spark.history(1)[0]["operation"] == "OPTIMIZE"
    total = sum(t_spark.snapshot().files().column("size").to_pylist())
    z = spark_optimize(spark, t_spark, z_order_by=["x"], target_size=max(1, total // 6))
    assert z["numFilesAdded"] >= 4
    assert _rows(t_spark) == before
    # Delta Spark reads the same rows
    theirs = sorted((r.asDict() for r in spark.read.format("delta").load(ours).collect()), key=lambda r: r["id"])
    assert theirs == before
    actions = t_spark.read_commit(z["version"])
    assert all(next(iter(a.values()))["dataChange"] is False for a in actions if "add" in a or "remove" in a)


def test_spark_engine_commits_a_managed_table_through_its_owner(spark, tmp_path):
    owner = InMemoryCommitOwner(backfill_batch_size=1000)
    table = _table(str(tmp_path / "m"), appends=5, owner=owner)
    before = _rows(table)
    m = spark_optimize(spark, table, target_size="64mb")
    assert m["version"] == table.latest_version()
    # ratified by the owner, not yet backfilled: a reader without the owner does not see it
    assert DeltaTable(str(tmp_path / "m")).latest_version() < m["version"]
    assert _rows(table) == before


def test_spark_engine_refuses_bad_arguments_before_any_spark_work(spark, tmp_path):
    table = _table(str(tmp_path / "t"), appends=2)
    with pytest.raises(InvalidArgumentError):
        spark_optimize(spark, table, z_order_by=["p"])
    assert table.latest_version() == 1


@pytest.mark.airflow
@pytest.mark.slow
def test_operator_runs_the_spark_job_through_spark_submit(java, tmp_path, monkeypatch):
    from airflow_provider_delta.operators.optimize import DeltaOptimizeOperator
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    table = _table(str(tmp_path / "t"), appends=6)
    before = _rows(table)
    op = DeltaOptimizeOperator(task_id="optimize", table_uri=str(tmp_path / "t"), engine="spark",
                               target_size="64mb", spark_conn_id="spark_not_defined", master="local[2]")
    result = op.execute(task_context(task_id="optimize"))
    assert result["version"] == table.latest_version() and result["engine"] == "spark"
    assert result["numFilesRemoved"] == 12 and result["numFilesAdded"] == 2
    assert _rows(table) == before
    assert table.history(1)[0]["job"]["task_id"] == "optimize"


@pytest.mark.slow
def test_a_killed_job_commits_nothing_and_loses_nothing(java, tmp_path):
    """kill -9 once the job has started writing new files: the table reads as before (or, if the
    kill came after the commit, the same rows at the next version)."""
    root = tmp_path / "t"
    table = _table(str(root), appends=40, rows=2000)
    before, version = _rows(table), table.latest_version()
    known = {p.rsplit("/", 1)[-1] for p in table.snapshot().files().column("path").to_pylist()}
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1", "DELTA_SPARK_MASTER": "local[2]"}
    proc = subprocess.Popen([sys.executable, str(JOB), json.dumps({"table_uri": str(root), "target_size": "64mb"})],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        new: list[str] = []
        while not new and proc.poll() is None and time.monotonic() < deadline:
            new = [f for d in ("p=a", "p=b") for f in os.listdir(root / d) if f.endswith(".parquet") and f not in known]
            time.sleep(0.005)
        assert new, f"the job ended (code {proc.returncode}) before writing a file"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    assert table.latest_version() in (version, version + 1)
    assert _rows(table) == before
    # and the next OPTIMIZE completes the work
    assert table.optimize(target_size="64mb")["version"] is not None or table.latest_version() == version + 1
    assert _rows(table) == before
