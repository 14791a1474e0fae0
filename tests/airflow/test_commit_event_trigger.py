"""DeltaCommitEventTrigger against real tables: events, filters, a missing table, kept position.

The position store here is a dict behind the two async methods the triggerer's
``AssetStateStoreAccessors`` offers (``aget``/``aset``); the real store, with real
scheduler, dag-processor and triggerer processes, is in test_commit_event_processes.py.
"""
from __future__ import annotations

import asyncio
import json
import threading
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.triggers import DeltaCommitEventTrigger
from airflow_provider_delta.triggers import watch_position
from airflow_provider_delta.triggers.watch_position import WatchPosition

ROW = pa.table({"id": [1], "day": ["2026-01-01"]})
SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


class DictStore:
    """The accessor surface the trigger uses, over a dict that outlives trigger instances."""

    def __init__(self) -> None:
        self.data: dict[str, object] = {}

    async def aget(self, key, default=None):
        return json.loads(json.dumps(self.data.get(key, default)))

    async def aset(self, key, value):
        self.data[key] = json.loads(json.dumps(value))


def rebuilt(trigger: DeltaCommitEventTrigger, store) -> DeltaCommitEventTrigger:
    """What the triggerer does: class path + JSON kwargs, then inject the asset state store."""
    from airflow.sdk._shared.module_loading import import_string
    classpath, kwargs = trigger.serialize()
    again = import_string(classpath)(**json.loads(json.dumps(kwargs)))
    again.asset_state_store = store
    return again


def collect(trigger, count: int, timeout: float = 30, during=None, linger: float = 0.0) -> list[dict]:
    """The payloads of the first ``count`` events (``during`` runs in a thread meanwhile).

    ``linger``: keep the trigger running that long afterwards (as the triggerer does), and
    fail if it emits anything more.
    """
    async def _collect():
        out = []
        gen = trigger.run()
        try:
            while len(out) < count:
                out.append((await asyncio.wait_for(gen.__anext__(), timeout)).payload)
            if linger:
                with pytest.raises(asyncio.TimeoutError):
                    extra = await asyncio.wait_for(gen.__anext__(), linger)
                    out.append(extra.payload)
        finally:
            await gen.aclose()
        return out
    if during is not None:
        threading.Thread(target=during, daemon=True).start()
    return asyncio.run(_collect())


def test_is_an_event_trigger_usable_in_an_asset_watcher():
    from airflow.sdk import Asset, AssetWatcher
    from airflow.triggers.base import BaseEventTrigger
    trig = DeltaCommitEventTrigger(table_uri="/data/orders", operation="WRITE", app_id="etl", poke_interval=5)
    assert isinstance(trig, BaseEventTrigger)
    asset = Asset("delta:///data/orders", watchers=[AssetWatcher(name="orders_commits", trigger=trig)])
    assert asset.watchers[0].trigger is trig
    classpath, kwargs = trig.serialize()
    assert classpath == "airflow_provider_delta.triggers.delta_commit_event.DeltaCommitEventTrigger"
    assert kwargs == {"table_uri": "/data/orders", "delta_conn_id": None, "operation": ["WRITE"],
                      "app_id": "etl", "after_version": None, "per_commit": False, "poke_interval": 5.0}
    assert rebuilt(trig, None).serialize() == (classpath, kwargs)


def test_waits_for_a_missing_table_and_reports_its_first_commits(tmp_path):
    uri = str(tmp_path / "later")
    store = DictStore()

    def create_then_write():
        time.sleep(0.4)
        table = DeltaTable.create(uri, SCHEMA)
        table.write(ROW)

    events = collect(rebuilt(DeltaCommitEventTrigger(table_uri=uri, poke_interval=0.05, per_commit=True),
                             store), 2, during=create_then_write)
    assert [e["versions"] for e in events] == [[0], [1]]
    assert [e["operations"] for e in events] == [["CREATE TABLE"], ["WRITE"]]
    assert all(isinstance(e["timestamps"][0], int) for e in events)
    assert not any(e["redelivered"] for e in events)


