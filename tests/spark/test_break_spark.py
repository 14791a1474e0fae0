"""Findings of the break-spark review of the spark-jobs branch (issue 27), as failing tests."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import CommitFailedError, DeltaTable, StorageError
from airflow_provider_delta.spark.staged_write import new_staging, publish
from airflow_provider_delta.spark.staging_cleanup import clean_stale_staging
from task_context import task_context
from test_spark_retry_events import SCHEMA, DiedAfterCommit, _app_operator, _in_session, source  # noqa: F401 (fixture)

WEEK_AND_A_DAY_S = 8 * 24 * 3600


def test_publish_of_a_staging_folder_removed_by_cleanup_fails(tmp_path):
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    staged = new_staging(table)
    # what Spark's job commit left in staging; the driver then stalled (GC, suspended VM, clock skew)
    folder = table.storage.path(staged.staging_rel)
    os.makedirs(folder)
    data = os.path.join(folder, "part-00000.parquet")
    pq.write_table(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA), data)
    open(os.path.join(folder, "_SUCCESS"), "w").close()
    old = os.stat(data).st_mtime - WEEK_AND_A_DAY_S
    for p in (data, os.path.join(folder, "_SUCCESS"), folder):
        os.utime(p, (old, old))
    assert clean_stale_staging(table) == [staged.write_id]        # another write's housekeeping
    with pytest.raises(StorageError, match="staging folder"):
        publish(staged, SCHEMA, (), {}, {})                       # was: [] (an empty, "successful" write)


@pytest.mark.spark
def test_application_whose_delete_matches_nothing_succeeds(monkeypatch, spark, tmp_path, source):  # noqa: F811
    """Delta Spark's DELETE of no row commits nothing (so no txn): the log shows no commit of this
    try, so the task succeeds with "no commit" and announces nothing."""
    out = tmp_path / "out"
    spark.createDataFrame([(1, "a")], "id long, name string").write.format("delta").save(str(out))

    def delete_nothing(job):
        spark.sql(f"DELETE FROM delta.`{job.output_table_uri}` WHERE id < 0")
    _in_session(monkeypatch, spark, delete_nothing)
    op, asset = _app_operator(out, source)
    ctx = task_context(task_id="delta_job")
    assert op.execute(ctx) is None
    assert ctx["ti"].xcoms["commit"]["version"] is None and ctx["ti"].xcoms["commit"]["committed"] is False
    assert asset not in ctx["outlet_events"] or not ctx["outlet_events"][asset].extra
    assert DeltaTable(str(out)).latest_version() == 0


@pytest.mark.spark
def test_application_that_commits_outside_the_pair_fails_the_task(monkeypatch, spark, tmp_path, source):  # noqa: F811
    """Its own txn options replace the session's pair: the commit is this try's (run marker) but
    not exactly-once, so the task fails instead of reporting "no commit"."""
    out = tmp_path / "out"

    def own_pair(job):
        df = spark.read.format("delta").options(**job.read_options).load(job.input_table_uri)
        df.write.format("delta").options(txnAppId="mine", txnVersion="1").mode("append").save(job.output_table_uri)
    _in_session(monkeypatch, spark, own_pair)
    op, _ = _app_operator(out, source)
    with pytest.raises(CommitFailedError, match="committed version 0 .* without txnAppId"):
        op.execute(task_context(task_id="delta_job"))


def _copy_with_own_user_metadata_then_die(spark):
    """An application whose write sets userMetadata itself (replacing the run marker), then dies."""
    def copy_then_die(job):
        df = spark.read.format("delta").options(**job.read_options).load(job.input_table_uri)
        df.write.format("delta").option("userMetadata", "nightly load").mode("append").save(job.output_table_uri)
        raise DiedAfterCommit()
    return copy_then_die


@pytest.mark.spark
def test_retry_announces_a_dead_try_commit_whose_write_set_user_metadata(monkeypatch, spark, tmp_path,
                                                                         source):  # noqa: F811
    out = tmp_path / "out"

    _in_session(monkeypatch, spark, _copy_with_own_user_metadata_then_die(spark))
    op, _ = _app_operator(out, source)
    with pytest.raises(DiedAfterCommit):
        op.execute(task_context(task_id="delta_job"))
    retry, asset = _app_operator(out, source)
    ctx = task_context(task_id="delta_job", try_number=2)
    assert retry.execute(ctx) == 0
    assert ctx["outlet_events"][asset].extra.get("version") == 0     # the pair is the run's own


@pytest.mark.spark
def test_an_anonymous_commit_of_a_given_shared_pair_is_not_announced(monkeypatch, spark, tmp_path,
                                                                     source):  # noqa: F811
    """A pair given as app_id/app_version may be shared by runs: without a run marker the commit
    holding it is nobody's in particular, so a retry does not announce it."""
    out = tmp_path / "out"

    _in_session(monkeypatch, spark, _copy_with_own_user_metadata_then_die(spark))
    op, _ = _app_operator(out, source, app_id="shared", app_version=5)
    with pytest.raises(DiedAfterCommit):
        op.execute(task_context(task_id="delta_job"))
    retry, asset = _app_operator(out, source, app_id="shared", app_version=5)
    ctx = task_context(task_id="delta_job", try_number=2)
    assert retry.execute(ctx) == 0
    assert ctx["outlet_events"][asset].extra == {}


