"""Break review s10 (issue 27): the Spark entry (``delta_job.run_application``), the check for commits
outside the exactly-once pair, and what a retry does afterwards.

The entry tests run ``run_application`` in this process against the test's Spark session, with the
operator's ``--conf`` in the live ``SparkConf`` (what spark-submit gives the driver); the secrets test runs
a real spark-submit (local mode, Delta Spark jars) for what only real processes show: their command lines.
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_delta.log import DeltaTable
from task_context import LOGICAL, RUN_KEY, task_context

pytestmark = pytest.mark.spark

APP_ID = "dag:delta_job@" + RUN_KEY
APP_VERSION = int(LOGICAL.timestamp())
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
              "spark.databricks.delta.snapshotPartitions": "2", "spark.log.level": "WARN"}

def _operator(**kwargs: Any):
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    kwargs.setdefault("task_id", "delta_job")
    kwargs.setdefault("conn_id", "spark_not_defined")
    return DeltaSparkApplicationOperator(**kwargs)


# The operator's side of a refused second write (SecondDeltaWriteError, exit code 87 through a real
# spark-submit) is tests/spark/test_delta_spark_operator.py::
# test_a_write_from_a_new_session_fails_the_application_and_a_cleared_run_announces_the_first.


# ------------------------------------------------------------------ the entry, in this process
def _job(out: str):
    from airflow_provider_delta.spark.delta_job import DeltaJobContext
    return DeltaJobContext(input_table_uri=None, input_version=None, output_table_uri=out, txn_app_id=APP_ID,
                           txn_version=APP_VERSION, job={"dag_id": "dag", "task_id": "delta_job",
                                                         "run_id": "scheduled__2026-01-02", "try_number": 1})


def _run_entry(monkeypatch, spark, tmp_path: Path, source: str, args: list[str] = (), files: dict | None = None):
    """Run ``source`` as the application through ``run_application``, as spark-submit would: the operator's
    Delta ``--conf`` in the live ``SparkConf``. Returns the ``SystemExit`` code (None: returned normally)."""
    from pyspark.sql import SparkSession

    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    from airflow_provider_delta.spark.delta_job import APPLICATION_ARG, run_application
    out = str(tmp_path / "out")
    job = _job(out)
    op = DeltaSparkApplicationOperator(task_id="delta_job", conn_id="spark_not_defined", application="app.py",
                                       output_table_uri=out)
    submitted = {k: v for k, v in op.spark_conf(job).items() if k.startswith("spark.databricks.delta.")}
    app_dir = tmp_path / "jobs"
    app_dir.mkdir(exist_ok=True)
    for name, text in {**(files or {}), "app.py": source}.items():
        (app_dir / name).write_text(textwrap.dedent(text))
    live = spark.sparkContext._jsc.sc().conf()       # the SparkConf that spark-submit --conf fills
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", SparkSession.Builder.getOrCreate)  # undone after
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    for key, value in submitted.items():
        live.set(key, value)
    try:
        run_application([f"{APPLICATION_ARG}={app_dir / 'app.py'}", *args, job.to_argument()])
        return None
    except SystemExit as e:
        return e.code
    finally:
        for key in submitted:
            live.remove(key)
        for key in job.session_conf:
            spark.conf.unset(key)
        sys.modules.pop("helpers", None)


def _output(tmp_path: Path) -> tuple[list[int], list[tuple[int, bool]]]:
    """(the output's ids, per commit: (version, holds this run's pair))."""
    table = DeltaTable(str(tmp_path / "out"))
    pairs = [(v, any(a.get("txn", {}).get("appId") == APP_ID and a["txn"]["version"] == APP_VERSION
                     for a in table.read_commit(v))) for v in range(table.latest_version() + 1)]
    return sorted(r["id"] for r in table.snapshot().to_pyarrow().to_pylist()), pairs


WRITE = ('SparkSession.builder.getOrCreate().range({lo}, {hi}).selectExpr("id", "\'x\' AS name")'
         '.write.format("delta").mode("append").save(delta_job_context().output_table_uri)')
HEAD = ("import sys\nfrom pyspark.sql import SparkSession\n"
        "from airflow_provider_delta.spark.delta_job import delta_job_context\n")


def test_builder_chains_called_again_and_active_give_the_armed_session(monkeypatch, spark, tmp_path):
    app = HEAD + '''
spark = (SparkSession.builder.appName("airflow-provider-delta-tests")
         .config("spark.sql.shuffle.partitions", "2").getOrCreate())
again = SparkSession.builder.config("spark.sql.session.timeZone", "UTC").getOrCreate()
assert again is spark and SparkSession.active() is spark and SparkSession.getActiveSession() is spark
''' + WRITE.format(lo=0, hi=2)
    assert _run_entry(monkeypatch, spark, tmp_path, app) is None
    assert _output(tmp_path) == ([0, 1], [(0, True)])


def test_main_guard_sibling_import_and_arguments_with_spaces_dashes_and_json(monkeypatch, spark, tmp_path):
    args = ["--day", "2026-01-02 00:00", "--", '{"a": [1, "b c"]}', "", "--delta-job-contextual"]
    app = HEAD + '''
import json
from helpers import rows                 # a module next to the application

def main():
    ctx = delta_job_context()
    json.dump({"args": list(ctx.args), "argv": sys.argv[1:]}, open(sys.argv[0] + ".seen", "w"))
    spark = SparkSession.builder.getOrCreate()
    spark.createDataFrame(rows(), "id long, name string").write.format("delta").save(ctx.output_table_uri)

if __name__ == "__main__":
    main()
'''
    assert _run_entry(monkeypatch, spark, tmp_path, app, args,
                      files={"helpers.py": "def rows():\n    return [(5, 'a'), (6, 'b')]\n"}) is None
    seen = json.loads((tmp_path / "jobs" / "app.py.seen").read_text())
    assert seen["args"] == args and seen["argv"][:-1] == args
    assert _output(tmp_path) == ([5, 6], [(0, True)])


def test_a_write_from_another_thread_of_the_application_carries_the_pair(monkeypatch, spark, tmp_path):
    app = HEAD + '''
import threading
spark = SparkSession.builder.getOrCreate()
errors = []
def write():
    try:
        ''' + WRITE.format(lo=0, hi=3) + '''
    except Exception as e:
        errors.append(e)
t = threading.Thread(target=write)
t.start(); t.join()
if errors:
    raise errors[0]
'''
    assert _run_entry(monkeypatch, spark, tmp_path, app) is None
    assert _output(tmp_path) == ([0, 1, 2], [(0, True)])


def test_sys_exit_0_after_the_write_is_success(monkeypatch, spark, tmp_path):
    assert _run_entry(monkeypatch, spark, tmp_path, HEAD + WRITE.format(lo=0, hi=2) + "\nsys.exit(0)\n") == 0
    assert _output(tmp_path) == ([0, 1], [(0, True)])


@pytest.mark.parametrize("second", [
    WRITE.format(lo=2, hi=4),                                                     # the same session
    WRITE.replace("SparkSession.builder.getOrCreate()", "SparkSession.builder.getOrCreate().newSession()")
    .format(lo=2, hi=4),                                                          # a new session
    "try:\n    " + WRITE.format(lo=2, hi=4)
    + "\nexcept Exception as e:\n    raise RuntimeError('my job failed') from e",
], ids=["same-session", "new-session", "wrapped-by-the-app"])
def test_a_refused_second_write_exits_with_the_entry_code(monkeypatch, spark, tmp_path, second):
    from airflow_provider_delta.spark.delta_job import EXIT_SECOND_WRITE_REFUSED
    code = _run_entry(monkeypatch, spark, tmp_path, HEAD + WRITE.format(lo=0, hi=2) + "\n" + second + "\n")
    assert code == EXIT_SECOND_WRITE_REFUSED
    assert _output(tmp_path) == ([0, 1], [(0, True)])


def test_a_failure_after_the_one_write_stays_a_plain_failure(monkeypatch, spark, tmp_path):
    """Not a refused write: the error is the application's own (a retry announces the commit)."""
    with pytest.raises(ValueError, match="after the write"):
        _run_entry(monkeypatch, spark, tmp_path,
                   HEAD + WRITE.format(lo=0, hi=2) + "\nraise ValueError('after the write')\n")
    assert _output(tmp_path) == ([0, 1], [(0, True)])


