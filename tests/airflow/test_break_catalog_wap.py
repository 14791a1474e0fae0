"""Write-audit-publish task retries through the real hook (review branch break-catalog).

The hook reads its ``delta`` connection from an ``AIRFLOW_CONN_*`` environment variable naming a
SQLite SqlCatalog; the tasks' calls are made as Airflow would make them on a retry.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.hooks import DeltaTableHook
from airflow_provider_delta.log import DeltaTable, GroupCommitError, InvalidArgumentError, SqlCatalog

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("g", pa.string()), ("n", pa.int64())])


@pytest.fixture
def wap(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/catalog.db"
    monkeypatch.setenv("AIRFLOW_CONN_DELTA_BREAK_WAP",
                       json.dumps({"conn_type": "delta", "extra": {"catalog": {"url": url}}}))
    catalog = SqlCatalog(url)
    tables = [DeltaTable.create(str(tmp_path / n), SCHEMA, catalog=catalog).uri for n in ("a", "b")]
    yield DeltaTableHook("delta_break_wap"), catalog, tables
    catalog.dispose()


def data(g: str) -> pa.Table:
    return pa.table({"g": [g], "n": [1]}, schema=SCHEMA)


def test_publish_retried_after_success_and_abort_after_publish(wap):
    hook, catalog, (a, b) = wap
    tx = hook.begin_transaction()
    hook.stage_write(tx, a, data("x"))
    hook.stage_write(tx, b, data("y"))
    assert hook.publish_transaction(tx) == {a: 1, b: 1}
    assert hook.publish_transaction(tx) == {a: 1, b: 1}          # the retry: same answer, nothing new
    with pytest.raises(GroupCommitError, match="ratified"):
        hook.abort_transaction(tx)
    assert catalog.latest_versions([a, b]) == {a: 1, b: 1}
    assert DeltaTable(a, catalog=catalog).snapshot().to_pyarrow().num_rows == 1


def test_writer_task_retry_after_staging_finds_its_staged_commit(wap):
    """A writer task retried after its stage_write succeeded (the worker died before the task was
    marked done) stages nothing again: it gets its earlier member's version, the group publishes."""
    hook, catalog, (a, b) = wap
    tx = hook.begin_transaction()
    hook.stage_write(tx, a, data("x"), writer="dag.write_a")     # the task's key, the same in every try
    hook.stage_write(tx, a, data("x"), writer="dag.write_a")     # Airflow's retry of the same task
    hook.stage_write(tx, b, data("y"), writer="dag.write_b")
    assert hook.publish_transaction(tx) == {a: 1, b: 1}
    assert DeltaTable(a, catalog=catalog).snapshot().to_pyarrow().num_rows == 1


def test_two_anonymous_writes_of_one_table_outside_a_task_are_refused_not_merged(wap):
    """Outside a task there is no identity to tell a retry from a second writer: the second write of
    the same table is refused (nothing written) rather than taken for a retry and its data dropped."""
    hook, catalog, (a, b) = wap
    tx = hook.begin_transaction()
    hook.stage_write(tx, a, data("x"))
    files = sorted(os.listdir(local(a)))
    with pytest.raises(InvalidArgumentError):
        hook.stage_write(tx, a, data("z"))
    assert sorted(os.listdir(local(a))) == files                                     # no data file written
    hook.stage_write(tx, b, data("y"))
    assert hook.publish_transaction(tx) == {a: 1, b: 1}
    assert DeltaTable(a, catalog=catalog).snapshot().to_pyarrow().column("g").to_pylist() == ["x"]


def test_writer_retry_after_publish_returns_the_published_member(wap):
    hook, catalog, (a, b) = wap
    tx = hook.begin_transaction()
    hook.stage_write(tx, a, data("x"), writer="dag.write_a")
    hook.stage_write(tx, b, data("y"), writer="dag.write_b")
    assert hook.publish_transaction(tx) == {a: 1, b: 1}
    assert hook.stage_write(tx, a, data("x"), writer="dag.write_a") == 1     # a late retry: no new commit
    assert catalog.latest_versions([a, b]) == {a: 1, b: 1}
    assert parquet_files(a) == 1                                               # no second data file


def test_another_writer_on_a_staged_table_is_refused_and_changes_nothing(wap):
    hook, catalog, (a, b) = wap
    tx = hook.begin_transaction()
    hook.stage_write(tx, a, data("x"), writer="dag.write_a")
    files = sorted(os.listdir(local(a)))
    with pytest.raises(InvalidArgumentError, match="staged by writer 'dag.write_a'"):
        hook.stage_write(tx, a, data("z"), writer="dag.other_task")
    assert sorted(os.listdir(local(a))) == files                                     # no data file written
    hook.stage_write(tx, b, data("y"), writer="dag.write_b")
    assert hook.publish_transaction(tx) == {a: 1, b: 1}
    assert DeltaTable(a, catalog=catalog).snapshot().to_pyarrow().column("g").to_pylist() == ["x"]


def test_concurrent_tries_of_one_writer_stage_one_member(wap):
    """Two tries of the same writer race (a zombie and its retry, both past the staged_version check):
    the loser's add is refused by the catalog, it keeps the winner's member and deletes its own files."""
    hook, catalog, (a, b) = wap
    tx_id = hook.begin_transaction()
    first, second = catalog.group(tx_id), catalog.group(tx_id)
    first.write(a, data("x"), writer="dag.write_a")
    second.write(a, data("x2"), writer="dag.write_a")          # both wrote before either staged
    first.stage()
    second.stage()                                             # loses the add: adopts first's member
    assert [m.file_name for m in second.members] == [m.file_name for m in first.members]
    assert len(os.listdir(os.path.join(local(a), "_delta_log", "_staged_commits"))) == 1
    hook.stage_write(tx_id, b, data("y"), writer="dag.write_b")
    assert hook.publish_transaction(tx_id) == {a: 1, b: 1}
    assert DeltaTable(a, catalog=catalog).snapshot().to_pyarrow().column("g").to_pylist() == ["x"]
    assert parquet_files(a) == 1                               # the loser's data file is gone


def local(uri: str) -> str:
    return uri.removeprefix("file://")


def parquet_files(uri: str) -> int:
    return sum(n.endswith(".parquet") for _, _, names in os.walk(local(uri)) for n in names)
