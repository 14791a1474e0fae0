"""The Delta Spark side of tests/log/test_review_s11_rv_paths.py: a commit line holding an add and a remove
(either key order) is the add alone for Delta Spark (SingleAction.unwrap) and for us; the remove's file
stays live for both readers."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from airflow_provider_delta.log import DeltaTable

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "log"))
from test_review_s11_rv_paths import _two_files_then_line  # noqa: E402

pytestmark = pytest.mark.spark


@pytest.mark.parametrize("order", ["add-first", "remove-first"])
def test_delta_spark_and_we_read_a_line_with_an_add_and_a_remove_as_the_add(spark, tmp_path, order):
    uri, keep, drop = _two_files_then_line(tmp_path, order)
    theirs = sorted(r.id for r in spark.read.format("delta").load(uri).collect())
    ours = sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())
    assert theirs == ours == [1, 2, 3, 4]
