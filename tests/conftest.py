"""Shared fixtures: the external corpus, table copies, the PostgreSQL server, and the one
local SparkSession of a test run (with Delta Spark), used by tests/spark and tests/interop."""
from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
import warnings
from pathlib import Path

import pytest
from xdist.scheduler import LoadScopeScheduling

ROOT = Path(__file__).resolve().parents[1]
CORPUS = (ROOT.parent / "shared" / "corpus").resolve()
POSTGRES_URL = os.environ.get("DELTA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


#: Under pytest-xdist (``make test`` runs two workers) the tests of these folders run in one worker
#: one after the other: tests/interop and tests/spark use the one local SparkSession (a second worker
#: would start a second one), and tests/objectstore's Spark-on-S3 tests share it.
SPARK_SESSION_FOLDERS = ("tests/interop/", "tests/spark/", "tests/objectstore/")
SPARK_SESSION_GROUP = "spark-session"
#: Files of those folders that start no SparkSession in the test process (their jobs run in a
#: spark-submit JVM of their own, or use no Spark at all): any worker may take them, test by test,
#: which keeps the group from being the run's long pole. ``pytest_collection_modifyitems`` refuses a
#: ``spark``-fixture test here, so the list cannot wrongly grow; a file missing from it only costs time.
OWN_JVM_FILES = frozenset({
    "tests/spark/test_delta_job_context.py", "tests/spark/test_delta_spark_operator.py",
    "tests/spark/test_example_pipeline.py",
    "tests/spark/test_on_kill_order.py", "tests/spark/test_pair_skip_rests_on_recorded.py",
    "tests/spark/test_spark_driver_secrets.py",
    "tests/spark/test_spark_operator.py", "tests/spark/test_spark_units.py",
    "tests/objectstore/test_azure_spellings.py", "tests/objectstore/test_break_s10_http_alias.py",
    "tests/objectstore/test_break_s8_clone_schemes.py", "tests/objectstore/test_break_s9_paths_stores.py",
    "tests/objectstore/test_break_sensor_run_start.py", "tests/objectstore/test_clone_on_stores.py",
    "tests/objectstore/test_conditional_create.py", "tests/objectstore/test_poll_cost.py",
    "tests/objectstore/test_storage_connections.py", "tests/objectstore/test_stores_concurrency.py",
    "tests/objectstore/test_stores_end_to_end.py",
})


def in_spark_session_group(nodeid: str) -> bool:
    path = nodeid.split("::", 1)[0]
    return path.startswith(SPARK_SESSION_FOLDERS) and path not in OWN_JVM_FILES


class SparkSessionScheduling(LoadScopeScheduling):
    """xdist's load scheduling, test by test, except that the Spark-session group is one unit of work
    (its own worker). xdist's ``loadgroup`` does this by renaming node ids, which pytest 9 no longer
    lets it do: the marks were ignored and both workers started a SparkSession."""

    def _split_scope(self, nodeid: str) -> str:
        return SPARK_SESSION_GROUP if in_spark_session_group(nodeid) else nodeid


def pytest_xdist_make_scheduler(config, log):
    return SparkSessionScheduling(config, log)


def pytest_collection_modifyitems(config, items):
    """The Spark-session group first (the longest unit: the other worker takes the rest meanwhile);
    a test of the ``spark`` fixture outside it is refused, as it would start a second SparkSession."""
    strays = [item.nodeid for item in items
              if "spark" in getattr(item, "fixturenames", ()) and not in_spark_session_group(item.nodeid)]
    if strays:
        raise pytest.UsageError(f"tests using the spark fixture outside {SPARK_SESSION_FOLDERS} (or in OWN_JVM_FILES) "
                                f"would start a second SparkSession under make test's workers (tests/conftest.py): "
                                f"{strays[:5]}")
    items[:] = ([item for item in items if in_spark_session_group(item.nodeid)]
                + [item for item in items if not in_spark_session_group(item.nodeid)])


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing at {CORPUS}: check out ../shared beside the project")
    return CORPUS


@pytest.fixture
def copy_table(tmp_path, corpus):
    """Copy a corpus table (e.g. 'delta-golden/checkpoint') into tmp_path and return its path.

    The corpus is read-only and copytree keeps file modes, so the copy is made writable:
    tests that copy a table do so to change it.
    """
    def _copy(rel: str) -> Path:
        dst = tmp_path / rel.replace("/", "__")
        shutil.copytree(corpus / rel, dst)
        for d, dirs, files in os.walk(dst):
            for n in dirs + files:
                os.chmod(os.path.join(d, n), 0o755 if n in dirs else 0o644)
        os.chmod(dst, 0o755)
        return dst
    return _copy


@pytest.fixture
def file_tree():
    """``file_tree(root)``: every file below ``root`` with its size (what a test checks was not touched)."""
    def _tree(root) -> dict[str, int]:
        out = {}
        for d, _, files in os.walk(root):
            for f in files:
                p = os.path.join(d, f)
                out[os.path.relpath(p, root)] = os.path.getsize(p)
        return out
    return _tree


def _postgres_reachable(url: str) -> str | None:
    try:
        import sqlalchemy as sa
        from airflow_provider_delta.log.base.commit_owner.sql_engine import engine_url
        eng = sa.create_engine(engine_url(sa.engine.make_url(url)))
        with eng.connect() as c:
            c.execute(sa.text("select 1"))
        eng.dispose()
        return None
    except Exception as e:  # any failure to connect means: skip with the reason
        return f"{type(e).__name__}: {e}".splitlines()[0]


@pytest.fixture(scope="session")
def postgres_url() -> str:
    reason = _postgres_reachable(POSTGRES_URL)
    if reason:
        print(f"\nSKIP PostgreSQL tests: no server answers at {POSTGRES_URL} ({reason})")
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL}: {reason}")
    return POSTGRES_URL


