"""DeltaCommitTrigger: serialization round trip and run() against real tables."""
from __future__ import annotations

import asyncio
import json
import threading
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log.base.names import commit_path
from airflow_provider_delta.triggers import DeltaCommitTrigger

ROW = pa.table({"id": [1], "day": ["2026-01-01"]})


def first_event(trigger: DeltaCommitTrigger, timeout: float = 60):
    async def _first():
        return await asyncio.wait_for(trigger.run().__anext__(), timeout)
    return asyncio.run(_first())


def rebuild(trigger: DeltaCommitTrigger) -> DeltaCommitTrigger:
    """What the triggerer does: import the class path and call it with the (JSON) kwargs."""
    from airflow.sdk._shared.module_loading import import_string
    classpath, kwargs = trigger.serialize()
    return import_string(classpath)(**json.loads(json.dumps(kwargs)))


def test_serialize_round_trip_is_plain_kwargs():
    trig = DeltaCommitTrigger(table_uri="/data/t", delta_conn_id="lake", target_version="5", after_version=2,
                              operation=["WRITE", "MERGE"], app_id="etl", poke_interval=3,
                              commits=[{"version": 3, "operation": "WRITE"}], last_seen=4, latest=4)
    classpath, kwargs = trig.serialize()
    assert classpath == "airflow_provider_delta.triggers.delta_commit.DeltaCommitTrigger"
    assert kwargs == {"table_uri": "/data/t", "delta_conn_id": "lake", "poke_interval": 3.0,
                      "target_version": 5, "after_version": 2, "operation": ["WRITE", "MERGE"],
                      "app_id": "etl", "last_seen": 4, "commits": [{"version": 3, "operation": "WRITE"}],
                      "latest": 4, "count": 1, "first_version": 3}
    again = rebuild(trig)
    assert again.serialize() == (classpath, kwargs)


def test_run_fires_with_every_commit_in_the_range(make_table):
    table = make_table(commits=3)
    event = first_event(DeltaCommitTrigger(table_uri=table.storage.root, after_version=1, poke_interval=0.01))
    assert event.payload["status"] == "success"
    assert event.payload["version"] == 3
    assert [c["version"] for c in event.payload["commits"]] == [2, 3]
    json.dumps(event.payload)


def test_run_waits_for_a_later_commit(make_table):
    table = make_table(commits=1)
    trigger = rebuild(DeltaCommitTrigger(table_uri=table.storage.root, target_version=3, poke_interval=0.05))
    writer_done = threading.Event()

    def writer():
        time.sleep(0.3)
        table.write(ROW)
        time.sleep(0.3)
        table.write(ROW)
        writer_done.set()

    threading.Thread(target=writer, daemon=True).start()
    event = first_event(trigger)
    assert writer_done.is_set()
    assert [c["version"] for c in event.payload["commits"]] == [3]


def test_resumed_trigger_keeps_its_state_and_reads_only_new_commits(make_table):
    table = make_table(commits=2)
    earlier = [{"version": 1, "operation": "WRITE"}]
    table.write(ROW)      # (a writer refuses to build on a corrupt log: corrupt the old commits after it)
    # commits up to 2 were already examined: corrupt them to prove they are not read again
    for v in (1, 2):
        with open(table.storage.path(commit_path(v)), "wb") as f:
            f.write(b"garbage\n")
    trig = rebuild(DeltaCommitTrigger(table_uri=table.storage.root, target_version=3, after_version=0,
                                      last_seen=2, commits=earlier, poke_interval=0.01))
    event = first_event(trig)
    assert [c["version"] for c in event.payload["commits"]] == [1, 3]


def test_run_reports_errors_as_events(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_DELTA_DEFAULT", raising=False)
    event = first_event(DeltaCommitTrigger(table_uri="relative/table", poke_interval=0.01))
    assert event.payload["status"] == "error"
    assert event.payload["error_type"] == "InvalidArgumentError"
    assert "delta_default" in event.payload["message"]


def test_run_uses_the_connection_asynchronously(monkeypatch, make_table, tmp_path):
    make_table("orders", commits=2)
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({"conn_type": "delta", "host": str(tmp_path)}))
    event = first_event(DeltaCommitTrigger(table_uri="orders", delta_conn_id="lake", after_version=0,
                                           operation="WRITE", poke_interval=0.01))
    assert [c["version"] for c in event.payload["commits"]] == [1, 2]


@pytest.mark.parametrize("bad", [{"target_version": "abc"}, {"after_version": -5}])
def test_invalid_bounds_fail_at_construction(bad):
    from airflow_provider_delta.log.base.errors import InvalidArgumentError
    with pytest.raises(InvalidArgumentError):
        DeltaCommitTrigger(table_uri="/t", **bad)
