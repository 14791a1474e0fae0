"""The example's Delta Spark application (dags_examples/jobs/customer_totals.py) when runs race.

Two downstream runs on a first deployment both append to a ``customer_totals`` that
does not exist yet; Delta Spark fails the one that loses the race for version 0. The
job's ``append`` appends again to the table the other run created. Each writer here is
an application of its own as far as Delta Spark cares: its own session
(``spark.newSession()``), armed with its exactly-once pair as the operator arms an
application's session, so a lost write uses up that session's ``txnVersion`` exactly as
in a real application. The writers start at once (Delta Spark's transactions are per
write, so they race exactly as separate applications do); every row must land once,
whoever lost.
"""
from __future__ import annotations

import importlib.util
import threading
from pathlib import Path
from typing import Any, Callable

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.spark.delta_job import DeltaJobContext
from submitted_application import submitted_session
from task_context import task_context

pytestmark = [pytest.mark.spark]

JOB = Path(__file__).resolve().parents[2] / "dags_examples" / "jobs" / "customer_totals.py"
ROWS = "customer string, orders long, orders_version long"
#: how many fresh tables the operator race gets to show a lost create (it nearly always does at once)
RACE_ROUNDS = 5


def load_job():
    spec = importlib.util.spec_from_file_location("example_customer_totals_job", JOB)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def armed_session(spark, path: str, app_id: str, version: int):
    """A session of its own carrying the pair, as the operator's ``--conf`` leaves an application's."""
    ctx = DeltaJobContext(input_table_uri=None, input_version=None, output_table_uri=path,
                          txn_app_id=app_id, txn_version=version)
    session = spark.newSession()
    ctx.arm_session(session)
    return session, ctx


def race(writers: int, write: Callable[[int], None]) -> list[BaseException]:
    """Run ``write(i)`` for every writer at once; the errors they raised."""
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def one(i: int) -> None:
        barrier.wait()
        try:
            write(i)
        except BaseException as e:          # reported by the caller's assertion
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(writers)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    return errors


def test_appends_racing_to_create_the_table_all_land_once(spark, tmp_path, capsys):
    job = load_job()
    path = str(tmp_path / "customer_totals")
    writers = 4
    sessions = [armed_session(spark, path, f"run{i}", 1) for i in range(writers)]
    frames = [session.createDataFrame([(f"c{i}", i, 7)], ROWS) for i, (session, _) in enumerate(sessions)]

    def write(i: int) -> None:
        session, ctx = sessions[i]
        job.append(frames[i], path, lambda: ctx.arm_session(session))
    assert not race(writers, write)
    rows = DeltaTable(path).snapshot().to_pyarrow().to_pylist()
    assert sorted(r["customer"] for r in rows) == [f"c{i}" for i in range(writers)]
    retried = capsys.readouterr().out.count("writing again")
    print(f"{retried} of {writers} writers lost the race to create the table and appended again")
    assert DeltaTable(path).latest_version() == writers - 1
    assert all(DeltaTable(path).snapshot().transaction_version(f"run{i}") == 1 for i in range(writers))


def test_a_different_table_created_first_still_fails_the_append(spark, tmp_path):
    job = load_job()
    path = str(tmp_path / "customer_totals")
    spark.createDataFrame([(1,)], "other int").write.format("delta").save(path)
    session, ctx = armed_session(spark, path, "run", 1)
    frame = session.createDataFrame([("c", 1, 7)], ROWS)
    with pytest.raises(Exception, match="(?i)schema|merge"):
        job.append(frame, path, lambda: ctx.arm_session(session))
    assert DeltaTable(path).latest_version() == 0


