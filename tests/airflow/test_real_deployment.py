"""The real-Airflow walk-through of docs/examples.md as a test: the example DAGs under Airflow's own processes.

``scripts/airflow_deploy.py`` (what ``make airflow-up`` runs) deploys ``dags_examples/``
on a temporary AIRFLOW_HOME with a PostgreSQL metadata database of its own (on the
server at ``DELTA_TEST_POSTGRES_URL``): api-server, scheduler, dag-processor and
triggerer with the LocalExecutor, the example connection added with ``airflow
connections add``. Then, as that page says a user does: unpause ``delta_downstream`` and
``delta_orders_audit``, unpause ``delta_ingest`` (its scheduled run starts) and trigger
it by hand at once, so two ingest runs overlap and each emits an asset event; once the
downstream runs are done, unpause ``delta_maintenance``.

Asserted: every DAG run of every example DAG succeeds (the downstream runs that create
``daily_totals`` / ``customer_totals`` on this first deployment included), the
downstream runs pin the newest ingest commit (Airflow may make one run for both events), the watcher DAG runs for every ingest
commit (its events announce each ``WRITE`` version of ``orders``), and Airflow records
no DAG warning and no import error. The outputs add up.

Bounded: at most DELTA_DEPLOY_TEST_BUDGET seconds of waiting (default 900); a timeout
or a failure shows the DAG runs, the failed tasks' logs and every process's log. The
processes are stopped (their process groups) and the database dropped in all cases.
"""
from __future__ import annotations

import json
import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_test_support import airflow_deploy

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

BUDGET = float(os.environ.get("DELTA_DEPLOY_TEST_BUDGET", "900"))
#: faster polling than a production deployment (the DAG files themselves are unchanged)
FAST = {
    "AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL": "5",
    "AIRFLOW__SCHEDULER__SCHEDULER_HEARTBEAT_SEC": "1",
    "AIRFLOW__TRIGGERER__JOB_HEARTBEAT_SEC": "1",
}
INGEST, DOWNSTREAM, AUDIT, MAINTENANCE = "delta_ingest", "delta_downstream", "delta_orders_audit", "delta_maintenance"


@pytest.fixture
def deployment(postgres_url, tmp_path):
    """A deployment on a temporary home and a fresh database; always stopped and dropped."""
    database = f"delta_deploy_{uuid.uuid4().hex[:12]}"
    db_url = airflow_deploy.create_postgres_database(postgres_url, database)
    d = airflow_deploy.Deployment(tmp_path / "airflow-home", tmp_path / "tables", db_url,
                                  port=airflow_deploy.free_port(), settings=FAST)
    try:
        yield d
    finally:
        d.down()
        airflow_deploy.drop_postgres_database(postgres_url, database)


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, str) else value


def runs(d, dag_id: str) -> list[tuple]:
    """(id, run_id, run_type, state, start_date, end_date) of the DAG's runs."""
    return d.db.query("SELECT id, run_id, run_type, state, start_date, end_date FROM dag_run "
                      "WHERE dag_id = :dag ORDER BY id", dag=dag_id)


def finished(d, dag_id: str, at_least: int = 1) -> list[tuple] | None:
    """The DAG's runs once there are ``at_least`` and none is still queued or running.

    A failed run of any DAG ends the wait at once (RuntimeError): nothing waited for comes after it.
    """
    failed = d.db.query("SELECT dag_id, run_id FROM dag_run WHERE state = 'failed'")
    if failed:
        raise RuntimeError(f"DAG runs failed: {failed}")
    rs = runs(d, dag_id)
    return rs if len(rs) >= at_least and all(r[3] in ("success", "failed") for r in rs) else None


def events(d, asset_name: str) -> list[tuple[int, dict]]:
    """(event id, extra) of the asset's events."""
    return [(r[0], _json(r[1]) or {}) for r in d.db.query(
        "SELECT e.id, e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id WHERE a.name = :n "
        "ORDER BY e.id", n=asset_name)]


def consumed(d, dag_id: str) -> set[int]:
    """Ids of the asset events the DAG's runs were triggered by."""
    return {r[0] for r in d.db.query("SELECT x.event_id FROM dagrun_asset_event x JOIN dag_run r "
                                     "ON r.id = x.dag_run_id WHERE r.dag_id = :dag", dag=dag_id)}


def all_consumed_and_finished(d, dag_id: str, asset_name: str, expect_events: int = 1) -> bool:
    done = finished(d, dag_id)                     # first: a failed run anywhere ends the wait
    ids = {e[0] for e in events(d, asset_name)}
    return bool(done) and len(ids) >= expect_events and ids <= consumed(d, dag_id)


def diagnostics(d) -> str:
    """DAG runs, task states, the logs of tasks that did not succeed, and every process's log."""
    out = ["--- DAG runs (dag_id, run_id, run_type, state)"]
    out += [str(r) for r in d.db.query("SELECT dag_id, run_id, run_type, state FROM dag_run ORDER BY id")]
    bad = d.db.query("SELECT dag_id, run_id, task_id, state, try_number FROM task_instance "
                     "WHERE state IS NULL OR state <> 'success' ORDER BY dag_id, run_id, task_id")
    out.append("--- task instances not successful (dag_id, run_id, task_id, state, try)")
    out += [str(r) for r in bad]
    for dag_id, run_id, task_id, _state, _try in bad:
        folder = d.home / "logs" / f"dag_id={dag_id}" / f"run_id={run_id}" / f"task_id={task_id}"
        for log in sorted(folder.glob("**/*.log")):
            out.append(f"--- task log {log.relative_to(d.home)}\n" + log.read_text(errors="replace")[-6000:])
    out.append(f"--- DAG warnings: {d.dag_warnings()}\n--- import errors: {d.import_errors()}")
    out.append(d.processes.tails())
    return "\n".join(out)


