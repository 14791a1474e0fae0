"""A writer task run again in the same DAG run: announce its earlier try's commit only if that try did not.

A try that committed and died before reporting recorded no asset event, so the next try announces the
commit it finds (consumers would never hear of the data otherwise). A task run cleared after it
succeeded finds the same commit, but its first try's asset event exists: announcing again would start
every consumer again. The asset events tell the two apart (``announce_earlier_try_commit``). Real
Airflow: ``dag.test()`` in a subprocess; a second run with the same logical date is the same run, its
task cleared.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.assets import asset_uri_for_table
from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.airflow

WHEN = "2026-02-01T00:00:00+00:00"


def _source(tmp_path) -> str:
    uri = str(tmp_path / "orders")
    DeltaTable.create(uri, pa.schema([("id", pa.int64())])).write(pa.table({"id": [1]}))
    return uri


def _events(report, uri: str) -> list[dict]:
    return [e for e in report.asset_events if e["uri"] == asset_uri_for_table(uri)]


def test_a_cleared_writer_does_not_announce_its_commit_again(run_dag, tmp_path):
    source, clone = _source(tmp_path), str(tmp_path / "clone")
    env = {"DELTA_TEST_TABLE": source, "DELTA_TEST_CLONE": clone, "DELTA_DAG_RUN_LOGICAL_DATE": WHEN}
    first = run_dag("delta_cleared_writer", env=env)
    assert first.tasks == {"clone": "success"}, first.output[-5000:]
    assert [e["extra"]["version"] for e in _events(first, clone)] == [0]
    again = run_dag("delta_cleared_writer", env=env)       # the same run, its task cleared
    assert again.tasks == {"clone": "success"}, again.output[-5000:]
    assert "was announced by an earlier try of this task run" in again.output
    assert [e["extra"]["version"] for e in _events(again, clone)] == [0]       # still the one event
    assert again.xcoms["clone"]["return_value"]["version"] == 0
    assert DeltaTable(clone).latest_version() == 0


def test_a_try_that_died_after_committing_is_announced_by_the_next(run_dag, tmp_path):
    source, clone = _source(tmp_path), str(tmp_path / "clone")
    env = {"DELTA_TEST_TABLE": source, "DELTA_TEST_CLONE": clone, "DELTA_DAG_RUN_LOGICAL_DATE": WHEN,
           "DELTA_TEST_LOSE_WORKER": "1"}
    report = run_dag("delta_cleared_writer", env=env)
    assert report.tasks == {"clone": "success"}, report.output[-5000:]
    assert "no earlier try of this task run announced version 0: announcing it now" in report.output
    events = _events(report, clone)
    assert [(e["extra"]["version"], e["extra"]["operation"], e["source_task_id"]) for e in events] == \
        [(0, "CLONE", "clone")]


def test_a_cleared_spark_ingest_does_not_announce_its_commit_again(run_dag, tmp_path):
    """The review's case (DeltaSparkSubmitOperator, report_commit): the run's ingest announces the commit its
    try 1 made and did not report; the same run cleared finds it again and stays silent."""
    table = _source(tmp_path)
    env = {"DELTA_TEST_TABLE": table, "DELTA_DAG_RUN_LOGICAL_DATE": WHEN}
    first = run_dag("delta_cleared_ingest", env=env)
    assert first.tasks == {"try_1_committed": "success", "ingest": "success"}, first.output[-5000:]
    assert [e["extra"]["version"] for e in _events(first, table)] == [2]
    again = run_dag("delta_cleared_ingest", env=env)
    assert again.tasks == {"try_1_committed": "success", "ingest": "success"}, again.output[-5000:]
    assert "was announced by an earlier try of this task run" in again.output
    assert [e["extra"]["version"] for e in _events(again, table)] == [2]
    assert again.xcoms["ingest"]["commit"]["version"] == 2
    assert DeltaTable(table).latest_version() == 2
