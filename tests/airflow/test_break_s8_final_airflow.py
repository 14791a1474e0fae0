"""Break review of the late s8 Airflow fixes: findings as strict xfails (real tables, the operators'
execute with the suite's recording task instance)."""
from __future__ import annotations

import pytest

from airflow_provider_delta.log import DeltaTable, TableAlreadyExistsError


def test_a_mapped_sibling_clone_into_the_same_target_is_not_taken_for_an_earlier_try(make_table, make_context, tmp_path):
    from airflow_provider_delta.operators import DeltaCloneOperator
    a = make_table("a", commits=1)
    b = make_table("b", commits=2)
    target = str(tmp_path / "clone")
    first = make_context("clone")
    first["ti"].map_index = 0
    DeltaCloneOperator(task_id="clone", source_uri=a.storage.root, table_uri=target).execute(first)
    second = make_context("clone")
    second["ti"].map_index = 1
    with pytest.raises(TableAlreadyExistsError):
        DeltaCloneOperator(task_id="clone", source_uri=b.storage.root, table_uri=target).execute(second)


def test_a_retried_clone_of_another_version_is_not_taken_for_its_own(make_table, make_context, tmp_path):
    from airflow_provider_delta.operators import DeltaCloneOperator
    src = make_table("a", commits=2)
    target = str(tmp_path / "clone")
    DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target, version="1").execute(
        make_context("clone"))
    retry = make_context("clone")
    retry["ti"].try_number = 2
    with pytest.raises(TableAlreadyExistsError):
        DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target, version="2").execute(retry)
    assert DeltaTable(target).latest_version() == 0


def test_the_app_id_filter_of_a_task_matches_its_mapped_instances_commits(make_table):
    from airflow_provider_delta.hooks.commits import CommitWatch
    table = make_table(commits=0)
    with table.transaction(operation="WRITE") as txn:
        txn.set_txn("dag.load[1]@20260101T000000Z-20260102T000000Z", 1767312000)
    with table.transaction(operation="WRITE") as txn:
        txn.set_txn("dag.load_other[0]@x", 1)
    watch = CommitWatch(after_version=0, app_id="dag.load")
    watch.poll(table)
    assert [c["version"] for c in watch.commits] == [1]
    from airflow_provider_delta.hooks.run_identity import app_id_matches
    assert app_id_matches("dag.load", "dag.load[12]") and app_id_matches("dag.load", "dag.load@x")
    assert not app_id_matches("dag.load", "dag.load[1]x@y") and not app_id_matches("dag.load", "dag.loader@x")


@pytest.mark.parametrize("item", [
    {f"param{i}": "p" * 1000 for i in range(64)},
    [{"k": "p" * 1000}] * 64,
], ids=["flat-dict", "list"])
def test_a_clipped_item_stays_within_its_byte_bound(item):
    from airflow_provider_delta.hooks.payloads import MAX_ITEM_BYTES, clipped, json_size
    assert json_size(clipped(item)) <= MAX_ITEM_BYTES + 512


def test_a_clipped_item_with_bytes_stays_within_its_byte_bound():
    from airflow_provider_delta.hooks.payloads import MAX_ITEM_BYTES, clipped, json_size
    assert json_size(clipped({"blob": b"x" * 100_000})) <= MAX_ITEM_BYTES + 512


def _written_add(root: str, name: str, value: int) -> dict:
    import json
    import os

    import pyarrow as pa
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"id": [value], "day": ["2026-01-01"]}), os.path.join(root, name))
    return {"path": name, "size": os.path.getsize(os.path.join(root, name)), "partition_values": {"day": "2026-01-01"},
            "modification_time": 1, "data_change": True, "stats": json.dumps({"numRecords": 1})}


def test_commit_files_with_a_recorded_txn_version_commits_nothing(make_table):
    from airflow_provider_delta.hooks.delta_table import DeltaTableHook
    table = make_table(commits=0)
    root = table.storage.root.removeprefix("file://")
    hook = DeltaTableHook()
    first = hook.commit_files(table.uri, add=[_written_add(root, "a.parquet", 1)], app_id="loader", txn_version=5)
    # the retry wrote its file anew (a new name), as a retried task does
    again = hook.commit_files(table.uri, add=[_written_add(root, "a-retry.parquet", 1)], app_id="loader", txn_version=5)
    assert again == first
    assert DeltaTable(table.uri).snapshot().to_pyarrow().num_rows == 1


def test_a_mapped_spark_applications_run_marker_names_its_instance(make_context):
    """The map index now in commitInfo.job (job_info) reaches the Delta Spark run marker too, so a
    mapped DeltaSparkApplicationOperator retry still recognises its own commit, and only its own."""
    from airflow_provider_delta.operators.base import job_info, same_task_run
    from airflow_provider_delta.spark.delta_job import DeltaJobContext, parse_run_marker
    mine = make_context("load")
    mine["ti"].map_index = 1
    sibling = make_context("load")
    sibling["ti"].map_index = 0
    ctx = DeltaJobContext(input_table_uri=None, input_version=None, output_table_uri="/tmp/out",
                          txn_app_id="d.load[1]@x", txn_version=1, job=job_info(mine))
    origin = parse_run_marker(ctx.run_marker)
    assert same_task_run(origin, mine) and not same_task_run(origin, sibling)


_MAPPED_ROLLBACK_DAG = '''
import datetime as dt
import os

from airflow.sdk import DAG, task

from airflow_provider_delta.operators import DeltaRestoreOperator

with DAG("mapped_rollback", schedule=None, start_date=dt.datetime(2026, 1, 1), catchup=False):
    @task
    def guards():
        return [None]          # the load pushed no version: no guard to give

    DeltaRestoreOperator.partial(task_id="rollback", table_uri=os.environ["TABLE"], version="1").expand(
        expected_version=guards())
'''


@pytest.mark.airflow
def test_a_mapped_rollback_whose_guard_resolves_to_none_is_refused(make_table, run_dag, tmp_path):
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "mapped_rollback.py").write_text(_MAPPED_ROLLBACK_DAG)
    table = make_table(commits=2)
    before = table.latest_version()
    report = run_dag("mapped_rollback", env={"TABLE": table.uri}, dags_folder=dags)
    assert DeltaTable(table.uri).latest_version() == before
    assert report.tasks["rollback"] == "failed"
