"""``DeltaOptimizeOperator`` through execute(context) on real tables (local engine), and in a DAG run."""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.operators import DeltaOptimizeOperator


def _many_small_files(make_table) -> DeltaTable:
    table = make_table(commits=6)
    for i in range(6):
        table.write(pa.table({"id": [100 + i], "day": ["2026-01-01"]}))
    return table


def test_optimize_commits_returns_bounded_metrics_and_emits_an_event(make_table, make_context):
    table = _many_small_files(make_table)
    before = sorted(table.snapshot().to_pyarrow().column("id").to_pylist())
    asset = to_asset(table_uri=table.storage.root)
    ctx = make_context(task_id="optimize")
    op = DeltaOptimizeOperator(task_id="optimize", table_uri=table.storage.root, target_size="{{ '64mb' }}",
                               outlets=[asset])
    op.render_template_fields(ctx)
    result = op.execute(ctx)
    json.dumps(result)                                       # XCom-ready
    assert result["version"] == table.latest_version() and result["numFilesRemoved"] >= 7
    assert result["engine"] == "local" and "files" not in result
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == before
    entry = table.history(1)[0]
    assert entry["operation"] == "OPTIMIZE" and entry["job"]["task_id"] == "optimize"
    extra = ctx["outlet_events"][asset].extra
    assert extra["version"] == result["version"] and extra["dataChange"] is False
    assert extra["maintenance"] == "optimize"
    # nothing left to do: no commit, no asset event
    ctx2 = make_context(task_id="optimize")
    op2 = DeltaOptimizeOperator(task_id="optimize", table_uri=table.storage.root, target_size="64mb",
                                outlets=[asset])
    again = op2.execute(ctx2)
    assert again["version"] is None and op2.outlets == []


def test_zorder_and_purge_arguments_from_templates(make_table, make_context):
    table = make_table(commits=4)
    op = DeltaOptimizeOperator(task_id="z", table_uri=table.storage.root, z_order_by="{{ 'id' }}",
                               target_size="1000000")
    ctx = make_context()
    op.render_template_fields(ctx)
    result = op.execute(ctx)
    assert result["zOrderBy"] == ["id"] and result["version"] is not None
    assert json.loads(table.history(1)[0]["operationParameters"]["zOrderBy"]) == ["id"]


def test_bad_arguments_fail_before_anything_is_written(make_table, make_context):
    table = make_table(commits=3)
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError):
        DeltaOptimizeOperator(task_id="o", table_uri=table.storage.root, engine="dask")
    for kwargs in ({"z_order_by": "day"}, {"target_size": "-1"}, {"partition_filter": [("id", "=", 1)]}):
        with pytest.raises(InvalidArgumentError):
            DeltaOptimizeOperator(task_id="o", table_uri=table.storage.root, **kwargs).execute(make_context())
    assert table.latest_version() == version


def test_templated_fields():
    assert set(DeltaOptimizeOperator.template_fields) >= {"table_uri", "target_size", "min_file_size", "z_order_by"}


def test_optimize_in_a_dag_run(run_dag, tmp_path):
    """A real DAG run (the run_dag fixture): compaction, Z-order, then a vacuum dry run."""
    table = DeltaTable.create(str(tmp_path / "orders"), pa.schema([("id", pa.int64()), ("day", pa.string())]),
                              partition_by=["day"])
    for i in range(5):
        table.write(pa.table({"id": [i, 10 + i], "day": ["2026-01-01", "2026-01-02"]}))
    before = sorted(table.snapshot().to_pyarrow().column("id").to_pylist())
    report = run_dag("delta_optimize", env={"DELTA_TEST_TABLE": table.storage.root})
    assert report.state == "success", report.output[-5000:]
    compact = report.xcoms["compact"]["return_value"]
    zorder = report.xcoms["zorder"]["return_value"]
    assert compact["version"] == 6 and compact["numFilesRemoved"] == 10 and compact["numFilesAdded"] == 2
    assert zorder["version"] == 7 and zorder["zOrderBy"] == ["id"]
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == before
    assert [h["operation"] for h in table.history(2)] == ["OPTIMIZE", "OPTIMIZE"]
    assert table.history(2)[1]["job"]["dag_id"] == "delta_optimize"
    events = [e for e in report.asset_events if e["source_task_id"] == "compact"]
    assert len(events) == 1 and events[0]["extra"]["version"] == 6 and events[0]["extra"]["dataChange"] is False
    assert report.xcoms["vacuum"]["return_value"]["dry_run"] is True
