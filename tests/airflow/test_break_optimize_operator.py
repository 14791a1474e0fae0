"""Break attempts on ``DeltaOptimizeOperator`` and its Spark job (issue #24): each test is a finding."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_delta.log import DeltaTable, plan_optimize
from airflow_provider_delta.operators import DeltaOptimizeOperator
from airflow_provider_delta.spark.optimize_job import parse_arguments


def _two_columns_table(tmp_path) -> DeltaTable:
    table = DeltaTable(str(tmp_path / "t"))
    for i in range(3):
        table.write(pa.table({"p": ["a", "b"], "x": [0.1 * i, 0.2 * i], "y": [i, i]}),
                    partition_by=["p"] if i == 0 else None)
    return table


def test_the_spark_job_takes_an_or_partition_filter(tmp_path):
    table = _two_columns_table(tmp_path)
    or_filter = [[("p", "=", "a")], [("p", "=", "b")]]
    assert len(plan_optimize(table, partition_filter=or_filter).bins) == 2      # the log layer takes it
    # what the job receives: the filter as JSON (tuples become lists)
    doc = parse_arguments(json.dumps({"table_uri": table.storage.root, "partition_filter": or_filter}))
    assert len(plan_optimize(table, partition_filter=doc["partition_filter"]).bins) == 2


# Found: a list param rendered to Python text ("['x', 'y']") was refused as "not a JSON list".
def test_z_order_by_rendered_from_a_list_param(tmp_path, make_context):
    table = _two_columns_table(tmp_path)
    op = DeltaOptimizeOperator(task_id="z", table_uri=table.storage.root, z_order_by="{{ params.cols }}")
    ctx = make_context(task_id="z", params={"cols": ["x", "y"]})
    op.render_template_fields(ctx)
    assert op.z_order_by == "['x', 'y']"
    assert op.execute(ctx)["zOrderBy"] == ["x", "y"]


# Found: target_size='lots' failed with the log layer's InvalidArgumentError, so the task was retried.
def test_a_bad_rendered_target_size_fails_without_retries(tmp_path, make_context):
    table = _two_columns_table(tmp_path)
    version = table.latest_version()
    op = DeltaOptimizeOperator(task_id="o", table_uri=table.storage.root, target_size="{{ params.size }}")
    ctx = make_context(task_id="o", params={"size": "lots"})
    op.render_template_fields(ctx)
    with pytest.raises(AirflowFailException):
        op.execute(ctx)
    assert table.latest_version() == version


@pytest.mark.parametrize("field, value", [
    ("min_file_size", "lots"), ("target_size", "-5"), ("z_order_by", "nope"), ("z_order_by", "p"),
    ("z_order_by", "[x]"), ("partition_filter", [("nope", "=", "a")]), ("partition_filter", "p = a"),
    ("max_concurrent", "0"), ("purge", "None"), ("engine", "None")])
@pytest.mark.parametrize("engine", ["local", "spark"])
def test_every_bad_rendered_argument_fails_without_retries(tmp_path, make_context, field, value, engine):
    """Each argument the log layer refuses is DeltaArgumentError (AirflowFailException) for both engines,
    before anything is written or submitted (the spark engine never reaches spark-submit here)."""
    table = _two_columns_table(tmp_path)
    version = table.latest_version()
    op = DeltaOptimizeOperator(task_id="o", table_uri=table.storage.root, **{"engine": engine, field: "{{ v }}"})
    setattr(op, field, value)
    with pytest.raises(AirflowFailException):
        op.execute(make_context(task_id="o"))
    assert table.latest_version() == version
