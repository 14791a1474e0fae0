"""A skip resting on a higher recorded txn version whose commit a RESTORE undid fails typed on every Spark path.

A user-chosen pair (app_id "orders_load", app_version 1500) that no commit holds is a skip because the table
records 2000 for that app id; when a RESTORE undid the commit of 2000, the skip would report a write whose rows
are not in the table. The hook and commit_dataframe checked the recorded version's commit already; the Spark
operators and the spark-submit job (spark/job.py) checked only the version asked for, found no commit of 1500
and skipped in silence. No Spark session: the operators run with a spark-submit that records being called, and
the job's skip happens before it touches Spark.
"""
from __future__ import annotations

import stat
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, PairUndoneByRestoreError
from task_context import task_context

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])


def _undone_higher_pair(tmp_path: Path) -> DeltaTable:
    """Version 1: orders_load 1000; 2: orders_load 2000; 3: RESTORE to 1 (undoes 2000's rows)."""
    out = DeltaTable.create(str(tmp_path / "out"), SCHEMA)
    out.write(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA), app_id="orders_load", app_version=1000)
    out.write(pa.table({"id": [2], "name": ["b"]}, schema=SCHEMA), app_id="orders_load", app_version=2000)
    out.restore(version=1)
    return out


def _recording_spark_submit(tmp_path: Path) -> str:
    path = tmp_path / "spark-submit-records"
    path.write_text(f"#!/bin/sh\necho called > {tmp_path}/spark-submit-was-called\nexit 7\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _operator(tmp_path: Path, out: DeltaTable, which: str, app_version: int):
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator, DeltaSparkSubmitOperator
    common = dict(task_id="job", conn_id="spark_not_defined", output_table_uri=str(out.uri),
                  app_id="orders_load", app_version=app_version, spark_binary=_recording_spark_submit(tmp_path))
    if which == "application":
        return DeltaSparkApplicationOperator(application="app.py", **common)
    src = DeltaTable.create(str(tmp_path / "src"), SCHEMA)
    return DeltaSparkSubmitOperator(input_table_uri=str(src.uri), transform="identity", **common)


@pytest.mark.parametrize("which", ["application", "submit"])
def test_an_operator_refuses_a_skip_resting_on_an_undone_higher_version(tmp_path, which):
    out = _undone_higher_pair(tmp_path)
    with pytest.raises(PairUndoneByRestoreError) as raised:
        _operator(tmp_path, out, which, 1500).execute(task_context(task_id="job", try_number=1))
    text = str(raised.value)
    assert "no commit holds txnVersion=1500" in text and "more than 2000" in text and raised.value.version == 2
    assert not (tmp_path / "spark-submit-was-called").exists() and out.latest_version() == 3


@pytest.mark.parametrize("which", ["application", "submit"])
def test_an_operator_skips_when_the_higher_version_it_rests_on_is_live(tmp_path, which):
    """The other side: no RESTORE, the recorded 2000 is live, so 1500 is a skip reported as the table's pair."""
    out = DeltaTable.create(str(tmp_path / "out"), SCHEMA)
    out.write(pa.table({"id": [1], "name": ["a"]}, schema=SCHEMA), app_id="orders_load", app_version=2000)
    _operator(tmp_path, out, which, 1500).execute(task_context(task_id="job", try_number=1))
    assert not (tmp_path / "spark-submit-was-called").exists() and out.latest_version() == 1


def test_the_spark_job_refuses_a_skip_resting_on_an_undone_higher_version(tmp_path):
    from airflow_provider_delta.spark.job import run
    from airflow_provider_delta.spark.job_args import JobSpec
    out = _undone_higher_pair(tmp_path)
    spec = JobSpec(output_table_uri=str(out.uri), transform="identity", app_id="orders_load", app_version=1500)
    with pytest.raises(PairUndoneByRestoreError, match="more than 2000"):
        run(None, spec)                          # the skip is decided before Spark is touched
    assert out.latest_version() == 3
