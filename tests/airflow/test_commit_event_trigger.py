"""DeltaCommitEventTrigger against real tables: events, filters, a missing table, kept position.

The position store here is a dict behind the two async methods the triggerer's
``AssetStateStoreAccessors`` offers (``aget``/``aset``); the real store, with real
scheduler, dag-processor and triggerer processes, is in test_commit_event_processes.py.
"""
from __future__ import annotations

import asyncio
import contextlib
import json
import threading
import time

import pyarrow as pa
import pytest
from airflow.triggers.shared_stream import SharedStreamManager

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.triggers import DeltaCommitEventTrigger
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


class Triggerer:
    """Airflow's own shared-stream manager driven as the triggerer's runner drives it.

    ``subscribe`` goes through ``shared_stream_key`` and ``filter_shared_stream``;
    ``next_event`` pulls the next trigger event and binds it to its persist
    confirmation (as ``run_trigger`` does); ``persisted`` confirms events as the
    supervisor does once they are in the metadata database.
    """

    def __init__(self, trigger) -> None:
        self.manager = SharedStreamManager()
        self.trigger = trigger
        self.key = trigger.shared_stream_key()
        assert self.key is not None, "a trigger with a state store must use an ack-mode shared stream"
        self.events = trigger.filter_shared_stream(self.manager.subscribe(trigger_id=1, trigger=trigger,
                                                                          key=self.key))
        self.seqs: list[int] = []
        self.out: asyncio.Queue = asyncio.Queue()
        self.pump = asyncio.ensure_future(self._pump())

    async def _pump(self) -> None:
        """``run_trigger``'s loop: take each event, bind it with no await in between, pull the next."""
        async for event in self.events:
            self.seqs.append(self.manager.bind_pending_event(trigger_id=1, key=self.key))
            self.out.put_nowait(event.payload)

    async def next_event(self, timeout: float = 30) -> dict:
        return await asyncio.wait_for(self.out.get(), timeout)

    async def unconfirmed_event(self) -> dict:
        """The next event, left on its way: the triggerer stops before Airflow confirms it."""
        event = await self.next_event()
        await asyncio.sleep(0.3)
        return event

    async def persisted(self) -> None:
        self.manager.confirm_persisted(self.seqs)
        self.seqs = []
        await asyncio.sleep(0.3)            # the group's pump calls the producer's advance

    async def stop(self) -> None:
        """A triggerer going away: the subscription ends, unconfirmed events are abandoned."""
        self.pump.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self.pump
        await self.manager.unsubscribe(1, self.key)
        await self.manager.stop_all()


def watcher(table, **kwargs) -> DeltaCommitEventTrigger:
    """A fast-polling watcher of ``table``."""
    return DeltaCommitEventTrigger(table_uri=table.storage.root, poke_interval=0.05, **kwargs)


def stored(store: DictStore, trigger) -> WatchPosition:
    return WatchPosition.from_json(store.data[trigger.position_key])


def test_position_moves_only_once_airflow_stored_the_event(make_table):
    table = make_table(commits=2)                 # versions 0..2
    store = DictStore()
    trig = watcher(table, after_version=0)

    async def scenario():
        triggerer = Triggerer(rebuilt(trig, store))
        first = await triggerer.unconfirmed_event()
        before = stored(store, trig)              # announced, not yet stored by Airflow
        await triggerer.persisted()
        after = stored(store, trig)
        await triggerer.stop()
        return first, before, after

    first, before, after = asyncio.run(scenario())
    assert first["versions"] == [1, 2] and not first["redelivered"]
    assert before == WatchPosition(0, pending=2)
    assert after == WatchPosition(2)


def test_restart_after_the_store_resumes_without_repeating(make_table):
    table = make_table(commits=0)                 # version 0
    store = DictStore()
    trig = watcher(table)

    async def scenario():
        triggerer = Triggerer(rebuilt(trig, store))
        await asyncio.sleep(0.3)                  # the watcher starts at version 0
        table.write(ROW)
        first = await triggerer.next_event()
        await triggerer.persisted()
        await triggerer.stop()                    # restart: a new trigger instance, a new group
        table.write(ROW)
        table.write(ROW)
        again = Triggerer(rebuilt(trig, store))
        second = await again.next_event()
        await again.stop()
        return first, second

    first, second = asyncio.run(scenario())
    assert first["versions"] == [1]
    assert second["versions"] == [2, 3] and not second["redelivered"]