@pytest.mark.spark
def test_a_second_write_from_a_new_session_fails_instead_of_being_skipped(monkeypatch, spark, tmp_path):
    """What spark-submit gives the application: the operator's ``conf`` in SparkConf, and the entry
    (``delta_job.run_application``) arming the session the application gets from the builder. A
    second write in that session, and any write in a new session, fails: SparkConf has the app id
    without a version (it used to carry the version, and a new session skipped its write silently)."""
    from pyspark.sql import SparkSession

    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    from airflow_provider_delta.spark.delta_job import DeltaJobContext, arm_first_session
    out = str(tmp_path / "out")
    op = DeltaSparkApplicationOperator(task_id="delta_job", conn_id="spark_not_defined", application="app.py",
                                       output_table_uri=out)
    job = DeltaJobContext(input_table_uri=None, input_version=None, output_table_uri=out,
                          txn_app_id="dag.task@run", txn_version=7, job={"dag_id": "dag", "task_id": "task",
                                                                          "run_id": "run", "try_number": 1})
    submitted = {k: v for k, v in op.spark_conf(job).items() if k.startswith("spark.databricks.delta.")}
    assert "spark.databricks.delta.write.txnVersion" not in submitted     # never in SparkConf
    live = spark.sparkContext._jsc.sc().conf()       # the SparkConf that spark-submit --conf fills
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", SparkSession.Builder.getOrCreate)  # undone after
    for key, value in submitted.items():
        live.set(key, value)
    try:
        arm_first_session(job)                          # what the entry does before running the application
        first = SparkSession.builder.getOrCreate()      # the application's session
        first.range(2).write.format("delta").mode("append").save(out)
        with pytest.raises(Exception, match="(?i)txnVersion|txnAppId|idempotent"):
            first.range(2, 4).write.format("delta").mode("append").save(out)   # refused, as documented
        with pytest.raises(Exception, match="(?i)txnVersion|txnAppId|idempotent"):
            first.newSession().range(4, 6).write.format("delta").mode("append").save(out)   # was: skipped
        assert SparkSession.builder.getOrCreate().conf.get("spark.databricks.delta.write.txnVersion", None) is None
    finally:
        for key in submitted:
            live.remove(key)
        for key in job.session_conf:
            spark.conf.unset(key)
    table = DeltaTable(out)
    assert table.latest_version() == 0 and table.snapshot().transaction_version("dag.task@run") == 7
    assert sorted(r["id"] for r in table.snapshot().to_pyarrow().to_pylist()) == [0, 1]
