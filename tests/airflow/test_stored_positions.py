"""The listener that moves a commit watcher's position in the transaction storing its event.

Against a real (migrated SQLite) Airflow database in a subprocess: the listener's write
commits with the event, rolls back with it, never moves the position back, and does
nothing where it cannot see the event's transaction. The position store merges what it
wrote. The whole path under real triggerer processes, killed inside the window, is
test_commit_event_processes.py.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from airflow_provider_delta.triggers.stored_positions import watch_position_of
from airflow_provider_delta.triggers.watch_position import PositionStore, WatchPosition, stored_key
from airflow_test_support import PYTHON, airflow_env

pytestmark = [pytest.mark.airflow]

PROBE = Path(__file__).resolve().parent / "event_store_probe.py"
KEY = "delta_commit_watch_0123456789abcdef"


def probe(home: Path, *steps: str) -> dict:
    proc = subprocess.run([PYTHON, str(PROBE), *steps], env=airflow_env(home), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_the_position_commits_with_the_event_and_never_moves_back(airflow_home):
    out = probe(airflow_home, "commit:6", "commit:4", "commit:9")
    assert out["events"] == 3
    assert out["store"] == {stored_key(KEY): {"through": 9}}


def test_a_rolled_back_event_leaves_no_position(airflow_home):
    out = probe(airflow_home, "commit:3", "rollback:8")
    assert out["events"] == 1                                   # the second event was never stored...
    assert out["store"] == {stored_key(KEY): {"through": 3}}   # ...and neither was its position


def test_nothing_is_written_outside_the_events_transaction(airflow_home):
    out = probe(airflow_home, "outside:5")
    assert out == {"events": 0, "outside": [False], "store": {}}


@pytest.mark.parametrize("extra, expected", [
    ({"from_trigger": True, "payload": {"position": {"key": KEY, "through": 7}}}, (KEY, 7)),
    ({"from_trigger": True, "payload": {"position": {"key": "someone_elses", "through": 7}}}, None),
    ({"from_trigger": True, "payload": {"position": {"key": KEY, "through": True}}}, None),
    ({"from_trigger": True, "payload": {"position": {"key": KEY, "through": "7"}}}, None),
    ({"from_trigger": True, "payload": {"version": 7}}, None),
    ({"payload": {"position": {"key": KEY, "through": 7}}}, None),      # not from a trigger
    ({}, None),
    (None, None),
])
def test_which_events_are_a_watchers(extra, expected):
    assert watch_position_of(extra) == expected


class _Accessors:
    def __init__(self, data: dict) -> None:
        self.data = data

    async def aget(self, key, default=None):
        return self.data.get(key, default)


@pytest.mark.parametrize("data, expected", [
    ({KEY: {"version": 3, "pending": 6}, stored_key(KEY): {"through": 6}}, WatchPosition(6, None)),
    ({KEY: {"version": 3, "pending": 6}, stored_key(KEY): {"through": 4}}, WatchPosition(4, 6)),
    ({KEY: {"version": 3, "pending": 6}}, WatchPosition(3, 6)),
    ({KEY: {"version": 8, "pending": None}, stored_key(KEY): {"through": 6}}, WatchPosition(8, None)),
    ({stored_key(KEY): {"through": 6}}, None),        # no position yet: the watcher starts afresh
])
def test_loading_merges_what_the_listener_stored(data, expected):
    assert asyncio.run(PositionStore(_Accessors(data), KEY).load()) == expected


def test_every_airflow_process_loads_the_listener_and_nothing_heavy_with_it(airflow_home):
    """The plugin comes through its entry point into Airflow's listener manager; importing it
    brings neither the triggers nor the transaction log nor pyarrow into a process."""
    script = (
        "import json, sys\n"
        "from airflow.listeners.listener import get_listener_manager\n"
        "names = [getattr(p, '__name__', '') for p in get_listener_manager().pm.get_plugins()]\n"
        "print(json.dumps({'listeners': names, 'loaded': sorted(m for m in sys.modules if m.startswith("
        "('pyarrow', 'airflow_provider_delta.log', 'airflow_provider_delta.triggers.delta_commit')))}))\n")
    proc = subprocess.run([PYTHON, "-c", script], env=airflow_env(airflow_home), capture_output=True, text=True,
                          timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert "airflow_provider_delta.triggers.stored_positions" in out["listeners"]
    assert out["loaded"] == []
