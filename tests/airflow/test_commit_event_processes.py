"""DeltaCommitEventTrigger under real Airflow processes: commits from another process become DAG runs.

A temporary AIRFLOW_HOME with a migrated SQLite database; ``airflow dag-processor``,
``airflow scheduler`` and ``airflow triggerer`` run as subprocesses on a DAG scheduled
on an asset watched by the trigger (``event_dags/delta_on_commits.py``). This test
creates the table after the watcher started, commits to it, stops the triggerer
(SIGTERM, as a deploy does) once Airflow confirmed the events, commits while it is
down, starts a new one and commits again: every version so far must be announced by
exactly one asset event (none skipped, none repeated). Then it kills the triggerer
with SIGKILL the moment the next event is in the database (inside the window where
Airflow has stored it but the watcher has not been told yet: its own saved position
is printed), commits, and starts another: still every version exactly once, because
the provider's listener recorded the position in the transaction that stored the
event (with the listener disabled this test sees version 6 announced twice). The
scheduler must have made DAG runs that consumed every event.

Bounded: at most DELTA_EVENT_TEST_BUDGET seconds (default 240) of waiting in all.
Skipped with a printed reason only if the processes cannot start outside CI.
"""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from pathlib import Path

import pyarrow as pa
import pytest
from cryptography.fernet import Fernet

from airflow_provider_delta.assets import asset_uri_for_table
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.triggers.watch_position import KEY_PREFIX, STORED_SUFFIX
from airflow_test_support import airflow_deploy, airflow_env

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

DAGS = Path(__file__).resolve().parent / "event_dags"
DAG_ID = "delta_on_commits"
BUDGET = float(os.environ.get("DELTA_EVENT_TEST_BUDGET", "240"))
#: enough for the triggerer to store an event and confirm it to the watcher (one or two syncs)
CONFIRM_SECONDS = 5
SCHEMA = pa.schema([("id", pa.int64())])
#: the Airflow processes and bounded waits of scripts/airflow_deploy.py (make airflow-up)
Processes, wait_for = airflow_deploy.Processes, airflow_deploy.wait_for


def query(home: Path, sql: str, *args) -> list[tuple]:
    conn = sqlite3.connect(f"file:{home / 'airflow.db'}?mode=ro", uri=True, timeout=30)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


def event_payloads(home: Path, asset_uri: str) -> list[dict]:
    rows = query(home, "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id "
                       "WHERE a.uri = ? ORDER BY e.id", asset_uri)
    return [json.loads(r[0])["payload"] for r in rows]


def watcher_positions(home: Path) -> dict[str, dict]:
    """watcher key -> the position the watcher itself saved (moved when Airflow confirmed an event)."""
    rows = query(home, "SELECT key, value FROM asset_state_store WHERE key LIKE ? AND key NOT LIKE ?",
                 KEY_PREFIX + "%", "%" + STORED_SUFFIX)
    return {k: json.loads(v) for k, v in rows}


def stored_positions(home: Path) -> dict[str, dict]:
    """watcher key -> what the listener recorded in the transactions that stored its events."""
    rows = query(home, "SELECT key, value FROM asset_state_store WHERE key LIKE ?", "%" + STORED_SUFFIX)
    return {k[:-len(STORED_SUFFIX)]: json.loads(v) for k, v in rows}


def consumed_versions(home: Path) -> set[int]:
    """The table versions announced by the asset events the DAG's runs consumed."""
    rows = query(home, "SELECT DISTINCT e.extra FROM dagrun_asset_event x JOIN asset_event e ON e.id = x.event_id "
                       "JOIN dag_run r ON r.id = x.dag_run_id WHERE r.dag_id = ?", DAG_ID)
    return {v for r in rows for v in json.loads(r[0])["payload"]["versions"]}


