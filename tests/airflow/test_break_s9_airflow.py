"""Break review s9 of the late s8 Airflow fixes: findings as strict xfails (real tables, the operators'
execute with the suite's recording task instance)."""
from __future__ import annotations

import datetime as dt
import os

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable, TableAlreadyExistsError


def test_a_retried_clone_of_another_source_is_not_taken_for_its_own(make_table, make_context, tmp_path):
    """The retry check compared the task instance and the source version, not the source: a retry whose
    source_uri rendered to another table reported the first try's clone of table a as its clone of b."""
    from airflow_provider_delta.operators import DeltaCloneOperator
    a = make_table("a", commits=1)
    b = make_table("b", commits=1)
    target = str(tmp_path / "clone")
    DeltaCloneOperator(task_id="clone", source_uri=a.storage.root, table_uri=target).execute(make_context("clone"))
    retry = make_context("clone")
    retry["ti"].try_number = 2
    with pytest.raises(TableAlreadyExistsError):
        DeltaCloneOperator(task_id="clone", source_uri=b.storage.root, table_uri=target, version="1").execute(retry)


def test_a_retried_clone_at_a_timestamp_of_another_version_is_not_taken_for_its_own(make_table, make_context,
                                                                                     tmp_path):
    """With a timestamp the source version was not compared at all: the retry asking for the version at
    its timestamp (2) took the first try's clone of version 1 for its own."""
    from airflow_provider_delta.operators import DeltaCloneOperator
    src = make_table("a", commits=2)
    t1, t2 = src.snapshot(version=1).timestamp, src.snapshot(version=2).timestamp
    target = str(tmp_path / "clone")
    DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target, timestamp=t1).execute(
        make_context("clone"))
    assert DeltaTable(target).history()[0]["operationParameters"]["sourceVersion"] in (1, "1")
    retry = make_context("clone")
    retry["ti"].try_number = 2
    with pytest.raises(TableAlreadyExistsError):
        DeltaCloneOperator(task_id="clone", source_uri=src.storage.root, table_uri=target, timestamp=t2).execute(retry)


def test_a_retried_rollback_to_a_timestamp_of_another_version_is_refused(make_table, make_context):
    """Like the clone: with a timestamp the restored version was not compared, so a retry asking for the
    version at its timestamp (2) took the first try's RESTORE of version 1 for its own and reported it."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    from airflow_provider_delta.operators.restore import DeltaRollbackRefusedError
    table = make_table("a", commits=3)
    t1, t2 = table.snapshot(version=1).timestamp, table.snapshot(version=2).timestamp
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, timestamp=t1,
                         expected_version=3).execute(make_context("rollback"))
    assert DeltaTable(table.uri).latest_version() == 4
    retry = make_context("rollback")
    retry["ti"].try_number = 2
    with pytest.raises(DeltaRollbackRefusedError):
        DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, timestamp=t2,
                             expected_version=3).execute(retry)
    assert DeltaTable(table.uri).latest_version() == 4


def test_a_retried_rollback_to_a_timestamp_whose_restore_landed_succeeds(make_table, make_context):
    """The retry fix (06439fe) for a guarded rollback whose RESTORE landed before its worker died: with a
    timestamp instead of a version the commit records no version, so the retry was refused forever."""
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = make_table("a", commits=3)
    t1 = table.snapshot(version=1).timestamp
    DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, timestamp=t1,
                         expected_version=3).execute(make_context("rollback"))
    retry = make_context("rollback")
    retry["ti"].try_number = 2
    out = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, timestamp=t1,
                               expected_version=3).execute(retry)
    assert out["version"] == 4 and out["restored_version"] == 1 and out["committed"] is True
    assert DeltaTable(table.uri).latest_version() == 4


def test_two_dags_whose_dotted_ids_concatenate_alike_do_not_share_an_exactly_once_id(make_table, make_context):
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators.spark_base import resolve_app
    table = make_table("orders", commits=0)
    interval = {"data_interval_start": dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc),
                "data_interval_end": dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)}
    first = make_context("load", **interval)
    first["ti"].dag_id = "sales.daily"
    second = make_context("daily.load", **interval)          # a task in task group 'daily' of DAG 'sales'
    second["ti"].dag_id = "sales"
    hook = DeltaTableHook()
    for ctx, name in ((first, "a"), (second, "b")):
        app_id, version = resolve_app(None, None, ctx, None)
        path = f"day=2026-01-01/{name}.parquet"
        os.makedirs(os.path.join(table.storage.root, "day=2026-01-01"), exist_ok=True)
        pq.write_table(pa.table({"id": [1]}), os.path.join(table.storage.root, path))
        size = os.path.getsize(os.path.join(table.storage.root, path))
        hook.commit_files(table.storage.root, add=[{"path": path, "size": size,
                                                    "partition_values": {"day": "2026-01-01"},
                                                    "modification_time": 1, "data_change": True}],
                          app_id=app_id, txn_version=version)
    assert DeltaTable(table.uri).snapshot().to_pyarrow().num_rows == 2     # both DAGs' rows


def test_app_id_filters_match_the_colon_ids_and_the_dotted_spelling_of_earlier_releases():
    """The default ids join DAG and task with ':' (outside Airflow's id characters); a filter in the old
    'dag.task' spelling still matches them, and 'dag:task' names exactly one of two dotted pairs."""
    from airflow_provider_delta.hooks.run_identity import app_id_matches
    assert app_id_matches("dag:load", "dag:load@x") and app_id_matches("dag:load", "dag:load[3]@x")
    assert app_id_matches("dag.load", "dag:load@x") and app_id_matches("dag.load", "dag:load[3]@x")
    assert app_id_matches("dag.load", "dag.load@x")                       # ids committed by earlier releases
    assert not app_id_matches("dag.load", "dag:loader@x") and not app_id_matches("dag.lo", "dag:load@x")
    assert app_id_matches("sales:daily.load", "sales:daily.load@x")
    assert not app_id_matches("sales:daily.load", "sales.daily:load@x")
    assert not app_id_matches("sales.daily:load", "sales:daily.load@x")
    assert app_id_matches("sales.daily.load", "sales:daily.load@x") and app_id_matches("sales.daily.load",
                                                                                       "sales.daily:load@x")
    assert not app_id_matches("dag:load", "dag.load@x")       # the new spelling is exact
