"""Fixtures of the Airflow tests: an isolated Airflow home, contexts, tables, DAG runs.

Airflow reads ``AIRFLOW_HOME`` and its configuration when it is first imported, so
this module points it at a throw-away directory at import time, before any test
module imports Airflow. Unit tests use it as is (no database: connections come
from ``AIRFLOW_CONN_*`` variables). Integration tests run each DAG with
``dag.test()`` in a subprocess (``dag_runner.py``), with their own copy of a
SQLite metadata database migrated once per session.
"""
from __future__ import annotations

import atexit
import json
import os
import shutil
import subprocess
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

_SESSION_HOME = Path(tempfile.mkdtemp(prefix="airflow-home-"))
atexit.register(shutil.rmtree, _SESSION_HOME, ignore_errors=True)
os.environ["AIRFLOW_HOME"] = str(_SESSION_HOME)
os.environ["AIRFLOW__CORE__LOAD_EXAMPLES"] = "False"
os.environ["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"] = f"sqlite:///{_SESSION_HOME}/airflow.db"
os.environ.pop("AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE", None)

from airflow_test_support import AIRFLOW_BIN, DAGS, PYTHON, REPORT_MARK, RUNNER, airflow_env  # noqa: E402


@pytest.fixture(scope="session")
def migrated_home(tmp_path_factory) -> Path:
    """An Airflow home whose SQLite database is migrated (once per test session)."""
    home = tmp_path_factory.mktemp("airflow-migrated")
    proc = subprocess.run([AIRFLOW_BIN, "db", "migrate"], env=airflow_env(home), capture_output=True,
                          text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"airflow db migrate failed:\n{proc.stdout}\n{proc.stderr}")
    return home


@pytest.fixture
def airflow_home(migrated_home, tmp_path) -> Path:
    """A private Airflow home with a copy of the migrated database."""
    home = tmp_path / "airflow-home"
    home.mkdir()
    shutil.copy(migrated_home / "airflow.db", home / "airflow.db")
    return home


@dataclass
class DagRunReport:
    """What ``dag_runner.py`` printed about one ``dag.test()`` run."""

    state: str
    tasks: dict[str, str]
    xcoms: dict[str, dict[str, Any]]
    asset_events: list[dict[str, Any]]
    output: str = field(repr=False, default="")


@pytest.fixture
def run_dag(airflow_home):
    """Run DAG ``dag_id`` from ``tests/airflow/dags`` (or ``dags_folder``) with dag.test() in a subprocess.

    ``env`` adds variables (table paths, ``AIRFLOW_CONN_*``); the report lists the run's
    state, every task's state, every XCom and every asset event.
    """
    def _run(dag_id: str, env: dict[str, str] | None = None, timeout: float = 300,
             dags_folder: Path | None = None) -> DagRunReport:
        proc = subprocess.run([PYTHON, str(RUNNER), dag_id], env=airflow_env(airflow_home, dags_folder or DAGS, env),
                              capture_output=True, text=True, timeout=timeout, cwd=str(airflow_home))
        output = proc.stdout + "\n" + proc.stderr
        line = next((ln for ln in proc.stdout.splitlines() if ln.startswith(REPORT_MARK)), None)
        if proc.returncode != 0 or line is None:
            pytest.fail(f"dag runner failed (exit {proc.returncode}):\n{output[-20000:]}")
        data = json.loads(line[len(REPORT_MARK):])
        return DagRunReport(data["state"], data["tasks"], data["xcoms"], data["asset_events"], output)
    return _run


# ------------------------------------------------------------------ unit helpers
@dataclass
class RecordingTaskInstance:
    """The slice of a task instance the Delta tasks use: ids, try number, xcom_push."""

    dag_id: str = "test_dag"
    task_id: str = "test_task"
    run_id: str = "manual__2026-01-01T00:00:00+00:00"
    try_number: int = 1
    map_index: int = -1
    xcoms: dict[str, Any] = field(default_factory=dict)

    def xcom_push(self, key: str, value: Any) -> None:
        json.dumps(value)  # XComs must be JSON-serializable
        self.xcoms[key] = value

    def get_first_reschedule_date(self, context: Any) -> Any:
        return None


@pytest.fixture
def make_context():
    """A task context with a recording task instance and Airflow's real outlet-event accessors."""
    from airflow.sdk.execution_time.context import OutletEventAccessors

    def _make(task_id: str = "test_task", **extra: Any) -> dict[str, Any]:
        ti = RecordingTaskInstance(task_id=task_id)
        ctx: dict[str, Any] = {"ti": ti, "task_instance": ti, "run_id": ti.run_id,
                               "outlet_events": OutletEventAccessors()}
        ctx.update(extra)
        return ctx
    return _make


@pytest.fixture
def make_table(tmp_path):
    """Create a partitioned table with ``commits`` appends after version 0 (our own writer)."""
    import pyarrow as pa

    from airflow_provider_delta.log import DeltaTable

    def _make(name: str = "orders", commits: int = 2, **create_kwargs: Any) -> DeltaTable:
        uri = str(tmp_path / name)
        schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
        table = DeltaTable.create(uri, schema, partition_by=["day"], **create_kwargs)
        for i in range(commits):
            table.write(pa.table({"id": [2 * i, 2 * i + 1], "day": ["2026-01-01", f"2026-01-0{2 + i % 7}"]}))
        return table
    return _make