def test_commits_of_another_process_make_dag_runs_across_a_triggerer_restart(airflow_home, tmp_path):
    table_uri = str(tmp_path / "watched")
    asset_uri = asset_uri_for_table(table_uri)
    env = airflow_env(airflow_home, DAGS, {
        "DELTA_WATCH_TABLE": table_uri,
        "AIRFLOW__CORE__DAGS_ARE_PAUSED_AT_CREATION": "False",
        "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
        "AIRFLOW__CORE__PARALLELISM": "2",
        # one key for all processes: each would otherwise generate its own into a fresh airflow.cfg,
        # and the triggerer could not decrypt the trigger kwargs the dag-processor stored
        "AIRFLOW__CORE__FERNET_KEY": Fernet.generate_key().decode(),
        "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
        "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
        "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
        # a killed triggerer's triggers go to the next one once its heartbeat is this old
        "AIRFLOW__TRIGGERER__TRIGGERER_HEALTH_CHECK_THRESHOLD": "5",
    })
    procs = Processes(airflow_home, env)
    deadline = time.monotonic() + BUDGET
    try:
        for name in ("dag-processor", "scheduler", "triggerer"):
            procs.start(name)
        try:   # all three report as running jobs
            wait_for(lambda: query(airflow_home, "SELECT count(DISTINCT job_type) FROM job WHERE state = "
                                                 "'running'")[0][0] >= 3,
                     min(deadline, time.monotonic() + 90), "scheduler, dag-processor and triggerer jobs", procs)
        except (RuntimeError, TimeoutError) as e:
            if os.environ.get("CI"):
                raise
            print(f"SKIP REASON: Airflow processes did not come up: {e}\n{procs.tails()}")
            pytest.skip(f"Airflow processes did not come up here: {e}")
        # the watcher's trigger row exists once the DAG is parsed and the asset is active
        wait_for(lambda: query(airflow_home, "SELECT count(*) FROM asset_watcher")[0][0] > 0, deadline,
                 "the asset watcher to be registered", procs)

        table = DeltaTable.create(table_uri, SCHEMA)                     # version 0: waited for, then seen
        for i in range(2):                                                # 1, 2
            time.sleep(1)
            table.write(pa.table({"id": [i]}))
        wait_for(lambda: any(2 in p["versions"] for p in event_payloads(airflow_home, asset_uri)), deadline,
                 "events up to version 2", procs)
        time.sleep(CONFIRM_SECONDS)                                       # Airflow confirmed them, then
        procs.stop("triggerer")                                           # a restart in the middle
        table.write(pa.table({"id": [10]}))                               # 3, while no triggerer runs
        procs.start("triggerer")
        for i in range(2):                                                # 4, 5
            time.sleep(1)
            table.write(pa.table({"id": [20 + i]}))
        wait_for(lambda: any(5 in p["versions"] for p in event_payloads(airflow_home, asset_uri)), deadline,
                 "events up to version 5", procs)
        time.sleep(CONFIRM_SECONDS)
        graceful = event_payloads(airflow_home, asset_uri)
        table.write(pa.table({"id": [30]}))                               # 6, then kill -9 as soon as
        wait_for(lambda: any(6 in p["versions"] for p in event_payloads(airflow_home, asset_uri)), deadline,
                 "the event of version 6", procs, step=0.05)              # its event is stored
        procs.stop("triggerer", sig=signal.SIGKILL)
        at_kill = watcher_positions(airflow_home)                         # inside the window: not confirmed
        print(f"positions when the triggerer was killed: {at_kill} (version 6 stored, "
              f"{'not yet' if all(p['version'] < 6 for p in at_kill.values()) else 'already'} confirmed)")
        table.write(pa.table({"id": [40]}))                               # 7, while no triggerer runs
        procs.start("triggerer")
        wait_for(lambda: any(7 in p["versions"] for p in event_payloads(airflow_home, asset_uri)), deadline,
                 "events up to version 7 after the kill", procs)
        wait_for(lambda: consumed_versions(airflow_home) == set(range(8)),
                 deadline, "DAG runs that consume the events of every version", procs)
    except (RuntimeError, TimeoutError) as e:
        pytest.fail(f"{e}\n{procs.tails()}")
    finally:
        procs.stop_all()

    payloads = event_payloads(airflow_home, asset_uri)
    announced = [v for p in payloads for v in p["versions"]]
    print(f"{len(payloads)} asset events, versions {announced}, "
          f"{sum(p['redelivered'] for p in payloads)} redelivered")
    graceful_versions = [v for p in graceful for v in p["versions"]]
    assert graceful_versions == [0, 1, 2, 3, 4, 5], graceful          # each version once: none skipped,
    assert not any(p["redelivered"] for p in graceful), graceful       # none repeated across the restart
    # after the kill inside the window: still each version once, none skipped and none repeated (the
    # listener moved the position in the transaction that stored the event of version 6)
    assert announced == list(range(8)), payloads
    assert not any(p["redelivered"] for p in payloads), payloads
    stored = stored_positions(airflow_home)                            # what the listener wrote
    assert set(stored) == {p["position"]["key"] for p in payloads} and len(stored) == 1, stored
    assert [s["through"] for s in stored.values()] == [7], stored
    assert all(p["table_uri"] == table_uri for p in payloads)
    runs = query(airflow_home, "SELECT id, run_type FROM dag_run WHERE dag_id = ?", DAG_ID)
    assert runs and all(r[1] == "asset_triggered" for r in runs)
    print(f"{len(runs)} DAG runs consumed the events of versions {sorted(consumed_versions(airflow_home))}")
