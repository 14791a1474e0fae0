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
import uuid
from pathlib import Path

import pytest
import sqlalchemy as sa

from airflow_provider_delta.triggers.stored_positions import (TESTED_AIRFLOW, airflow_internals, major_minor,
                                                              watch_position_of)
from airflow_provider_delta.triggers.watch_position import PositionStore, WatchPosition, stored_key
from airflow_test_support import AIRFLOW_BIN, PYTHON, airflow_env

pytestmark = [pytest.mark.airflow]

PROBE = Path(__file__).resolve().parent / "event_store_probe.py"
KEY = "delta_commit_watch_0123456789abcdef"


def probe(home: Path, *steps: str, database: str | None = None) -> dict:
    env = airflow_env(home)
    if database:
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = database
    proc = subprocess.run([PYTHON, str(PROBE), *steps], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@pytest.fixture
def postgres_airflow_db(postgres_url, airflow_home):
    """A migrated Airflow metadata database of its own on the PostgreSQL server (dropped afterwards).

    PostgreSQL, unlike SQLite, aborts the whole transaction when one statement fails: there
    the listener's savepoint is what keeps a failing position write from losing the event."""
    name = f"airflow_probe_{uuid.uuid4().hex[:12]}"
    server = sa.engine.make_url(postgres_url)
    admin = sa.create_engine(server.set(drivername="postgresql+psycopg2"), isolation_level="AUTOCOMMIT")
    with admin.connect() as c:
        c.execute(sa.text(f'CREATE DATABASE "{name}"'))
    url = server.set(drivername="postgresql+psycopg2", database=name).render_as_string(hide_password=False)
    try:
        env = airflow_env(airflow_home)
        env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = url
        proc = subprocess.run([AIRFLOW_BIN, "db", "migrate"], env=env, capture_output=True,
                              text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        yield url
    finally:
        with admin.connect() as c:
            c.execute(sa.text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_the_position_commits_with_the_event_and_never_moves_back(airflow_home):
    out = probe(airflow_home, "commit:6", "commit:4", "commit:9")
    assert out["events"] == 3
    assert out["store"] == {stored_key(KEY): {"through": 9}}


def test_a_rolled_back_event_leaves_no_position(airflow_home):
    out = probe(airflow_home, "commit:3", "rollback:8")
    assert out["events"] == 1                                   # the second event was never stored...
    assert out["store"] == {stored_key(KEY): {"through": 3}}   # ...and neither was its position


def test_a_failing_position_write_does_not_cost_the_event(airflow_home):
    out = probe(airflow_home, "commit:2", "failing:5")
    assert out["events"] == 2                                   # the event was stored all the same
    assert out["store"] == {stored_key(KEY): {"through": 2}}   # the watcher's own confirmation moves it later


def test_on_postgresql_too_and_a_failing_write_stays_in_its_savepoint(airflow_home, postgres_airflow_db):
    out = probe(airflow_home, "commit:2", "rollback:4", "failing:5", "commit:7", database=postgres_airflow_db)
    assert out["events"] == 3                                   # 2, 5 (its position write failed), 7
    assert out["store"] == {stored_key(KEY): {"through": 7}}


@pytest.mark.parametrize("fallback", ["untested", "noimport"])
def test_on_an_untested_airflow_or_without_its_internals_the_listener_stands_aside(airflow_home, fallback):
    """The at-least-once path: the event is stored, no position is written with it (the watcher's own
    confirmation moves the position later), and nothing fails."""
    out = probe(airflow_home, "commit:2", f"{fallback}:5")
    assert out["events"] == 2                                   # both events stored
    assert out["store"] == {stored_key(KEY): {"through": 2}}   # 5 recorded nowhere: the watcher confirms it


@pytest.mark.parametrize("version, expected", [("3.3.2", (3, 3)), ("3.3.0rc1", (3, 3)), ("3.4.0.dev0", (3, 4)),
                                               ("10.12", (10, 12)), ("main", None), ("3", None)])
def test_the_release_gate_reads_major_and_minor(version, expected):
    assert major_minor(version) == expected
    assert (airflow_internals(version) is not None) is (expected in TESTED_AIRFLOW)


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
