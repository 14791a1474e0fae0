"""The example DAGs under a real Airflow: api-server, scheduler, dag-processor and triggerer.

``make airflow-up`` / ``make airflow-down`` run this script, and
``tests/airflow/test_real_deployment.py`` uses the same code, so what a person clicks
through is what CI tests. ``up`` does what docs/examples.md, "Run the examples under a
real Airflow", lists:

1. an ``AIRFLOW_HOME`` (default ``./airflow_home``) and ``<home>/airflow.env``, the
   settings every process shares (``source`` it to use the ``airflow`` CLI on this
   deployment): ``dags_examples/`` as DAG folder, LocalExecutor, the metadata database,
   one Fernet key and JWT secret for all processes, the execution API's URL;
2. a PostgreSQL database of its own for the metadata (``--postgres-url`` names the
   server, default ``$DELTA_TEST_POSTGRES_URL``; created if missing), or SQLite with
   ``--sqlite``; then ``airflow db migrate``;
3. the examples' connections (:func:`example_connections`: ``delta_example``, ``delta_wap``) with
   ``airflow connections add <id> --conn-json ...`` (stored in the metadata database, so every process
   sees them; DAG files define none); the page shows the same commands, and a test checks they agree;
4. the four processes, each in a process group of its own, logs in ``<home>/processes/``,
   pids in ``<home>/processes/<name>.pid`` (``down`` stops exactly those);
5. waits until the api-server answers, all four report running and the example DAGs
   are parsed without import errors.

The DAGs start paused, as in any deployment; ``unpause`` / ``trigger`` are one
``airflow`` command each (docs/examples.md). Nothing here imports Airflow: it runs the
``airflow`` CLI next to this Python.
"""
from __future__ import annotations

import argparse
import json
import os
import secrets
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags_examples"
AIRFLOW_BIN = str(Path(sys.executable).with_name("airflow"))
#: the processes of a deployment, in start order (the api-server first: tasks need its execution API)
COMPONENTS = ("api-server", "dag-processor", "scheduler", "triggerer")
#: Airflow's job types of the three processes that heartbeat in the ``job`` table
JOB_TYPES = {"SchedulerJob", "DagProcessorJob", "TriggererJob"}
EXAMPLE_DAGS = ("delta_ingest", "delta_downstream", "delta_orders_audit", "delta_maintenance",
                "delta_customer_changes")
DEFAULT_POSTGRES = "postgresql://postgres@127.0.0.1:5432/test"


# ------------------------------------------------------------------ processes
class Processes:
    """Airflow processes started by this code, each in its own session (process group).

    Output goes to ``<log_dir>/<name>.log``; a pid file per process lets another
    invocation (``down``) stop exactly these processes and nothing else.
    """

    def __init__(self, log_dir: Path, env: dict[str, str]) -> None:
        self.log_dir, self.env = Path(log_dir), env
        self.procs: dict[str, subprocess.Popen] = {}
        self.log_dir.mkdir(parents=True, exist_ok=True)

    def start(self, name: str, *args: str) -> subprocess.Popen:
        """``airflow <name> <args>`` in the background."""
        log = open(self.log_dir / f"{name}.log", "ab")
        try:
            proc = subprocess.Popen([AIRFLOW_BIN, name, *args], env=self.env, stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True)
        finally:
            log.close()
        self.procs[name] = proc
        (self.log_dir / f"{name}.pid").write_text(str(proc.pid))
        return proc

    def stop(self, name: str, timeout: float = 30, sig: int = signal.SIGTERM) -> None:
        """Stop one process and its children (its process group): ``sig``, then SIGKILL after ``timeout``."""
        proc = self.procs.pop(name)
        if proc.poll() is None:
            _signal_group(proc.pid, sig)
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait(10)
        (self.log_dir / f"{name}.pid").unlink(missing_ok=True)

    def stop_all(self) -> None:
        for name in reversed(list(self.procs)):
            self.stop(name)

    def check_running(self) -> None:
        """Raise if one of the processes exited (a wait for it would only time out)."""
        for name, proc in self.procs.items():
            if proc.poll() is not None:
                raise RuntimeError(f"airflow {name} exited with {proc.returncode}")

    def tails(self, chars: int = 4000) -> str:
        """The end of every process log, for failure messages."""
        out = []
        for log in sorted(self.log_dir.glob("*.log")):
            out.append(f"--- {log.name}\n" + log.read_text(errors="replace")[-chars:])
        return "\n".join(out)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        pass