def pinned_versions(d) -> set[int]:
    """The orders versions the downstream runs pinned (their pin_orders XCom)."""
    return {_json(r[0])["version"] for r in d.db.query(
        "SELECT x.value FROM xcom x JOIN dag_run r ON r.id = x.dag_run_id WHERE r.dag_id = :dag "
        "AND x.task_id = 'pin_orders' AND x.key = 'return_value'", dag=DOWNSTREAM)}


def overlapped(a: tuple, b: tuple) -> bool:
    """Two finished runs were running at the same time."""
    return a[4] < b[5] and b[4] < a[5]


def write_versions(table_uri: str) -> set[int]:
    return {h["version"] for h in DeltaTable(table_uri).history() if h["operation"] == "WRITE"}


@pytest.mark.timeout(BUDGET + 300)
def test_the_examples_run_under_a_real_airflow_deployment(java, deployment):
    d = deployment
    deadline = time.monotonic() + BUDGET
    orders = str(d.base / "orders")
    try:
        d.up(deadline)
        # as docs/examples.md says: the consumers first, then the ingest's scheduled run and a manual one beside it
        for dag_id in (DOWNSTREAM, AUDIT, INGEST):
            d.airflow("dags", "unpause", dag_id)
        d.airflow("dags", "trigger", INGEST)
        ingest_runs = airflow_deploy.wait_for(lambda: finished(d, INGEST, at_least=2), deadline,
                                              "the scheduled and the manual ingest run", d.processes, step=2)
        ingest_commits = write_versions(orders)
        # Airflow may fold the two events into one run (the second lands while the first's run is made):
        # what counts is that the downstream runs pinned the newest ingest commit, so both are in the totals
        airflow_deploy.wait_for(lambda: (pinned_versions(d) or {-1}) >= {max(ingest_commits)}
                                and finished(d, DOWNSTREAM), deadline,
                                f"delta_downstream runs that pin orders version {max(ingest_commits)}", d.processes,
                                step=2)
        airflow_deploy.wait_for(
            lambda: ingest_commits <= {v for _, e in events(d, "example_orders_commits")
                                       for v in e["payload"]["versions"]}
            and all_consumed_and_finished(d, AUDIT, "example_orders_commits"),
            deadline, f"delta_orders_audit runs for the ingest commits {sorted(ingest_commits)}", d.processes,
            step=2)
        d.airflow("dags", "unpause", MAINTENANCE)            # its scheduled run, over the tables made so far
        airflow_deploy.wait_for(lambda: finished(d, MAINTENANCE), deadline, "the delta_maintenance run",
                                d.processes, step=2)
    except (RuntimeError, TimeoutError) as e:
        pytest.fail(f"{e}\n{diagnostics(d)}", pytrace=False)

    all_runs = d.db.query("SELECT dag_id, run_id, run_type, state FROM dag_run ORDER BY id")
    print("DAG runs:\n  " + "\n  ".join(map(str, all_runs)))
    problems = [r for r in all_runs if r[3] != "success"]
    assert not problems, f"DAG runs that did not succeed: {problems}\n{diagnostics(d)}"
    assert not d.dag_warnings(), diagnostics(d)
    assert not d.import_errors(), diagnostics(d)

    # the scenario happened: two ingest runs, scheduled and manual, at the same time, two commits
    assert sorted(r[2] for r in ingest_runs) == ["manual", "scheduled"], ingest_runs
    assert overlapped(*ingest_runs), f"the two ingest runs did not overlap: {ingest_runs}"
    assert len(ingest_commits) == 2, DeltaTable(orders).history()
    assert len(events(d, "example_orders")) == 2
    assert max(versions := pinned_versions(d)) == max(ingest_commits), versions
    downstream = runs(d, DOWNSTREAM)
    print(f"{len(downstream)} delta_downstream run(s); overlapping: "
          f"{len(downstream) > 1 and overlapped(downstream[0], downstream[1])}")
    # the watcher's events announce each ingest commit (every WRITE version of orders)
    announced = [v for _, e in events(d, "example_orders_commits") for v in e["payload"]["versions"]]
    assert sorted(announced) == sorted(ingest_commits), announced

    # the outputs add up: daily_totals is the pinned orders of one downstream run, customer_totals one
    # row per customer and pinned version, each version written once however many runs pinned it
    versions = pinned_versions(d)
    totals = DeltaTable(str(d.base / "daily_totals")).snapshot().to_pyarrow().to_pylist()
    assert sum(r["orders"] for r in totals) in {DeltaTable(orders).snapshot(v).to_pyarrow().num_rows
                                                for v in versions}
    customers = DeltaTable(str(d.base / "customer_totals")).snapshot().to_pyarrow().to_pylist()
    keys = [(r["orders_version"], r["customer"]) for r in customers]
    assert len(keys) == len(set(keys)) and {k[0] for k in keys} == versions, keys
    for v in versions:
        assert sum(r["orders"] for r in customers if r["orders_version"] == v) == \
            DeltaTable(orders).snapshot(v).to_pyarrow().num_rows
    assert Path(d.env_file).exists()