def test_restart_before_the_store_announces_again_flagged_never_lost(make_table):
    table = make_table(commits=2)                 # versions 0..2
    store = DictStore()
    trig = watcher(table, after_version=0)

    async def scenario():
        triggerer = Triggerer(rebuilt(trig, store))
        first = await triggerer.unconfirmed_event()     # stops before Airflow confirmed it
        await triggerer.stop()
        table.write(ROW)                          # 3 arrives while the triggerer is down
        again = Triggerer(rebuilt(trig, store))
        event = await again.next_event()
        await again.persisted()
        await again.stop()
        return first, event

    first, event = asyncio.run(scenario())
    assert first["versions"] == [1, 2] and not first["redelivered"]
    assert event["versions"] == [1, 2, 3] and event["redelivered"]   # again, with what came since
    assert stored(store, trig) == WatchPosition(3)


def test_per_commit_events_flag_only_the_versions_announced_before(make_table):
    table = make_table(commits=1)                 # versions 0, 1
    store = DictStore()
    trig = watcher(table, after_version=0, per_commit=True)

    async def scenario():
        triggerer = Triggerer(rebuilt(trig, store))
        await triggerer.unconfirmed_event()       # version 1, never confirmed
        await triggerer.stop()
        table.write(ROW)                          # 2
        again = Triggerer(rebuilt(trig, store))
        events = [await again.next_event(), await again.next_event()]
        await again.stop()
        return events

    events = asyncio.run(scenario())
    assert [(e["versions"], e["redelivered"]) for e in events] == [([1], True), ([2], False)]


def test_filtered_out_commits_move_the_position_without_an_event(make_table):
    table = make_table(commits=2)                 # 0..2 are CREATE/WRITE: no OPTIMIZE among them
    store = DictStore()
    trig = watcher(table, operation="OPTIMIZE", after_version=0)

    async def scenario():
        triggerer = Triggerer(rebuilt(trig, store))
        with pytest.raises(asyncio.TimeoutError):
            await triggerer.next_event(timeout=1.0)
        position = stored(store, trig)
        await triggerer.stop()
        return position

    assert asyncio.run(scenario()) == WatchPosition(2)


def test_kwargs_seed_only_a_watcher_without_a_stored_position(make_table):
    table = make_table(commits=3)
    store = DictStore()
    trig = watcher(table)   # starts at 3

    async def start(after_version=None):
        triggerer = Triggerer(rebuilt(watcher(table, after_version=after_version), store))
        with pytest.raises(asyncio.TimeoutError):
            await triggerer.next_event(timeout=0.5)
        await triggerer.stop()

    asyncio.run(start())
    assert stored(store, trig).version == 3


def test_without_a_state_store_the_position_lives_in_memory(make_table):
    table = make_table(commits=1)
    trig = watcher(table, after_version=0)
    assert rebuilt(trig, None).shared_stream_key() is None       # the trigger's own run() loop
    (event,) = collect(rebuilt(trig, None), 1)
    assert event["versions"] == [1]


def test_a_batch_over_a_long_history_is_bounded(make_table):
    """A watcher started at -1 on 300 commits: one event with the count, the range and the newest 20."""
    from airflow_provider_delta.hooks.payloads import MAX_LISTED
    table = make_table(commits=299)               # versions 0..299
    trig = DeltaCommitEventTrigger(table_uri=table.storage.root, operation="write", after_version=-1,
                                   poke_interval=0.05)
    (event,) = collect(rebuilt(trig, DictStore()), 1)
    assert (event["count"], event["first_version"], event["last_version"]) == (299, 1, 299)   # 0 is the CREATE
    assert event["truncated"] is True and event["versions"] == list(range(300 - MAX_LISTED, 300))
    assert len(event["commits"]) == len(event["operations"]) == len(event["timestamps"]) == MAX_LISTED
    assert event["position"]["through"] == 299 and len(json.dumps(event)) < 10_000
    # one event per commit when asked: each whole, none truncated
    per_commit = DeltaCommitEventTrigger(table_uri=table.storage.root, after_version=296, per_commit=True,
                                         poke_interval=0.05)
    events = collect(rebuilt(per_commit, DictStore()), 3)
    assert [(e["versions"], e["count"], e["truncated"]) for e in events] == [([297], 1, False), ([298], 1, False),
                                                                            ([299], 1, False)]
