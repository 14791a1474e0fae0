"""s8-break-sm review of #27 (merge 391ce5d): the commit outcome of a raised put, and the
Delta Spark application operator deciding outcomes from the log."""
from __future__ import annotations

import json
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CommitFailedError, DeltaTable
from task_context import task_context
from test_spark_retry_events import SCHEMA, _app_operator, _in_session, source  # noqa: F401 (fixture)

IDS = pa.schema([("id", pa.int64())])


class LandsThenTimesOutThenReadFails:
    """A real local store whose next commit-file put lands and then reports a timeout (the PUT
    went through, the response was lost), and whose first read of that commit file then fails
    with a connection error (the same network trouble): the outcome is unknown at that point."""

    def __init__(self, inner: Any):
        self.inner, self.armed, self.failing = inner, True, None

    def put_if_absent(self, target: str, data: bytes) -> bool:
        if not (self.armed and "_delta_log" in target and target.endswith(".json")):
            return self.inner.put_if_absent(target, data)
        self.armed = False
        assert self.inner.put_if_absent(target, data)
        self.failing = target
        raise TimeoutError("PUT timed out")

    def read_bytes(self, path: str) -> bytes:
        if self.failing is not None and path == self.failing:
            self.failing = None
            raise ConnectionResetError("connection reset by peer")
        return self.inner.read_bytes(path)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_optimize_keeps_its_files_when_the_commit_landed_but_could_not_be_read_back(tmp_path):
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, IDS)
    for i in range(3):
        table.write(pa.table({"id": [i]}, schema=IDS))
    table = DeltaTable(uri)
    table.storage.files = LandsThenTimesOutThenReadFails(table.storage.files)
    try:
        table.optimize()
    except Exception:
        pass                         # failing is fine; destroying the landed commit's files is not
    assert sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist()) == [0, 1, 2]


def test_write_keeps_its_files_when_the_commit_landed_but_could_not_be_read_back(tmp_path):
    """The same store under a plain write: the writer asks the log again (surely_not_committed)."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, IDS).write(pa.table({"id": [0]}, schema=IDS))
    table = DeltaTable(uri)
    table.storage.files = LandsThenTimesOutThenReadFails(table.storage.files)
    try:
        table.write(pa.table({"id": [1]}, schema=IDS))
    except Exception:
        pass
    assert sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist()) == [0, 1]
    assert DeltaTable(uri).latest_version() == 2


@pytest.mark.spark
def test_application_that_commits_outside_the_pair_with_its_own_user_metadata_fails_the_task(
        monkeypatch, spark, tmp_path, source):  # noqa: F811
    """Its own txnAppId/txnVersion and userMetadata leave a commit that names nobody: it may be this
    try's, so the task fails, without retrying (a retry would run the application and write again)."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_delta.operators.delta_spark import CommitOutsidePairError
    out = tmp_path / "out"

    def own_pair_and_metadata(job):
        df = spark.read.format("delta").options(**job.read_options).load(job.input_table_uri)
        df.write.format("delta").options(txnAppId="mine", txnVersion="1", userMetadata="nightly load") \
            .mode("append").save(job.output_table_uri)
    _in_session(monkeypatch, spark, own_pair_and_metadata)
    op, asset = _app_operator(out, source)
    ctx = task_context(task_id="delta_job")
    with pytest.raises(CommitOutsidePairError, match=r"version 0 of .* without txnAppId=.*without a run marker") as e:
        op.execute(ctx)
    assert isinstance(e.value, CommitFailedError) and isinstance(e.value, AirflowFailException)   # no retry
    assert "commit" not in ctx["ti"].xcoms
    assert asset not in ctx["outlet_events"] or not ctx["outlet_events"][asset].extra
    table = DeltaTable(str(out))
    assert table.latest_version() == 0 and sorted(r["id"] for r in table.snapshot().to_pyarrow().to_pylist()) == [1, 2]


@pytest.mark.spark
def test_a_commit_that_names_another_run_is_not_this_try(monkeypatch, spark, tmp_path, source):  # noqa: F811
    """A concurrent writer that names its run (another task's marker) while this application changes
    nothing: the task succeeds with "no commit"."""
    out = tmp_path / "out"
    spark.createDataFrame([(1, "a")], "id long, name string").write.format("delta").save(str(out))
    other = json.dumps({"airflow_run": {"dag_id": "other", "task_id": "t", "run_id": "r", "try_number": 1}})

    def other_run_writes_then_delete_nothing(job):
        spark.createDataFrame([(7, "x")], "id long, name string").write.format("delta") \
            .options(txnAppId="other.t", txnVersion="3", userMetadata=other).mode("append").save(job.output_table_uri)
        spark.conf.unset("spark.databricks.delta.write.txnVersion")    # as if the pair went to a DELETE
    _in_session(monkeypatch, spark, other_run_writes_then_delete_nothing)
    op, _ = _app_operator(out, source)
    ctx = task_context(task_id="delta_job")
    assert op.execute(ctx) is None
    assert ctx["ti"].xcoms["commit"]["version"] is None


@pytest.mark.spark
def test_an_anonymous_concurrent_write_fails_the_task_and_a_cleared_run_announces_the_pair(
        monkeypatch, spark, tmp_path, source):  # noqa: F811
    """The price of the rule: a writer that names nobody (here this library's plain DeltaTable.write)
    commits to the output while the application writes its pair. The log cannot tell it from the
    application's own write outside the pair, so the try fails; clearing the task (try 2) finds the
    pair committed, does not run the application, and announces its commit."""
    from airflow_provider_delta.operators.delta_spark import CommitOutsidePairError
    out = tmp_path / "out"

    def copy_while_another_writer_appends(job):
        df = spark.read.format("delta").options(**job.read_options).load(job.input_table_uri)
        df.write.format("delta").mode("append").save(job.output_table_uri)
        DeltaTable(str(out)).write(pa.table({"id": [9], "name": ["z"]}, schema=SCHEMA))
    _in_session(monkeypatch, spark, copy_while_another_writer_appends)
    op, _ = _app_operator(out, source)
    with pytest.raises(CommitOutsidePairError, match=r"version 1 of .*the log cannot tell which"):
        op.execute(task_context(task_id="delta_job"))
    retry, asset = _app_operator(out, source)
    ctx = task_context(task_id="delta_job", try_number=2)
    assert retry.execute(ctx) == 0
    assert ctx["outlet_events"][asset].extra["version"] == 0
    assert sorted(r["id"] for r in DeltaTable(str(out)).snapshot().to_pyarrow().to_pylist()) == [1, 2, 9]