def stop_recorded(log_dir: Path, timeout: float = 30) -> list[str]:
    """Stop the process groups whose pid files ``up`` left in ``log_dir`` (another invocation's)."""
    stopped = []
    for pid_file in sorted(Path(log_dir).glob("*.pid")):
        pid = int(pid_file.read_text().strip())
        _signal_group(pid, signal.SIGTERM)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.5)
        if _alive(pid):
            _signal_group(pid, signal.SIGKILL)
        pid_file.unlink(missing_ok=True)
        stopped.append(pid_file.stem)
    return stopped


def _alive(pid: int) -> bool:
    try:
        os.killpg(pid, 0)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def wait_for(condition: Callable[[], Any], deadline: float, what: str, procs: Processes | None = None,
             step: float = 1.0) -> Any:
    """Poll ``condition`` until it returns something truthy (returned), or raise TimeoutError at ``deadline``."""
    while True:
        value = condition()
        if value:
            return value
        if procs is not None:
            procs.check_running()
        if time.monotonic() >= deadline:
            raise TimeoutError(f"timed out waiting for {what}")
        time.sleep(step)


# ------------------------------------------------------------------ database
class MetadataDB:
    """Read-only queries on the deployment's metadata database (SQLAlchemy; Airflow's own driver)."""

    def __init__(self, url: str) -> None:
        from sqlalchemy import create_engine
        self.engine = create_engine(url, pool_pre_ping=True)

    def query(self, sql: str, **params: Any) -> list[tuple]:
        from sqlalchemy import text
        with self.engine.connect() as conn:
            return [tuple(r) for r in conn.execute(text(sql), params)]

    def close(self) -> None:
        self.engine.dispose()


