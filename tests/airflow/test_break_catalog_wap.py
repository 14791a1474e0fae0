"""Write-audit-publish task retries through the real hook (review branch break-catalog).

The hook reads its ``delta`` connection from an ``AIRFLOW_CONN_*`` environment variable naming a
SQLite SqlCatalog; the tasks' calls are made as Airflow would make them on a retry.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest

from airflow_provider_delta.hooks import DeltaTableHook
from airflow_provider_delta.log import DeltaTable, GroupCommitError, SqlCatalog

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


@pytest.mark.xfail(strict=True, reason="a writer task retried after its stage_write succeeded (the worker died "
                   "before the task was marked done) fails for good with InvalidArgumentError 'already has a "
                   "commit in transaction': stage_write is not idempotent per (transaction, table), so one lost "
                   "task success aborts the whole write-audit-publish run")
def test_writer_task_retry_after_staging_fails_the_transaction(wap):
    hook, catalog, (a, b) = wap
    tx = hook.begin_transaction()
    hook.stage_write(tx, a, data("x"))
    hook.stage_write(tx, a, data("x"))                           # Airflow's retry of the same task
    hook.stage_write(tx, b, data("y"))
    assert hook.publish_transaction(tx) == {a: 1, b: 1}
    assert DeltaTable(a, catalog=catalog).snapshot().to_pyarrow().num_rows == 1
