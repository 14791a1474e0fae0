"""Review s12 (report-only) of the post-put hole check, through the Spark write path: spark/commit.py
commit_dataframe resolves a failed commit with Transaction.landed_version(). Each test is an open finding, a
strict xfail until fixed. Store wrapper: tests/log/test_review_s12_rv_hole.py CleanupRacesThePut."""
from __future__ import annotations

import os
import sys

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "log"))
from test_review_s12_rv_hole import _outcome, undecided_hole_table  # noqa: E402 - tests/log's wrappers

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64())])


def test_commit_dataframe_does_not_report_a_commit_left_in_a_hole_as_committed(spark, tmp_path):
    from airflow_provider_delta.spark.commit import commit_dataframe
    t = undecided_hole_table(tmp_path)
    root = t.storage.root
    df = spark.createDataFrame([(3,)], "id long")
    result: list = []
    outcome = _outcome(lambda: result.append(commit_dataframe(df, t, app_id="job", app_version=1)))
    assert os.path.exists(os.path.join(root, "_delta_log", f"{3:020d}.json"))   # our commit, in the hole
    table = DeltaTable(root)
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 50, 60]
    assert table.snapshot().transaction_version("job") is None
    assert outcome == "CommitOutcomeUnknownError", (outcome, result)