def create_postgres_database(server_url: str, name: str) -> str:
    """Create database ``name`` on the server of ``server_url`` unless it exists; its SQLAlchemy URL."""
    from sqlalchemy import create_engine, text
    engine = create_engine(_sqlalchemy_url(server_url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            if not conn.execute(text("SELECT 1 FROM pg_database WHERE datname = :n"), {"n": name}).first():
                conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    return _sqlalchemy_url(urllib.parse.urlsplit(server_url)._replace(path="/" + name).geturl())


def drop_postgres_database(server_url: str, name: str) -> None:
    """Drop database ``name`` (only one this code created), ending its remaining sessions first."""
    from sqlalchemy import create_engine, text
    engine = create_engine(_sqlalchemy_url(server_url), isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            conn.execute(text("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = :n"),
                         {"n": name})
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
    finally:
        engine.dispose()


def _sqlalchemy_url(url: str) -> str:
    """``postgresql://`` as ``postgresql+psycopg2://`` (Airflow's synchronous driver)."""
    scheme, sep, rest = url.partition("://")
    return f"postgresql+psycopg2://{rest}" if scheme in ("postgresql", "postgres") else url


# ------------------------------------------------------------------ the deployment
def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: the connection the example DAGs name (``ORDERS_CONN_ID`` in dags_examples/example_settings.py)
EXAMPLE_CONN_ID = "delta_example"


def example_connection(base: Path | str) -> dict[str, Any]:
    """The ``delta_example`` connection for tables under ``base`` (``--conn-json`` or
    ``AIRFLOW_CONN_DELTA_EXAMPLE``): a SQLite commit owner in a file next to the tables,
    backfilling after every commit so that Delta Spark sees each commit at once."""
    owner_db = Path(base).resolve() / "commit_owner.db"
    return {"conn_type": "delta",
            "extra": {"commit_owner": {"type": "sql", "url": f"sqlite:///{owner_db}", "backfill_batch_size": 1}}}


#: the write-audit-publish example's connection (``WAP_CONN_ID`` in dags_examples/example_settings.py)
WAP_CONN_ID = "delta_wap"


def example_connections(base: Path | str) -> dict[str, dict[str, Any]]:
    """Every connection the example DAGs name, by id: ``delta_example`` and ``delta_wap`` (the
    write-audit-publish example's SQL catalog, a SQLite file next to the tables). The deployment
    defines them (never a DAG file: the triggerer and the workers do not parse DAG files)."""
    catalog_db = Path(base).resolve() / "catalog.db"
    return {EXAMPLE_CONN_ID: example_connection(base),
            WAP_CONN_ID: {"conn_type": "delta", "extra": {"catalog": {"url": f"sqlite:///{catalog_db}"}}}}


class Deployment:
    """One Airflow deployment of ``dags_examples/`` on ``home``, with the tables under ``base``."""

    def __init__(self, home: Path, base: Path, db_url: str, port: int = 8080, parallelism: int = 4,
                 settings: dict[str, str] | None = None) -> None:
        self.home, self.base, self.db_url, self.port = Path(home).resolve(), Path(base).resolve(), db_url, port
        self.env_file = self.home / "airflow.env"
        self.settings = self._settings(parallelism, settings or {})
        env = {k: v for k, v in os.environ.items() if not k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))}
        env.update(self.settings)
        env["PYTHONUNBUFFERED"] = "1"
        self.env = env
        self.processes = Processes(self.home / "processes", env)
        self._db: MetadataDB | None = None

    @property
    def url(self) -> str:
        return f"http://localhost:{self.port}"

    @property
    def db(self) -> MetadataDB:
        if self._db is None:
            self._db = MetadataDB(self.db_url)
        return self._db

    def _settings(self, parallelism: int, extra: dict[str, str]) -> dict[str, str]:
        """Every process's environment; kept in airflow.env, so a second ``up`` reuses its keys."""
        previous = read_env_file(self.env_file)
        out = {
            "AIRFLOW_HOME": str(self.home),
            "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
            "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
            "AIRFLOW__CORE__EXECUTOR": "LocalExecutor",
            "AIRFLOW__CORE__PARALLELISM": str(parallelism),
            "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": self.db_url,
            # one key and one secret for every process: each would otherwise generate its own
            "AIRFLOW__CORE__FERNET_KEY": previous.get("AIRFLOW__CORE__FERNET_KEY") or _fernet_key(),
            "AIRFLOW__API_AUTH__JWT_SECRET": previous.get("AIRFLOW__API_AUTH__JWT_SECRET") or secrets.token_urlsafe(32),
            "AIRFLOW__API__PORT": str(self.port),
            "AIRFLOW__CORE__EXECUTION_API_SERVER_URL": f"http://localhost:{self.port}/execution/",
            # the api-server shares this machine with the Spark jobs: a slow answer is not a lost task
            # (the default 5 s made a busy 2-core machine kill a starting task)
            "AIRFLOW__WORKERS__EXECUTION_API_TIMEOUT": "30",
            # a local deployment to click through: no login
            "AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_ALL_ADMINS": "True",
            "DELTA_EXAMPLE_BASE": str(self.base),
        }
        out.update(extra)
        return out

    # -------------------------------------------------------------- steps of `up`
    def write_env_file(self) -> None:
        self.home.mkdir(parents=True, exist_ok=True)
        lines = ["# the settings every process of this deployment shares: source this file to use the airflow CLI"]
        lines += [f"export {k}={shlex.quote(v)}" for k, v in self.settings.items()]
        self.env_file.write_text("\n".join(lines) + "\n")
        self.env_file.chmod(0o600)          # holds the Fernet key and the JWT secret

    def airflow(self, *args: str, timeout: float = 600) -> str:
        """Run ``airflow <args>`` with the deployment's settings; its output, or RuntimeError."""
        proc = subprocess.run([AIRFLOW_BIN, *args], env=self.env, capture_output=True, text=True,
                              timeout=timeout)
        if proc.returncode != 0:
            raise RuntimeError(f"airflow {' '.join(args)} failed ({proc.returncode}):\n"
                               f"{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}")
        return proc.stdout

    def migrate(self) -> None:
        self.airflow("db", "migrate")

    def add_connection(self) -> None:
        """``airflow connections add`` the examples' connections (replacing older definitions)."""
        existing = {c.get("conn_id") for c in json.loads(self.airflow("connections", "list", "--output", "json")
                                                          or "[]")}
        for conn_id, conn in example_connections(self.base).items():
            if conn_id in existing:
                self.airflow("connections", "delete", conn_id)
            self.airflow("connections", "add", conn_id, "--conn-json", json.dumps(conn))

    def start(self) -> None:
        self.processes.start("api-server", "--port", str(self.port))
        for name in COMPONENTS[1:]:
            self.processes.start(name)

    def wait_until_ready(self, deadline: float) -> None:
        """The api-server answers, the other three heartbeat, the example DAGs are parsed."""
        wait_for(self._api_answers, deadline, f"the api-server on port {self.port}", self.processes)
        wait_for(lambda: JOB_TYPES <= {r[0] for r in self.db.query(
            "SELECT DISTINCT job_type FROM job WHERE state = 'running'")}, deadline,
            "scheduler, dag-processor and triggerer to report running", self.processes)
        wait_for(lambda: set(EXAMPLE_DAGS) <= self.parsed_dags() or self.import_errors(), deadline,
                 f"the example DAGs {EXAMPLE_DAGS} to be parsed", self.processes)
        errors = self.import_errors()
        if errors:
            raise RuntimeError(f"the example DAGs failed to import: {errors}")

    def _api_answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.url}/api/v2/version", timeout=5) as r:
                return r.status == 200
        except (urllib.error.URLError, OSError):
            return False

    def parsed_dags(self) -> set[str]:
        return {r[0] for r in self.db.query("SELECT dag_id FROM dag WHERE NOT is_stale")}

    def import_errors(self) -> list[tuple]:
        return self.db.query("SELECT filename, stacktrace FROM import_error")

    def dag_warnings(self) -> list[tuple]:
        return self.db.query("SELECT dag_id, warning_type, message FROM dag_warning")

    def up(self, deadline: float) -> None:
        self.write_env_file()
        self.base.mkdir(parents=True, exist_ok=True)
        self.migrate()
        self.add_connection()
        self.start()
        self.wait_until_ready(deadline)

    def down(self) -> None:
        self.processes.stop_all()
        stop_recorded(self.processes.log_dir)
        if self._db is not None:
            self._db.close()
            self._db = None