def _load_script(name: str):
    """Import scripts/<name>.py (the scripts folder is not a package)."""
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, ROOT / "scripts" / f"{name}.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _java_problem() -> str | None:
    """The check_java.py verdict: None when Java 17+ is available, else its error message."""
    module = _load_script("check_java")
    import contextlib
    import io
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        code = module.main()
    return None if code == 0 else (err.getvalue().strip() or "Java check failed")


@pytest.fixture(scope="session")
def java() -> None:
    """PySpark needs a JVM; without one (or one older than 17) the Spark tests fail with the
    message of scripts/check_java.py instead of a Py4J stack trace."""
    problem = _java_problem()
    if problem:
        pytest.fail(f"PySpark tests need Java: {problem}", pytrace=False)


@pytest.fixture(scope="session")
def delta_spark_conf() -> dict[str, str]:
    """Spark settings for Delta Spark (scripts/delta_spark.py): jars fetched by `make jars`."""
    helper = _load_script("delta_spark")
    try:
        return helper.spark_conf()
    except helper.DeltaSparkJarsMissing as e:
        pytest.fail(f"Spark tests need the Delta Spark jars: {e}", pytrace=False)


@pytest.fixture(scope="session")
def spark(java, delta_spark_conf):
    """The one local SparkSession of a test run, with Delta Spark (2 cores, 2 shuffle partitions, no UI)."""
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    # py4j logs from finalizers after pytest closed its streams; pyspark warns about pandas 3
    logging.getLogger("py4j").setLevel(logging.WARNING)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas")
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master("local[2]").appName("airflow-provider-delta-tests")
               .config("spark.sql.shuffle.partitions", "2")
               .config("spark.default.parallelism", "2")
               .config("spark.ui.enabled", "false")
               .config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC")
               # small local tables: Delta Spark's log replay (50 partitions by default) and the
               # parallel file listing of VACUUM / RESTORE (10000 tasks by default) on 2 tasks
               .config("spark.databricks.delta.snapshotPartitions", "2")
               .config("spark.sql.sources.parallelPartitionDiscovery.parallelism", "2")
               # a short-lived JVM on 2 cores and tiny data: C2 compilation and generated code
               # cost more CPU than they save (together about 60% of the JVM's CPU time here)
               .config("spark.driver.extraJavaOptions", "-XX:TieredStopAtLevel=1 -XX:+UseSerialGC")
               .config("spark.sql.codegen.wholeStage", "false")
               .config("spark.sql.codegen.factoryMode", "NO_CODEGEN"))
    for key, value in delta_spark_conf.items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()
