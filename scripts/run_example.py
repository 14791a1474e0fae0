"""Run the example pipeline end to end: three DAGs with ``dag.test()``, local Spark, SQLite.

What it does:

1. points Airflow at its own home (``--airflow-home``, default ``./airflow_home``) with a
   SQLite metadata database and ``dags_examples/`` as the DAG folder, and migrates it;
   defines the example's connection ``delta_example`` (``AIRFLOW_CONN_DELTA_EXAMPLE``);
2. runs ``delta_ingest`` once per day (``--days``, ending today), then once more for the
   last day to show that a re-run commits nothing twice;
3. runs ``delta_downstream`` (sensor, pinned snapshot, Spark aggregation) and
   ``delta_maintenance`` (backfill, OPTIMIZE, checkpoint, cleanup and vacuum dry runs);
4. checks every DAG run succeeded and that the tables hold what they should, and prints
   a summary (versions, rows, history).

Exit status 0 when all of that holds, 1 otherwise. Tables go to ``--base`` (default:
``$DELTA_EXAMPLE_BASE``, else this repository's ``example_output/`` whatever the working
directory, where the example DAGs put them too). ``--fresh`` starts from empty directories.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

# scripts/, this script's folder (imports no Airflow, so configure() still runs before Airflow is imported)
from airflow_deploy import default_example_base, example_connections

ROOT = Path(__file__).resolve().parents[1]
DAGS = ROOT / "dags_examples"
#: rows the ingest DAG generates per day (its transform_params)
ROWS_PER_DAY = 200


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--base", default=default_example_base(), help="directory of the example tables")
    p.add_argument("--airflow-home", default="./airflow_home", help="AIRFLOW_HOME to use (created if missing)")
    p.add_argument("--days", type=int, default=2, help="how many daily ingest runs (ending today)")
    p.add_argument("--fresh", action="store_true", help="delete the base directory and Airflow home first")
    return p.parse_args(argv)


def configure(base: Path, home: Path) -> None:
    """Environment Airflow and the DAGs read at import: must run before anything imports airflow."""
    for key in [k for k in os.environ if k.startswith(("AIRFLOW__", "AIRFLOW_CONN_"))]:
        del os.environ[key]
    os.environ.update({
        "AIRFLOW_HOME": str(home),
        "AIRFLOW__CORE__LOAD_EXAMPLES": "False",
        "AIRFLOW__CORE__DAGS_FOLDER": str(DAGS),
        "AIRFLOW__DATABASE__SQL_ALCHEMY_CONN": f"sqlite:///{home / 'airflow.db'}",
        "AIRFLOW__CORE__UNIT_TEST_MODE": "False",
        "DELTA_EXAMPLE_BASE": str(base),
    })
    if str(DAGS) not in sys.path:
        sys.path.insert(0, str(DAGS))
    # the example's connection, defined by the deployment (here: this process), never by a DAG file
    for conn_id, conn in example_connections(base).items():
        os.environ[f"AIRFLOW_CONN_{conn_id.upper()}"] = json.dumps(conn)


def migrate() -> None:
    proc = subprocess.run([sys.executable, "-m", "airflow", "db", "migrate"], capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"airflow db migrate failed:\n{proc.stdout[-5000:]}\n{proc.stderr[-5000:]}")


def run_dag(dag: Any, logical_date: dt.datetime) -> tuple[str, dict[str, str], dict[str, dict[str, Any]]]:
    """dag.test() one run; (run state, task states, XComs by task) read back from the database."""
    from sqlalchemy import select

    from airflow.models.dagrun import DagRun
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    dr = dag.test(logical_date=logical_date)
    with create_session() as session:
        state = str(session.get(DagRun, dr.id).state)
        tis = session.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag.dag_id,
                                                         TaskInstance.run_id == dr.run_id)).all()
        tasks = {ti.task_id: str(ti.state) for ti in tis}
        xcoms: dict[str, dict[str, Any]] = {}
        for x in session.scalars(select(XComModel).where(XComModel.dag_id == dag.dag_id,
                                                         XComModel.run_id == dr.run_id)).all():
            value = x.value
            if isinstance(value, (str, bytes)):
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            xcoms.setdefault(x.task_id, {})[x.key] = value
    return state, tasks, xcoms


def _task_key(job: dict[str, Any]) -> str | None:
    """The committing task as the default exactly-once identity names it, ``<dag_id>:<task_id>[<map_index>]``
    (:func:`airflow_provider_delta.hooks.run_identity.task_key`), from a commit's ``job``."""
    from airflow_provider_delta.hooks.run_identity import task_key
    if not job:
        return None
    ti = SimpleNamespace(dag_id=job.get("dag_id"), task_id=job.get("task_id"), map_index=job.get("map_index", -1))
    return task_key({"ti": ti})


