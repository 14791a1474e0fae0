"""Fixtures of the PySpark tests.

The one local SparkSession of a test run (``spark``, with Delta Spark configured) and the
Java check (``java``) live in tests/conftest.py, shared with tests/interop.
Airflow, imported by the operator tests, gets a throw-away home unless another
conftest of this run already gave it one.
"""
from __future__ import annotations

import os
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