def test_writers_of_the_same_txn_version_append_it_once(spark, tmp_path):
    """Two runs that pinned the same orders version: one set of rows, whoever lost."""
    job = load_job()
    path = str(tmp_path / "customer_totals")
    sessions = [armed_session(spark, path, "delta_downstream.customer_totals", 7) for _ in range(3)]
    frames = [session.createDataFrame([("c", 1, 7)], ROWS) for session, _ in sessions]

    def write(i: int) -> None:
        session, ctx = sessions[i]
        job.append(frames[i], path, lambda: ctx.arm_session(session))
    assert not race(3, write)
    assert DeltaTable(path).snapshot().to_pyarrow().num_rows == 1
    assert DeltaTable(path).snapshot().transaction_version("delta_downstream.customer_totals") == 7


def _applications_in_own_sessions(monkeypatch, spark, application: Callable[[Any, DeltaJobContext], None]) -> None:
    """Run ``application(session, job_context)`` instead of spark-submit, in a new session per
    application carrying the Delta settings the operator passes as ``--conf``."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    def execute(self, context):
        session = spark.newSession()
        with submitted_session(self, session) as job:
            application(session, job)
    monkeypatch.setattr(SparkSubmitOperator, "execute", execute)


def test_two_downstream_runs_racing_to_create_customer_totals_both_succeed(monkeypatch, spark, tmp_path, capsys):
    """The real-deployment race, through the operator: two runs of delta_downstream pinned the same
    orders version and their customer_totals applications both create the table at once."""
    from airflow_provider_delta.assets import to_asset
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    job = load_job()
    orders = DeltaTable.create(str(tmp_path / "orders"), pa.schema([("customer", pa.string()),
                                                                    ("amount", pa.int64())]))
    orders.write(pa.table({"customer": ["a", "b", "a"], "amount": [1, 2, 3]}))
    _applications_in_own_sessions(monkeypatch, spark, job.run)
    lost = 0
    for round_ in range(RACE_ROUNDS):
        out = str(tmp_path / f"customer_totals_{round_}")
        asset = to_asset(table_uri=out)
        operators = [DeltaSparkApplicationOperator(
            task_id="customer_totals", conn_id="spark_not_defined", application="customer_totals.py",
            input_table_uri=orders.uri, input_version=1, output_table_uri=out, outlets=[asset],
            app_id="delta_downstream.customer_totals", app_version=1) for _ in range(2)]
        contexts = [task_context(dag_id="delta_downstream", task_id="customer_totals", run_id=f"run{i}")
                    for i in range(2)]
        versions: list[Any] = [None, None]

        def run(i: int) -> None:
            versions[i] = operators[i].execute(contexts[i])
        assert not race(2, run)
        table = DeltaTable(out)
        rows = sorted((r["customer"], r["orders"], int(r["revenue"])) for r in table.snapshot().to_pyarrow().to_pylist())
        assert rows == [("a", 2, 4), ("b", 1, 2)]                     # once, whoever lost
        assert table.snapshot().transaction_version("delta_downstream.customer_totals") == 1
        assert versions == [0, 0]                                     # both report the one commit
        # ... and only the run that made it announces it: the other's write was skipped
        assert sorted(c["ti"].xcoms["commit"]["committed"] for c in contexts) == [False, True]
        assert [c["outlet_events"][asset].extra.get("version") for c in contexts
                if c["ti"].xcoms["commit"]["committed"]] == [0]
        assert all(not c["outlet_events"][asset].extra for c in contexts if not c["ti"].xcoms["commit"]["committed"])
        lost += capsys.readouterr().out.count("writing again")
        if lost:
            break
    assert lost, f"no application lost the create race in {RACE_ROUNDS} rounds: the race was not exercised"


def test_only_the_races_are_retried():
    job = load_job()

    class Conditioned(Exception):
        def __init__(self, condition):
            super().__init__(f"[{condition}] something")
            self.condition = condition

        def getCondition(self):
            return self.condition

    assert job.lost_race(Conditioned("DELTA_PROTOCOL_CHANGED"))
    assert job.lost_race(Conditioned("DELTA_METADATA_CHANGED"))
    assert job.lost_race(Conditioned("DELTA_CONCURRENT_TRANSACTION"))
    assert not job.lost_race(Conditioned("DELTA_CONCURRENT_APPEND"))
    assert not job.lost_race(ValueError("no table"))