def test_batches_filters_and_payload(make_table):
    table = make_table(commits=1)                 # versions 0, 1
    table.write(ROW)                              # 2: WRITE without the app id: filtered out
    with table.transaction(operation="WRITE") as txn:   # 3: matches
        txn.set_txn("etl", 1)
    with table.transaction(operation="OPTIMIZE") as txn:  # 4: another operation
        txn.set_txn("etl", 2)
    with table.transaction(operation="WRITE") as txn:   # 5: matches (a per-interval id of "etl")
        txn.set_txn("etl@20260101T000000Z", 3)
    trig = DeltaCommitEventTrigger(table_uri=table.storage.root, operation="WRITE", app_id="etl",
                                   after_version=1, poke_interval=0.05)
    (event,) = collect(rebuilt(trig, DictStore()), 1)      # one poll, one batch
    assert (event["after_version"], event["version"], event["versions"]) == (1, 5, [3, 5])
    assert event["operations"] == ["WRITE", "WRITE"] and len(event["timestamps"]) == 2
    assert [c["appId"] for c in event["commits"]] == ["etl", "etl@20260101T000000Z"]
    per_commit = DeltaCommitEventTrigger(table_uri=table.storage.root, operation="WRITE", app_id="etl",
                                         after_version=1, per_commit=True, poke_interval=0.05)
    events = collect(rebuilt(per_commit, DictStore()), 2)
    assert [(e["after_version"], e["version"], e["versions"]) for e in events] == [(2, 3, [3]), (4, 5, [5])]
    json.dumps(events)


def test_restart_resumes_after_the_stored_position_without_repeating(make_table, monkeypatch):
    monkeypatch.setattr(watch_position, "CONFIRM_AFTER_SECONDS", 0.0)
    table = make_table(commits=0)                 # version 0
    store = DictStore()
    trig = DeltaCommitEventTrigger(table_uri=table.storage.root, poke_interval=0.05)
    first = collect(rebuilt(trig, store), 1, during=lambda: (time.sleep(0.3), table.write(ROW)), linger=0.5)
    assert first[0]["versions"] == [1]
    # the event was persisted (confirm delay 0): a new trigger instance (triggerer restart) goes on after 1
    again = rebuilt(trig, store)
    second = collect(again, 1, during=lambda: (time.sleep(0.3), table.write(ROW), table.write(ROW)))
    assert second[0]["versions"][0] == 2 and not second[0]["redelivered"]


def test_an_unconfirmed_event_is_emitted_again_flagged_never_lost(make_table):
    table = make_table(commits=2)                 # versions 0..2
    store = DictStore()
    trig = DeltaCommitEventTrigger(table_uri=table.storage.root, after_version=0, poke_interval=0.05)
    first = collect(rebuilt(trig, store), 1)      # stops right after the event: not confirmed
    assert first[0]["versions"] == [1, 2] and not first[0]["redelivered"]
    key = rebuilt(trig, store).position_key
    assert WatchPosition.from_json(store.data[key]) == WatchPosition(0, pending=2)
    table.write(ROW)                              # 3 arrives while the triggerer is down
    events = collect(rebuilt(trig, store), 2)
    assert events[0]["versions"] == [1, 2] and events[0]["redelivered"]
    assert events[1]["versions"] == [3] and not events[1]["redelivered"]


def test_kwargs_seed_only_a_watcher_without_a_stored_position(make_table):
    table = make_table(commits=3)
    store = DictStore()
    trig = DeltaCommitEventTrigger(table_uri=table.storage.root, poke_interval=0.05)   # starts at 3
    live = rebuilt(trig, store)
    asyncio.run(_start(live))
    assert WatchPosition.from_json(store.data[live.position_key]).version == 3


async def _start(trigger) -> None:
    gen = trigger.run()
    task = asyncio.ensure_future(gen.__anext__())
    await asyncio.sleep(0.5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