def table_summary(uri: str) -> dict[str, Any]:
    from airflow_provider_delta.log import DeltaTable
    table = DeltaTable(uri)
    snap = table.snapshot()
    rows = snap.to_pyarrow()
    history = []
    for h in table.history():
        job = h.get("job") or {}
        history.append({"version": h.get("version"), "operation": h.get("operation"),
                        "task": _task_key(job),
                        "rows": (h.get("operationMetrics") or {}).get("numOutputRows")})
    return {"uri": uri, "version": snap.version, "rows": rows.num_rows, "files": snap.files().num_rows,
            "checkpoint": snap.segment.checkpoint_version, "history": history, "data": rows}


def check(cond: bool, message: str, problems: list[str]) -> None:
    print(("  ok    " if cond else "  FAIL  ") + message)
    if not cond:
        problems.append(message)


class RunFailed(Exception):
    """A DAG run did not succeed: later DAGs would only wait for its output, so stop."""


class Pipeline:
    """Runs the example DAGs in order and remembers what each run returned."""

    def __init__(self, bag: Any):
        self.bag = bag
        self.runs: list[tuple[str, str, str]] = []

    def run(self, dag_id: str, when: dt.datetime) -> dict[str, dict[str, Any]]:
        t0 = time.monotonic()
        state, tasks, xcoms = run_dag(self.bag.dags[dag_id], when)
        self.runs.append((dag_id, when.date().isoformat(), f"{state} in {time.monotonic() - t0:.0f}s"))
        failed = {t: s for t, s in tasks.items() if s != "success"}
        problems: list[str] = []
        check(state == "success" and not failed,
              f"{dag_id} for {when.date()}: run {state}" + (f", tasks not successful: {failed}" if failed else ""),
              problems)
        if problems:
            raise RunFailed(problems[0])
        return xcoms


def check_outputs(days: list[dt.datetime], commits: list[Any], rerun: Any, downstream: dict[str, Any],
                  orders: dict[str, Any], totals: dict[str, Any], orders_uri: str,
                  customers: dict[str, Any]) -> list[str]:
    """The tables hold what the runs claim: each day once, totals of the pinned version (by the
    driver-side job and by the Delta Spark application), a checkpoint."""
    from airflow_provider_delta.log import DeltaTable
    problems: list[str] = []
    ingest_versions = [c and c.get("version") for c in commits]
    fresh = [bool(c and c.get("committed")) for c in commits]
    check(all(v is not None for v in ingest_versions),
          f"each daily ingest is in the table: versions {ingest_versions} (committed by this run: {fresh})",
          problems)
    check(bool(rerun) and not rerun.get("committed") and rerun.get("version") == ingest_versions[-1],
          f"re-running the last day committed nothing new (points at version {rerun and rerun.get('version')})",
          problems)
    per_day: dict[Any, int] = {}
    for r in orders["data"].select(["order_date"]).to_pylist():
        per_day[r["order_date"]] = per_day.get(r["order_date"], 0) + 1
    counts = [per_day.get(day.date(), 0) for day in days]
    check(all(n == ROWS_PER_DAY for n in counts), f"orders holds {counts} rows for day(s) "
          f"{[d.date().isoformat() for d in days]} (exactly once each)", problems)
    pinned = (downstream.get("pin_orders", {}).get("return_value") or {}).get("version")
    check(pinned is not None and pinned == ingest_versions[-1],
          f"downstream pinned orders at the last ingest's version {pinned}", problems)
    if pinned is not None:
        pinned_rows = DeltaTable(orders_uri).snapshot(pinned).to_pyarrow().to_pylist()
        total_orders = sum(r["orders"] for r in totals["data"].to_pylist())
        revenue = sum(r["revenue"] for r in totals["data"].to_pylist())
        check(total_orders == len(pinned_rows) and revenue == sum(r["amount"] for r in pinned_rows),
              f"daily_totals adds up: {total_orders} orders, revenue {revenue}", problems)
        check_customer_totals(customers, pinned, pinned_rows, problems)
    check(orders["checkpoint"] == orders["version"], f"orders has a checkpoint at version {orders['checkpoint']}",
          problems)
    return problems


