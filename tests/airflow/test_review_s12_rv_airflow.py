"""Review s12-rv-airflow (issue #23): docs/examples.md's "Run the examples under a real Airflow",
followed by hand on a deployment of its own (api-server :28080, scheduler, dag-processor, triggerer,
LocalExecutor, PostgreSQL metadata database), and what it showed.

Each test is a small reproduction of one finding, marked strict xfail until it is fixed.
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_owner import SqlCommitOwner
from airflow_test_support import airflow_deploy

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = pa.schema([("id", pa.int64())])


def _managed_table(tmp_path: Path) -> tuple[str, str]:
    """A managed-commit table (SQLite commit owner backfilling after every commit) at versions 0..2."""
    owner_url = f"sqlite:///{tmp_path / 'owner.db'}"
    uri = str(tmp_path / "orders")
    t = DeltaTable.create(uri, SCHEMA, commit_owner=SqlCommitOwner(owner_url, backfill_batch_size=1))
    t.write(pa.table({"id": [1]}))
    t.write(pa.table({"id": [2]}))
    return uri, owner_url


def _connection(monkeypatch, owner_url: str) -> None:
    """The ``rv_managed`` delta connection naming that commit owner (as the example's delta_example does)."""
    monkeypatch.setenv("AIRFLOW_CONN_RV_MANAGED", json.dumps(
        {"conn_type": "delta", "extra": {"commit_owner": {"type": "sql", "url": owner_url,
                                                          "backfill_batch_size": 1}}}))


def test_commits_since_a_version_on_a_fresh_managed_table(tmp_path):
    uri, owner_url = _managed_table(tmp_path)
    assert [c.version for c in DeltaTable(uri).commits_since(1).commits] == [2]      # without the owner: fine
    reader = DeltaTable(uri, commit_owner=SqlCommitOwner(owner_url, backfill_batch_size=1))
    assert [c.version for c in reader.commits_since(1).commits] == [2]


def test_commit_watch_through_the_connection_from_a_version(tmp_path, monkeypatch):
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.hooks.commits import CommitWatch

    uri, owner_url = _managed_table(tmp_path)
    _connection(monkeypatch, owner_url)
    table = DeltaTableHook("rv_managed").get_table(uri)
    watch = CommitWatch(after_version=1, operation="WRITE", keep=None)
    watch.poll(table)
    assert [c["version"] for c in watch.commits] == [2]


def test_the_pages_steps_add_every_connection_the_script_adds():
    page = (ROOT / "docs" / "examples.md").read_text()
    section = page.split("## Run the examples under a real Airflow", 1)[1]
    added = set(re.findall(r"airflow connections add (\w+)", section))
    assert set(airflow_deploy.example_connections(ROOT / "example_output")) <= added, added


def test_deferred_commit_sensor_on_a_managed_table_fires(tmp_path, monkeypatch):
    import asyncio

    from airflow_provider_delta.triggers import DeltaCommitTrigger

    uri, owner_url = _managed_table(tmp_path)
    _connection(monkeypatch, owner_url)
    trigger = DeltaCommitTrigger(table_uri=uri, delta_conn_id="rv_managed", after_version=1, poke_interval=0.1)

    async def first_event():
        async for event in trigger.run():
            return event.payload

    payload = asyncio.run(asyncio.wait_for(first_event(), 30))
    assert payload["status"] == "success", payload
    assert payload["version"] == 2, payload


def test_restore_with_a_version_rendered_none_fails_without_retry(tmp_path):
    from airflow.providers.common.compat.sdk import AirflowFailException

    from airflow_provider_delta.operators import DeltaRestoreOperator

    uri = str(tmp_path / "t")
    t = DeltaTable.create(uri, SCHEMA)
    t.write(pa.table({"id": [1]}))
    op = DeltaRestoreOperator(task_id="restore", table_uri=uri, version="None")
    with pytest.raises(Exception) as e:
        op.execute({"ti": None})
    assert DeltaTable(uri).latest_version() == 1                       # nothing changed: the safe side
    assert isinstance(e.value, AirflowFailException), type(e.value).__mro__