def test_a_write_refused_before_the_pair_was_used_stays_a_plain_failure(monkeypatch, spark, tmp_path):
    """The only write is in a new session (refused, nothing written): no entry code, a retry may run again."""
    app = HEAD + "SparkSession.builder.getOrCreate()\n" + WRITE.replace(
        "SparkSession.builder.getOrCreate()", "SparkSession.builder.getOrCreate().newSession()").format(lo=0, hi=2)
    with pytest.raises(Exception, match="DELTA_INVALID_IDEMPOTENT_WRITES_OPTIONS"):
        _run_entry(monkeypatch, spark, tmp_path, app)
    assert not (tmp_path / "out" / "_delta_log").exists()


def test_user_arguments_that_merely_start_like_the_context_argument_are_passed(tmp_path):
    """The operator drops its own ``--delta-job-context=<JSON>`` from a previous execute, not every
    argument starting with those letters (``--delta-job-contextual`` was dropped without a word)."""
    stub = tmp_path / "spark-submit"
    stub.write_text("#!/bin/sh\nexit 7\n")
    stub.chmod(0o755)
    op = _operator(application=str(tmp_path / "app.py"), output_table_uri=str(tmp_path / "o"),
                   application_args=["--delta-job-contextual", "--delta-job-applications=2"], spark_binary=str(stub))
    for _ in range(2):
        with pytest.raises(Exception, match="Error code is: 7"):
            op.execute(task_context(task_id="delta_job"))
    assert op.application_args[:2] == ["--delta-job-contextual", "--delta-job-applications=2"]
    assert len(op.application_args) == 3 and op.application_args[2].startswith("--delta-job-context=")