def read_env_file(path: Path) -> dict[str, str]:
    """The ``export K=V`` lines of an airflow.env written earlier (empty if none)."""
    out: dict[str, str] = {}
    if path.exists():
        for line in path.read_text().splitlines():
            if line.startswith("export "):
                key, _, value = line[len("export "):].partition("=")
                out[key] = shlex.split(value)[0] if value else ""
    return out


def _fernet_key() -> str:
    from cryptography.fernet import Fernet
    return Fernet.generate_key().decode()


# ------------------------------------------------------------------ command line
def default_example_base() -> str:
    """Where the example tables go unless ``--base`` says: ``$DELTA_EXAMPLE_BASE``, else this
    repository's ``example_output/``, an absolute path whatever the working directory. The same rule
    as ``dags_examples/example_settings.py`` (which cannot import this script): the DAGs and the
    scripts that deploy or run them must name the same tables."""
    return os.path.abspath(os.environ.get("DELTA_EXAMPLE_BASE") or str(ROOT / "example_output"))


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("command", choices=("up", "down"))
    p.add_argument("--airflow-home", default="./airflow_home", help="AIRFLOW_HOME (created if missing)")
    p.add_argument("--base", default=default_example_base(), help="directory of the example tables")
    p.add_argument("--port", type=int, default=8080, help="api-server port (the UI)")
    p.add_argument("--postgres-url", default=os.environ.get("DELTA_TEST_POSTGRES_URL", DEFAULT_POSTGRES),
                   help="PostgreSQL server for the metadata database (any database on it; "
                        "the deployment uses one of its own, --database)")
    p.add_argument("--database", default="airflow_examples", help="name of the metadata database")
    p.add_argument("--sqlite", action="store_true", help="SQLite in the Airflow home instead of PostgreSQL")
    p.add_argument("--timeout", type=float, default=300, help="seconds to wait for the processes")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    home = Path(args.airflow_home).resolve()
    if args.command == "down":
        stopped = stop_recorded(home / "processes")
        print(f"stopped: {', '.join(stopped) or 'nothing was running'}")
        return 0
    if args.sqlite:
        db_url = f"sqlite:///{home / 'airflow.db'}"
    else:
        db_url = create_postgres_database(args.postgres_url, args.database)
    deployment = Deployment(home, Path(args.base), db_url, port=args.port)
    if any(deployment.processes.log_dir.glob("*.pid")):
        print(f"a deployment already runs from {home} (make airflow-down first)", file=sys.stderr)
        return 1
    try:
        deployment.up(time.monotonic() + args.timeout)
    except (RuntimeError, TimeoutError) as e:
        print(f"FAILED: {e}\n{deployment.processes.tails()}", file=sys.stderr)
        deployment.down()
        return 1
    print(f"Airflow is up: {deployment.url} (no login)\n"
          f"  tables under {deployment.base}, process logs in {deployment.processes.log_dir}\n"
          f"  CLI: source {deployment.env_file}; then e.g.\n"
          f"    airflow dags unpause delta_downstream && airflow dags unpause delta_orders_audit\n"
          f"    airflow dags unpause delta_ingest && airflow dags trigger delta_ingest\n"
          f"  stop: make airflow-down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
