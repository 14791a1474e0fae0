"""Fixtures of the PySpark tests.

The one local SparkSession of a test run (``spark``, with Delta Spark configured) and the
Java check (``java``) live in tests/conftest.py, shared with tests/interop.
Airflow, imported by the operator tests, gets a throw-away home unless another
conftest of this run already gave it one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

if "airflow" not in sys.modules and not os.environ.get("AIRFLOW_HOME", "").startswith(tempfile.gettempdir()):
    _home = Path(tempfile.mkdtemp(prefix="airflow-home-spark-"))
    os.environ["AIRFLOW_HOME"] = str(_home)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_home}/airflow.db"


@pytest.fixture
def session_time_zone(spark):
    """Run a test with another Spark session time zone, restored afterwards."""
    old = spark.conf.get("spark.sql.session.timeZone")

    def _set(tz: str) -> None:
        spark.conf.set("spark.sql.session.timeZone", tz)
    yield _set
    spark.conf.set("spark.sql.session.timeZone", old)


@pytest.fixture
def data_files():
    """List every parquet file under a table root (outside _delta_log), relative to the root."""
    def _list(root: Path) -> set[str]:
        return {str(p.relative_to(root)) for p in Path(root).rglob("*.parquet") if "_delta_log" not in p.parts}
    return _list


@pytest.fixture(scope="session")
def airflow_db():
    """This process's Airflow metadata database (the home above), migrated once: for ``dag.test()``."""
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "airflow"), "db", "migrate"],
                          capture_output=True, text=True, env=dict(os.environ))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


@pytest.fixture
def in_session(monkeypatch, spark):
    """spark-submit replaced by the entry point run in this Spark session; the specs it ran (Airflow
    imported here: only the tests that use it pay for it)."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from airflow_provider_delta.spark.job import run as run_job
    from airflow_provider_delta.spark.job_args import SECRETS_ENV, JobSpec
    ran: list = []

    def execute(self, context):
        spec = JobSpec.parse(self.application_args[0])
        ran.append(spec)
        run_job(spark, spec, json.loads((self.env_vars or {}).get(SECRETS_ENV, "{}")))
    monkeypatch.setattr(SparkSubmitOperator, "execute", execute)
    return ran