def check_customer_totals(customers: dict[str, Any], pinned: int, pinned_rows: list[dict[str, Any]],
                          problems: list[str]) -> None:
    """customer_totals (written by Delta Spark in the customer_totals task) holds one row per customer
    for the pinned orders version, exactly once, adding up to that version's orders."""
    rows = [r for r in customers["data"].to_pylist() if r["orders_version"] == pinned]
    expected: dict[Any, list] = {}
    for r in pinned_rows:
        count, revenue = expected.setdefault(r["customer"], [0, 0])
        expected[r["customer"]] = [count + 1, revenue + r["amount"]]
    got = {r["customer"]: [r["orders"], r["revenue"]] for r in rows}
    check(len(rows) == len(got) and got == expected,
          f"customer_totals (Delta Spark job) holds {len(rows)} row(s) for orders version {pinned}, "
          f"one per customer, adding up to {sum(n for n, _ in got.values())} orders", problems)
    operations = sorted({h["operation"] for h in customers["history"]})
    check(operations == ["WRITE"], f"customer_totals: version {customers['version']}, only Delta Spark "
          f"appends in its history ({operations})", problems)


def print_summary(runs: list[tuple[str, str, str]], orders: dict[str, Any], totals: dict[str, Any],
                  customers: dict[str, Any]) -> None:
    print("\n=== summary ===")
    for dag_id, day, outcome in runs:
        print(f"  {dag_id:<18} {day}  {outcome}")
    for s in (orders, totals, customers):
        print(f"\n{s['uri']}: version {s['version']}, {s['rows']} rows in {s['files']} files, "
              f"checkpoint {s['checkpoint']}")
        for h in s["history"]:
            print(f"  v{h['version']:<3} {h['operation']:<14} rows={h['rows'] or '-':<5} by {h['task'] or '-'}")
    print("\ndaily_totals:")
    for r in totals["data"].to_pylist():
        print(f"  {r['order_date']}  {r['customer']:<10} {r['orders']:>4} orders  {r['revenue']:>10}")
    print("\ncustomer_totals (Delta Spark application):")
    for r in sorted(customers["data"].to_pylist(), key=lambda r: (r["orders_version"], r["customer"])):
        print(f"  orders v{r['orders_version']:<4} {r['customer']:<10} {r['orders']:>4} orders  {r['revenue']:>10}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    started = time.monotonic()
    base = Path(args.base).resolve()
    home = Path(args.airflow_home).resolve()
    if args.fresh:
        shutil.rmtree(base, ignore_errors=True)
        shutil.rmtree(home, ignore_errors=True)
    base.mkdir(parents=True, exist_ok=True)
    home.mkdir(parents=True, exist_ok=True)
    configure(base, home)
    print(f"Airflow home: {home}\nTables under: {base}")
    migrate()

    from airflow.dag_processing.dagbag import DagBag
    bag = DagBag(dag_folder=str(DAGS))
    wanted = ("delta_ingest", "delta_downstream", "delta_maintenance")
    if bag.import_errors or any(d not in bag.dags for d in wanted):
        print(f"ERROR: example DAGs failed to load: {bag.import_errors or 'missing DAGs'}", file=sys.stderr)
        return 1
    from example_settings import CUSTOMER_TOTALS, DAILY_TOTALS, ORDERS

    today = dt.datetime.now(dt.timezone.utc).replace(hour=0, minute=0, second=0, microsecond=0)
    days = [today - dt.timedelta(days=n) for n in range(max(args.days, 1) - 1, -1, -1)]
    pipeline = Pipeline(bag)
    try:
        print("\n=== delta_ingest ===")
        commits = [pipeline.run("delta_ingest", day).get("ingest_orders", {}).get("commit") for day in days]
        rerun = pipeline.run("delta_ingest", days[-1]).get("ingest_orders", {}).get("commit")
        print("\n=== delta_downstream ===")
        downstream = pipeline.run("delta_downstream", days[-1])
        print("\n=== delta_maintenance ===")
        pipeline.run("delta_maintenance", days[-1])
    except RunFailed as e:
        print(f"\nFAILED after {time.monotonic() - started:.0f}s: {e} (see the task logs above)", file=sys.stderr)
        return 1

    print("\n=== checks ===")
    orders, totals, customers = table_summary(ORDERS), table_summary(DAILY_TOTALS), table_summary(CUSTOMER_TOTALS)
    problems = check_outputs(days, commits, rerun, downstream, orders, totals, ORDERS, customers)
    print_summary(pipeline.runs, orders, totals, customers)
    print(f"\nExample pipeline finished in {time.monotonic() - started:.0f}s: "
          f"{'OK' if not problems else 'FAILED: ' + '; '.join(problems)}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main())
