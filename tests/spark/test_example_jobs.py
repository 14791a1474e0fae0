"""The example's Delta Spark application (dags_examples/jobs/customer_totals.py) when runs race.

Two downstream runs on a first deployment both append to a ``customer_totals`` that
does not exist yet; Delta Spark fails the one that loses the race for version 0. The
job's ``append`` appends again to the table the other run created. Here several
writers start at once through one SparkSession (Delta Spark's transactions are per
write, so they race exactly as separate applications do); every row must land once,
whoever lost.
"""
from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import pytest

from airflow_provider_delta.log import DeltaTable

pytestmark = [pytest.mark.spark]

JOB = Path(__file__).resolve().parents[2] / "dags_examples" / "jobs" / "customer_totals.py"


def load_job():
    spec = importlib.util.spec_from_file_location("example_customer_totals_job", JOB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_appends_racing_to_create_the_table_all_land_once(spark, tmp_path, capsys):
    job = load_job()
    path = str(tmp_path / "customer_totals")
    writers = 4
    frames = [spark.createDataFrame([(f"c{i}", i, 7)], "customer string, orders long, orders_version long")
              for i in range(writers)]
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(i: int) -> None:
        barrier.wait()
        try:
            job.append(frames[i], path, {"txnAppId": f"run{i}", "txnVersion": "1"})
        except BaseException as e:          # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(writers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    rows = DeltaTable(path).snapshot().to_pyarrow().to_pylist()
    assert sorted(r["customer"] for r in rows) == [f"c{i}" for i in range(writers)]
    retried = capsys.readouterr().out.count("writing again")
    print(f"{retried} of {writers} writers lost the race to create the table and appended again")
    assert DeltaTable(path).latest_version() == writers - 1


def test_a_different_table_created_first_still_fails_the_append(spark, tmp_path):
    job = load_job()
    path = str(tmp_path / "customer_totals")
    spark.createDataFrame([(1,)], "other int").write.format("delta").save(path)
    frame = spark.createDataFrame([("c", 1, 7)], "customer string, orders long, orders_version long")
    with pytest.raises(Exception, match="(?i)schema|merge"):
        job.append(frame, path, {"txnAppId": "run", "txnVersion": "1"})
    assert DeltaTable(path).latest_version() == 0


def test_writers_of_the_same_txn_version_append_it_once(spark, tmp_path):
    """Two runs that pinned the same orders version: one set of rows, whoever lost."""
    job = load_job()
    path = str(tmp_path / "customer_totals")
    frame = spark.createDataFrame([("c", 1, 7)], "customer string, orders long, orders_version long")
    barrier = threading.Barrier(3)
    errors: list[BaseException] = []

    def write() -> None:
        barrier.wait()
        try:
            job.append(frame, path, {"txnAppId": "delta_downstream.customer_totals", "txnVersion": "7"})
        except BaseException as e:          # reported by the assertion below
            errors.append(e)

    threads = [threading.Thread(target=write) for _ in range(3)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors, errors
    assert DeltaTable(path).snapshot().to_pyarrow().num_rows == 1
    assert DeltaTable(path).snapshot().transaction_version("delta_downstream.customer_totals") == 7


def test_only_the_races_are_retried():
    job = load_job()

    class Conditioned(Exception):
        def __init__(self, condition):
            super().__init__(f"[{condition}] something")
            self.condition = condition

        def getCondition(self):
            return self.condition

    assert job.lost_race(Conditioned("DELTA_PROTOCOL_CHANGED"))
    assert job.lost_race(Conditioned("DELTA_METADATA_CHANGED"))
    assert job.lost_race(Conditioned("DELTA_CONCURRENT_TRANSACTION"))
    assert not job.lost_race(Conditioned("DELTA_CONCURRENT_APPEND"))
    assert not job.lost_race(ValueError("no table"))
