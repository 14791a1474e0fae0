"""Fixtures of the PySpark tests: one local SparkSession per test session, Java checked first.

PySpark needs a JVM; without one (or with one older than 17) every test here fails
with the message of ``scripts/check_java.py`` instead of a Py4J stack trace.
Airflow, imported by the operator tests, gets a throw-away home unless another
conftest of this run already gave it one.
"""
from __future__ import annotations

import importlib.util
import logging
import os
import sys
import tempfile
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

if "airflow" not in sys.modules and not os.environ.get("AIRFLOW_HOME", "").startswith(tempfile.gettempdir()):
    _home = Path(tempfile.mkdtemp(prefix="airflow-home-spark-"))
    os.environ["AIRFLOW_HOME"] = str(_home)
    os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
    os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_home}/airflow.db"


def _java_problem() -> str | None:
    """The check_java.py verdict: None when Java 17+ is available, else its error message."""
    spec = importlib.util.spec_from_file_location("check_java", ROOT / "scripts" / "check_java.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = module.main()
    return None if code == 0 else (err.getvalue().strip() or "Java check failed")


@pytest.fixture(scope="session")
def java() -> None:
    problem = _java_problem()
    if problem:
        pytest.fail(f"PySpark tests need Java: {problem}", pytrace=False)


@pytest.fixture(scope="session")
def spark(java):
    """A local SparkSession shared by all tests (2 cores, 2 shuffle partitions, no UI)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # py4j logs from finalizers after pytest closed its streams; pyspark warns about pandas 3
    logging.getLogger("py4j").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark.sql import SparkSession
    session = (SparkSession.builder.master("local[2]").appName("airflow-provider-delta-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.sql.session.timeZone", "UTC")
               .getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


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