# ------------------------------------------------------------------ secrets of a real local run
PASSWORD = "pw with S10SecretValue"
SECRETS_APP = '''
import json, os, subprocess, sys
from airflow_provider_delta.spark.delta_job import env_json_object
secrets = env_json_object("DELTA_SPARK_JOB_SECRETS")
ps = subprocess.run(["ps", "-eww", "-o", "args"], capture_output=True, text=True).stdout   # every process
with open(sys.argv[1], "w") as f:
    json.dump({"secrets": secrets, "ps": ps, "environ_arg": [a for a in sys.argv if "DELTA_SPARK" in a]}, f)
print("driver error text:", secrets["output"]["catalog"]["url"])   # a driver echoing the URL (a DB error)
'''


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_a_real_local_run_keeps_the_catalog_password_off_every_command_line_and_the_task_log(
        tmp_path, tmp_path_factory, monkeypatch, delta_spark_conf, capsys):
    """A real local spark-submit: the driver gets the secrets (environment route) while no process's
    command line (spark-submit, its JVM, the Python driver, PySpark's daemons; read by the driver with
    ps) holds the password, the task log masks the URL the driver prints, and nothing is left in the
    temporary directory (one of this test's own: another pytest worker's job may make folders in /tmp)."""
    from airflow.sdk.log import redact
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path_factory.mktemp("tmpdir")))
    monkeypatch.setenv("TMPDIR", tempfile.tempdir)
    before = {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("delta-spark-secrets-")}
    secrets = {"output": {"catalog": {"url": f"postgresql://etl:{PASSWORD}@db.example:5432/cat"}}}
    app, seen = tmp_path / "secrets_app.py", tmp_path / "seen.json"
    app.write_text(SECRETS_APP)
    op = _operator(application=str(app), application_args=[str(seen)], output_table_uri=str(tmp_path / "out"),
                   jars=delta_spark_conf["spark.jars"], conf=SPARK_CONF,
                   env_vars={"SPARK_LOCAL_IP": "127.0.0.1", "DELTA_SPARK_JOB_SECRETS": json.dumps(secrets)})
    assert op.execute(task_context(task_id="delta_job")) is None          # commits nothing: "no commit"
    got = json.loads(seen.read_text())
    assert got["secrets"] == secrets                                        # the driver has them
    assert "org.apache.spark.deploy.SparkSubmit" in got["ps"] and "secrets_app.py" in got["ps"]   # it saw them
    assert "S10SecretValue" not in got["ps"]
    assert not got["environ_arg"]
    logged = capsys.readouterr()
    assert "driver error text:" in logged.out + logged.err                 # the driver's output is the task log
    # Airflow masks the task log with redact (airflow.sdk.log.mask_logs, in the supervisor for a real task;
    # this test's logging has no such processor): what the operator registered covers the URL and password
    assert "S10SecretValue" not in redact(logged.out + logged.err)
    after = {n for n in os.listdir(tempfile.gettempdir()) if n.startswith("delta-spark-secrets-")}
    assert after == before


def test_delete_then_append_exits_with_the_entry_code_after_the_delete_used_the_pair(monkeypatch, spark, tmp_path):
    """The usual "rewrite a day" pattern, DELETE then append, is two Delta writes: the DELETE commits with
    the pair, the append is refused. Before, the retry found the pair and went green: the day deleted and
    never written again. Now the entry says so (and the operator fails without retry); replaceWhere does
    it in one write."""
    from airflow_provider_delta.spark.delta_job import EXIT_SECOND_WRITE_REFUSED
    out = str(tmp_path / "out")
    spark.range(0, 4).selectExpr("id", "'old' AS name").write.format("delta").save(out)
    app = HEAD + '''
spark = SparkSession.builder.getOrCreate()
spark.sql("DELETE FROM delta.`%s` WHERE id < 2")
''' % out + WRITE.format(lo=0, hi=2)
    assert _run_entry(monkeypatch, spark, tmp_path, app) == EXIT_SECOND_WRITE_REFUSED
    assert _output(tmp_path) == ([2, 3], [(0, False), (1, True)])        # the delete holds the pair

    out2 = tmp_path / "one-write"
    spark.range(0, 4).selectExpr("id", "'old' AS name").write.format("delta").save(str(out2 / "out"))
    one_write = HEAD + '''
spark = SparkSession.builder.getOrCreate()
(spark.range(0, 2).selectExpr("id", "'new' AS name").write.format("delta").mode("overwrite")
 .option("replaceWhere", "id < 2").save(delta_job_context().output_table_uri))
'''
    assert _run_entry(monkeypatch, spark, out2, one_write) is None
    assert _output(out2) == ([0, 1, 2, 3], [(0, False), (1, True)])
