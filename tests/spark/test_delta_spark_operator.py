"""DeltaSparkApplicationOperator: a user's Delta Spark application, pinned input, exactly-once output.

Two tests submit for real (spark-submit in local mode, Delta Spark jars from .jars/ via
scripts/delta_spark.py); the others check the operator's decisions without a Spark job,
with real tables and, where a process would run, a stand-in spark-submit that fails if
it is ever called.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import stat
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError, SqlCommitOwner
from airflow_provider_delta.spark.delta_job import CONTEXT_ARG, ENV_INPUT_VERSION, DeltaJobContext
from task_context import LOGICAL, RUN_KEY, task_context

APP_VERSION = int(LOGICAL.timestamp())
APP_ID = "dag:delta_job@" + RUN_KEY          # the default: task id @ the run's logical date
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])

#: the user's application: copy the pinned input into the output with Delta Spark, or
#: ("forget") finish without committing anything
USER_JOB = '''
from airflow_provider_delta.spark.delta_job import delta_job_context

ctx = delta_job_context()
print("delta job context:", ctx.input_table_uri, ctx.input_version, ctx.output_table_uri, ctx.write_options, ctx.args)
if ctx.args == ("copy",):
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    df = spark.read.format("delta").option("versionAsOf", ctx.input_version).load(ctx.input_table_uri)
    df.write.format("delta").options(**ctx.write_options).mode("append").save(ctx.output_table_uri)
    spark.stop()
elif ctx.args == ("copy", "again-from-a-new-session"):
    from pyspark.sql import SparkSession
    spark = SparkSession.builder.getOrCreate()
    df = spark.read.format("delta").option("versionAsOf", ctx.input_version).load(ctx.input_table_uri)
    df.write.format("delta").mode("append").save(ctx.output_table_uri)
    other = spark.newSession()        # e.g. a library's: SparkConf has the app id, no txnVersion
    try:
        other.range(10, 12).write.format("delta").mode("append").save(ctx.output_table_uri)
    except Exception as e:
        print("DELTA-JOB-SECOND-WRITE-REFUSED", str(e)[:300])
        raise
'''

#: small local Spark for the real submits
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
              "spark.databricks.delta.snapshotPartitions": "2", "spark.log.level": "WARN"}


def _context(**ti_fields: Any) -> dict[str, Any]:
    return task_context(**{"task_id": "delta_job", **ti_fields})


def _operator(**kwargs: Any):
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    kwargs.setdefault("task_id", "delta_job")
    kwargs.setdefault("conn_id", "spark_not_defined")
    return DeltaSparkApplicationOperator(**kwargs)


def _refusing_spark_submit(tmp_path: Path) -> str:
    """A spark-submit that fails the test's expectations if it is ever run."""
    path = tmp_path / "spark-submit-must-not-run"
    path.write_text(f"#!/bin/sh\necho called > {tmp_path}/spark-submit-was-called\nexit 7\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _tree(root: Path) -> dict[str, tuple[int, int]]:
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


@pytest.fixture
def source(tmp_path) -> DeltaTable:
    """v0 create, v1 ids 1-2, v2 id 3, v3 ids 4-5 (in-commit timestamps on)."""
    table = DeltaTable.create(str(tmp_path / "source"), SCHEMA,
                              properties={"delta.enableInCommitTimestamps": "true"})
    for ids in ([1, 2], [3], [4, 5]):
        table.write(pa.table({"id": ids, "name": [f"n{i}" for i in ids]}, schema=SCHEMA))
    return table


@pytest.fixture
def user_job(tmp_path) -> str:
    path = tmp_path / "user_job.py"
    path.write_text(USER_JOB)
    return str(path)


@pytest.fixture
def delta_jars(java, delta_spark_conf) -> str:
    """spark.jars of Delta Spark (scripts/delta_spark.py jar_paths(), fetched by `make jars`)."""
    return delta_spark_conf["spark.jars"]


# ------------------------------------------------------------------ real submits
@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_pinned_version_in_txn_out_then_a_rerun_does_not_submit(tmp_path, source, user_job, delta_jars):
    from airflow_provider_delta.assets import to_asset
    out = tmp_path / "out"
    asset = to_asset(table_uri=str(out))
    op = _operator(application=user_job, application_args=["copy"], input_table_uri=source.uri,
                   input_version="2", output_table_uri=str(out), jars=delta_jars, conf=SPARK_CONF,
                   env_vars={"SPARK_LOCAL_IP": "127.0.0.1"}, outlets=[asset])
    ctx = _context()
    assert op.execute(ctx) == 0                      # Delta Spark created the table with this commit

    table = DeltaTable(str(out))
    rows = sorted(table.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["id"])
    assert rows == sorted(source.snapshot(2).to_pyarrow().to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == [1, 2, 3]      # version 2, not the later ids 4-5
    assert table.snapshot().transaction_version(APP_ID) == APP_VERSION
    txns = [a["txn"] for a in table.read_commit(0) if "txn" in a]
    assert [(t["appId"], t["version"]) for t in txns] == [(APP_ID, APP_VERSION)]
    (entry,) = table.history()
    assert entry["operation"] == "WRITE" and "Delta-Lake/" in entry["engineInfo"]
    commit = ctx["ti"].xcoms["commit"]
    assert commit == {"version": 0, "committed": True, "table_uri": table.uri, "app_id": APP_ID,
                      "app_version": APP_VERSION, "input_table_uri": source.uri, "input_version": 2}
    assert ctx["outlet_events"][asset].extra["version"] == 0
    assert op.application_args[0] == "copy" and op.application_args[1].startswith(CONTEXT_ARG + "=")
    assert op.env_vars[ENV_INPUT_VERSION] == "2" and op.env_vars["SPARK_LOCAL_IP"] == "127.0.0.1"

    # a retry or re-run of the same DAG run: the table records the pair, nothing is submitted
    again = _operator(application=user_job, application_args=["copy"], input_table_uri=source.uri,
                      output_table_uri=str(out), spark_binary=_refusing_spark_submit(tmp_path))
    ctx2 = _context(try_number=2)
    assert again.execute(ctx2) == 0
    assert ctx2["ti"].xcoms["commit"]["committed"] is False
    assert not (tmp_path / "spark-submit-was-called").exists()
    assert DeltaTable(str(out)).latest_version() == 0


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_an_application_that_commits_nothing_succeeds_with_no_commit(tmp_path, source, user_job, delta_jars):
    """Exit 0 and no commit of this try in the log: nothing changed, "no commit", no event (the
    same as a DELETE that matched no row); a retry runs the application again."""
    out = tmp_path / "out"
    op = _operator(application=user_job, application_args=["forget"], input_table_uri=source.uri,
                   output_table_uri=str(out), jars=delta_jars, conf=SPARK_CONF,
                   env_vars={"SPARK_LOCAL_IP": "127.0.0.1"})
    ctx = _context()
    assert op.execute(ctx) is None
    assert ctx["ti"].xcoms["commit"]["version"] is None
    assert ctx["ti"].xcoms["commit"]["committed"] is False
    assert not out.exists()
    # the latest input version was pinned and handed over
    assert DeltaJobContext.parse(op.application_args[-1][len(CONTEXT_ARG) + 1:]).input_version == 3


@pytest.mark.spark
@pytest.mark.slow
@pytest.mark.timeout(900)
def test_a_write_from_a_new_session_fails_the_application_and_a_cleared_run_announces_the_first(
        tmp_path, source, user_job, delta_jars, capfd):
    """Through a real spark-submit: the entry arms the application's session only, so a write from
    spark.newSession() is refused (it used to be skipped, its rows lost, and the task succeeded). The
    task fails without retry (SecondDeltaWriteError: a retry would announce the output without the
    refused write's rows); the first write is in the table once; a cleared run does not submit and
    announces it."""
    from airflow_provider_delta.assets import to_asset
    from airflow_provider_delta.operators.delta_spark import SecondDeltaWriteError
    out = tmp_path / "out"
    op = _operator(application=user_job, application_args=["copy", "again-from-a-new-session"],
                   input_table_uri=source.uri, output_table_uri=str(out), jars=delta_jars, conf=SPARK_CONF,
                   env_vars={"SPARK_LOCAL_IP": "127.0.0.1"})
    with pytest.raises(SecondDeltaWriteError):      # was: AirflowException "Error code is: 1" (retried)
        op.execute(_context())
    assert op._hook._submit_sp.returncode == 87       # delta_job.EXIT_SECOND_WRITE_REFUSED, through spark-submit
    printed = capfd.readouterr().out                  # the task log (spark-submit's output)
    assert "DELTA-JOB-SECOND-WRITE-REFUSED [DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS]" in printed
    assert op.application == user_job                 # the user's values are back after the submit
    table = DeltaTable(str(out))
    assert table.latest_version() == 0 and table.snapshot().transaction_version(APP_ID) == APP_VERSION
    assert sorted(r["id"] for r in table.snapshot().to_pyarrow().to_pylist()) == [1, 2, 3, 4, 5]

    asset = to_asset(table_uri=str(out))
    retry = _operator(application=user_job, application_args=["copy", "again-from-a-new-session"],
                      input_table_uri=source.uri, output_table_uri=str(out), outlets=[asset],
                      spark_binary=_refusing_spark_submit(tmp_path))
    ctx = _context(try_number=2)
    assert retry.execute(ctx) == 0
    assert not (tmp_path / "spark-submit-was-called").exists()
    assert ctx["outlet_events"][asset].extra["version"] == 0


# --------------------------------------------------------------- no Spark job
def _managed_connection(monkeypatch, tmp_path, batch: int = 1) -> str:
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({
        "conn_type": "delta", "host": str(tmp_path),
        "extra": {"commit_owner": {"type": "sql", "url": f"sqlite:///{tmp_path}/owner.db",
                                   "backfill_batch_size": batch}}}))
    return "lake"


def test_a_managed_commit_output_is_refused_before_submitting(monkeypatch, tmp_path, source, user_job):
    from airflow_provider_delta.operators.delta_spark import CoordinatedCommitsError
    owner = SqlCommitOwner(f"sqlite:///{tmp_path}/owner.db", backfill_batch_size=1)
    managed = DeltaTable.create(str(tmp_path / "managed"), SCHEMA, commit_owner=owner)
    managed.write(pa.table({"id": [9], "name": ["x"]}, schema=SCHEMA))
    before = _tree(tmp_path / "managed")
    for conn in (_managed_connection(monkeypatch, tmp_path), None):     # with and without the owner at hand
        op = _operator(application=user_job, input_table_uri=source.uri, output_table_uri=str(tmp_path / "managed"),
                       delta_conn_id=conn, spark_binary=_refusing_spark_submit(tmp_path))
        with pytest.raises(CoordinatedCommitsError) as e:
            op.execute(_context())
        assert "uses managed commits" in str(e.value) and "DeltaSparkSubmitOperator" in str(e.value)
        assert "managedCommit" in str(e.value)
        assert op.application_args is None
    assert not (tmp_path / "spark-submit-was-called").exists()
    assert _tree(tmp_path / "managed") == before


def test_a_managed_input_version_must_be_backfilled(monkeypatch, tmp_path, user_job):
    conn = _managed_connection(monkeypatch, tmp_path, batch=10)
    owner = SqlCommitOwner(f"sqlite:///{tmp_path}/owner.db", backfill_batch_size=10)
    managed = DeltaTable.create(str(tmp_path / "managed"), SCHEMA, commit_owner=owner)
    managed.write(pa.table({"id": [9], "name": ["x"]}, schema=SCHEMA))       # v1: only with the owner
    op = _operator(application=user_job, input_table_uri="managed", output_table_uri="out", delta_conn_id=conn)
    with pytest.raises(InvalidArgumentError, match=r"version 1 of the managed-commit table .* is not backfilled"):
        op.build_context(_context())
    op.input_version = 0
    ctx = op.build_context(_context())
    assert (ctx.input_table_uri, ctx.input_version) == ("file://" + str(tmp_path / "managed"), 0)
    assert ctx.output_table_uri == "file://" + str(tmp_path / "out")


def test_context_defaults_timestamp_and_manifest(tmp_path, source, user_job):
    from airflow_provider_delta.hooks.delta_table import DeltaTableHook
    op = _operator(application=user_job, input_table_uri=source.uri, output_table_uri=str(tmp_path / "o"))
    ctx = op.build_context(_context(map_index=4))
    assert (ctx.input_version, ctx.txn_app_id, ctx.txn_version) == (3, "dag:delta_job[4]@" + RUN_KEY, APP_VERSION)
    assert ctx.job == {"dag_id": "dag", "task_id": "delta_job", "run_id": "scheduled__2026-01-02", "try_number": 1,
                       "map_index": 4}

    v2_time = source.snapshot(2).timestamp
    after_latest = source.snapshot().timestamp + 5
    while time.time() * 1000 <= after_latest:   # a time after the latest commit, but not in the future
        time.sleep(0.005)
    for ts, expected in ((v2_time, 2), (dt.datetime.fromtimestamp((v2_time + 1) / 1000, dt.timezone.utc), 2),
                         (after_latest, 3)):
        op = _operator(application=user_job, input_table_uri=source.uri, input_timestamp=ts,
                       output_table_uri=str(tmp_path / "o"), app_id="mine", app_version="5")
        ctx = op.build_context(_context())
        assert (ctx.input_version, ctx.txn_app_id, ctx.txn_version) == (expected, "mine", 5)

    pin = DeltaTableHook().write_snapshot_manifest(source.uri, version=1, manifest_uri=str(tmp_path / "pin.json"))
    op = _operator(application=user_job, input_manifest_uri=pin["manifest_uri"], output_table_uri=str(tmp_path / "o"))
    ctx = op.build_context(_context())
    assert (ctx.input_table_uri, ctx.input_version) == (source.uri, 1)

    op = _operator(application=user_job, output_table_uri=str(tmp_path / "o"))       # no input at all
    ctx = op.build_context(_context())
    assert ctx.input_table_uri is None and ctx.input_version is None


@pytest.mark.parametrize("kwargs, message", [
    ({"input_version": "1", "input_timestamp": "2026-01-01T00:00:00Z"}, "not both"),
    ({"input_table_uri": None, "input_version": "1"}, "need input_table_uri"),
    ({"input_table_uri": None, "input_manifest_uri": "/m.json", "input_version": "1"}, "pins the version itself"),
    ({"input_version": "9"}, "input_version 9 of .* does not exist yet \\(latest: 3\\)"),
    ({"input_version": "-1"}, "input_version"),
    ({"app_version": "soon"}, "app_version"),
    ({"input_timestamp": "2999-01-01T00:00:00Z"}, "in the future"),
])
def test_bad_input_arguments(tmp_path, source, user_job, kwargs, message):
    kwargs = {"input_table_uri": source.uri, **kwargs}
    op = _operator(application=user_job, output_table_uri=str(tmp_path / "o"), **kwargs)
    with pytest.raises(InvalidArgumentError, match=message):
        op.build_context(_context())


def test_input_given_twice_is_refused(tmp_path, user_job):
    with pytest.raises(InvalidArgumentError, match="not both"):
        _operator(application=user_job, output_table_uri=str(tmp_path / "o"), input_table_uri="/a",
                  input_manifest_uri="/m")


def test_delta_sql_conf_unless_the_user_set_it(monkeypatch, tmp_path, user_job):
    monkeypatch.setenv("PATH", str(tmp_path))          # no spark-submit on PATH: pyspark's
    from airflow_provider_delta.operators.spark import bundled_spark_submit

    def command(op) -> list[str]:
        op.conf = op.spark_conf()
        return op._get_hook()._build_spark_submit_command(op.application)

    cmd = command(_operator(application=user_job, output_table_uri=str(tmp_path / "o"), jars="/j/delta.jar"))
    assert cmd[0] == bundled_spark_submit() and cmd[cmd.index("--master") + 1] == "local[*]"
    assert "spark.sql.extensions=io.delta.sql.DeltaSparkSessionExtension" in cmd
    assert "spark.sql.catalog.spark_catalog=org.apache.spark.sql.delta.catalog.DeltaCatalog" in cmd
    assert cmd[cmd.index("--jars") + 1] == "/j/delta.jar" and cmd[-1] == user_job

    mine = {"spark.sql.extensions": "my.Extension,io.delta.sql.DeltaSparkSessionExtension"}
    cmd = command(_operator(application=user_job, output_table_uri=str(tmp_path / "o"), conf=mine))
    assert f"spark.sql.extensions={mine['spark.sql.extensions']}" in cmd
    assert sum(a.startswith("spark.sql.extensions=") for a in cmd) == 1

    cmd = command(_operator(application=user_job, output_table_uri=str(tmp_path / "o"), delta_sql_conf=False))
    assert not any(a.startswith(("spark.sql.extensions=", "spark.sql.catalog.")) for a in cmd)


def test_the_context_argument_is_not_repeated_on_a_second_execute(tmp_path, source, user_job):
    op = _operator(application=user_job, application_args=["--day", "x"], input_table_uri=source.uri,
                   output_table_uri=str(tmp_path / "o"), spark_binary=_refusing_spark_submit(tmp_path))
    for _ in range(2):
        with pytest.raises(Exception, match="Error code is: 7"):
            op.execute(_context())
    assert op.application_args[:2] == ["--day", "x"] and len(op.application_args) == 3
    assert os.path.exists(tmp_path / "spark-submit-was-called")
