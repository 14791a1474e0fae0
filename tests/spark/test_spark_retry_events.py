"""Both Spark operators: a retry announces the commit its dead try made; Delta Spark writes once.

The applications run in this test's Spark session with the settings spark-submit would pass
(``SparkSubmitOperator.execute`` replaced by the application itself); the kill -9 cases with
real processes are in test_failure_matrix.py.
"""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.spark import commit_dataframe
from submitted_application import submitted_session
from task_context import LOGICAL, RUN_KEY, task_context

pytestmark = pytest.mark.spark

APP_VERSION = int(LOGICAL.timestamp())
SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


class DiedAfterCommit(Exception):
    """The try's process died right after the application committed (before the task reported)."""


def _in_session(monkeypatch, spark, application):
    """Run ``application(job_context)`` instead of spark-submit, with the operator's Delta settings."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    def execute(self, context):
        with submitted_session(self, spark) as job:
            application(job)
    monkeypatch.setattr(SparkSubmitOperator, "execute", execute)


@pytest.fixture
def source(tmp_path) -> DeltaTable:
    table = DeltaTable.create(str(tmp_path / "source"), SCHEMA)
    table.write(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))
    return table


def _app_operator(out, source, **kwargs: Any):
    from airflow_provider_delta.assets import to_asset
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    asset = to_asset(table_uri=str(out))
    return DeltaSparkApplicationOperator(task_id="delta_job", conn_id="spark_not_defined", application="app.py",
                                         input_table_uri=source.uri, output_table_uri=str(out), outlets=[asset],
                                         **kwargs), asset


def test_application_retry_announces_the_commit_of_its_dead_try(monkeypatch, spark, tmp_path, source):
    out = tmp_path / "out"

    def copy_then_die(job):
        df = spark.read.format("delta").options(**job.read_options).load(job.input_table_uri)
        df.write.format("delta").mode("append").save(job.output_table_uri)     # no txn options
        raise DiedAfterCommit()
    _in_session(monkeypatch, spark, copy_then_die)
    op, asset = _app_operator(out, source)
    with pytest.raises(DiedAfterCommit):
        op.execute(task_context(task_id="delta_job"))
    table = DeltaTable(str(out))
    app_id = "dag:delta_job@" + RUN_KEY
    assert table.snapshot().transaction_version(app_id) == APP_VERSION   # the session's pair was used

    source.write(pa.table({"id": [3], "name": ["c"]}, schema=SCHEMA))   # the input moved on meanwhile
    retry, asset = _app_operator(out, source)
    ctx = task_context(task_id="delta_job", try_number=2)
    assert retry.execute(ctx) == 0
    assert ctx["ti"].xcoms["commit"]["committed"] is False                 # this try committed nothing ...
    assert retry.outlets == [asset]                                        # ... but announces its run's commit
    assert ctx["outlet_events"][asset].extra == {
        "version": 0, "committed": True, "app_id": app_id, "app_version": APP_VERSION,
        "input_table_uri": "file://" + source.uri if not source.uri.startswith("file:") else source.uri,
        "input_version": 1}                                                # the input that commit really read
    assert sorted(r["id"] for r in table.snapshot().to_pyarrow().to_pylist()) == [1, 2]


def test_a_commit_of_another_run_is_not_announced(monkeypatch, spark, tmp_path, source):
    out = tmp_path / "out"

    def copy(job):
        spark.read.format("delta").load(job.input_table_uri).write.format("delta").mode("append") \
            .save(job.output_table_uri)
    _in_session(monkeypatch, spark, copy)
    op, _ = _app_operator(out, source, app_id="shared", app_version=5)
    op.execute(task_context(task_id="delta_job"))
    other, asset = _app_operator(out, source, app_id="shared", app_version=5)
    ctx = task_context(task_id="delta_job", run_id="manual__other")
    assert other.execute(ctx) == 0
    assert other.outlets == [] and ctx["outlet_events"][asset].extra == {}


def test_a_second_delta_write_in_the_application_fails_instead_of_being_skipped(monkeypatch, spark, tmp_path,
                                                                                 source):
    out = tmp_path / "out"

    def writes_twice(job):
        df = spark.read.format("delta").load(job.input_table_uri)
        df.write.format("delta").options(**job.write_options).mode("append").save(job.output_table_uri)
        df.write.format("delta").options(**job.write_options).mode("append").save(job.output_table_uri)
    _in_session(monkeypatch, spark, writes_twice)
    op, _ = _app_operator(out, source)
    with pytest.raises(Exception, match="(?i)txnVersion|txnAppId|idempotent"):
        op.execute(task_context(task_id="delta_job"))
    table = DeltaTable(str(out))
    assert table.latest_version() == 0                 # the first write, once; the second refused
    assert sorted(r["id"] for r in table.snapshot().to_pyarrow().to_pylist()) == [1, 2]


def test_submit_operator_retry_announces_the_commit_of_its_dead_try(monkeypatch, spark, tmp_path):
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from airflow_provider_delta.assets import to_asset
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    from airflow_provider_delta.operators.base import job_info
    out = tmp_path / "out"
    app_id = "dag:spark@" + RUN_KEY
    # try 1 committed through the job (commitInfo.job names it), then died
    first = task_context(task_id="spark")
    commit_dataframe(spark.range(3), str(out), app_id=app_id, app_version=APP_VERSION, job=job_info(first))

    def must_not_run(self, context):
        raise AssertionError("the retry must not submit")
    monkeypatch.setattr(SparkSubmitOperator, "execute", must_not_run)
    asset = to_asset(table_uri=str(out))
    op = DeltaSparkSubmitOperator(task_id="spark", output_table_uri=str(out), transform="identity", outlets=[asset],
                                  conn_id="spark_not_defined")
    ctx = task_context(task_id="spark", try_number=2)
    assert op.execute(ctx) == 0
    assert ctx["outlet_events"][asset].extra == {"version": 0, "committed": True, "app_id": app_id,
                                                 "app_version": APP_VERSION}
