"""Run semantics: the default exactly-once identity follows the data interval; no event without a commit.

The identity decides what the Spark operators do before submitting (skip when the table
already holds it) and what the job commits (``txn(app_id, app_version)``); here the
commits are made through the log layer with the same ``txn`` action, on real tables.
"""
from __future__ import annotations

import copy
import datetime as dt
import os
import sys
from pathlib import Path
from types import SimpleNamespace

import pyarrow as pa
import pytest
from airflow.dag_processing.dagbag import DagBag

from airflow_provider_delta.hooks.commits import CommitWatch
from airflow_provider_delta.hooks.run_identity import app_id_matches, former_task_keys, run_app_id, run_key, task_key
from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.operators.spark_base import resolve_app
from airflow_provider_delta.spark import exactly_once

pytestmark = pytest.mark.airflow

UTC = dt.timezone.utc
DAY1 = dt.datetime(2026, 1, 1, tzinfo=UTC)
DAY2 = dt.datetime(2026, 1, 2, tzinfo=UTC)
DAY3 = dt.datetime(2026, 1, 3, tzinfo=UTC)


class Task:
    dag_id, task_id = "dag", "ingest"


def interval(start: dt.datetime, end: dt.datetime, run_id: str = "r") -> dict:
    return {"data_interval_start": start, "data_interval_end": end, "logical_date": start, "run_id": run_id}


def run_task(table: DeltaTable, context: dict) -> bool:
    """What a Spark operator does for one try: skip if the pair is in, else commit it. True if committed."""
    app_id, version = resolve_app(None, None, context, Task())
    if exactly_once.already_committed(table, app_id, version):
        return False
    with table.transaction(operation="WRITE") as txn:
        txn.set_txn(app_id, version)
    return True


@pytest.fixture
def table(tmp_path) -> DeltaTable:
    return DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))


def test_identity_is_the_data_interval_then_logical_date_then_run_id():
    assert run_key(interval(DAY1, DAY2)) == "20260101T000000Z-20260102T000000Z"
    assert run_key({"logical_date": DAY2, "run_id": "x"}) == "20260102T000000Z"
    assert run_key({"logical_date": None, "run_id": "manual__2026-01-05T10:00:00"}) == \
        "manual__2026-01-05T10:00:00"
    assert resolve_app(None, None, interval(DAY1, DAY2), Task()) == \
        ("dag:ingest@20260101T000000Z-20260102T000000Z", int(DAY2.timestamp()))
    assert resolve_app("mine", None, interval(DAY1, DAY2), Task()) == ("mine", int(DAY2.timestamp()))
    with pytest.raises(InvalidArgumentError, match="app_id and app_version"):
        run_key({})


def test_the_former_spellings_of_a_task_key_are_those_of_earlier_builds():
    """0.1.0 joined with dots (a mapped index too: ``.1``), development builds of 0.2.0 had ``dag.task[1]``
    (git: 437bb40 brackets, abbb7bb colon)."""
    ti = SimpleNamespace(dag_id="sales.daily", task_id="grp.load", map_index=-1)
    assert task_key({"ti": ti}) == "sales.daily:grp.load"
    assert former_task_keys({"ti": ti}) == ("sales.daily.grp.load",)
    ti.map_index = 12
    assert former_task_keys({"ti": ti}) == ("sales.daily.grp.load[12]", "sales.daily.grp.load.12")
    assert former_task_keys({}) == ()


def test_a_backfill_after_a_newer_run_commits_and_a_rerun_does_not(table):
    assert run_task(table, interval(DAY2, DAY3, "scheduled_2"))       # the newer interval first
    assert run_task(table, interval(DAY1, DAY2, "backfill_1"))        # then the older one: commits too
    assert not run_task(table, interval(DAY1, DAY2, "backfill_1"))    # retry of the backfill
    assert not run_task(table, interval(DAY2, DAY3, "scheduled_2"))   # re-run of the newer interval
    assert table.latest_version() == 2


def test_in_schedule_order_each_interval_commits_once(table):
    assert run_task(table, interval(DAY1, DAY2))
    assert not run_task(table, interval(DAY1, DAY2))                  # retry
    assert run_task(table, interval(DAY2, DAY3))
    assert not run_task(table, interval(DAY2, DAY3, "another run over the same interval"))
    assert table.latest_version() == 2


def test_a_manual_run_without_logical_date_is_exactly_once_per_run(table):
    manual = {"logical_date": None, "run_id": "manual__1", "run_after": DAY3}
    assert run_task(table, manual)
    assert not run_task(table, manual)                                # cleared and run again
    assert run_task(table, {**manual, "run_id": "manual__2"})


def test_commit_filters_match_the_per_run_ids_of_a_task(table):
    assert app_id_matches("dag.ingest", run_app_id("dag:ingest", interval(DAY1, DAY2)))
    assert not app_id_matches("dag.ingest", "dag.ingest_other@x")
    assert not app_id_matches("dag.in", "dag.ingest@x")
    run_task(table, interval(DAY1, DAY2))
    with table.transaction(operation="WRITE") as txn:
        txn.set_txn("dag.ingest_other@x", 1)
    watch = CommitWatch(after_version=0, app_id="dag.ingest")
    watch.poll(table)
    assert [c["version"] for c in watch.commits] == [1]


@pytest.mark.parametrize("former_id", [False, True], ids=["current-id", "id-before-0.2.0"])
def test_a_spark_task_whose_interval_is_in_emits_no_asset_event(run_dag, tmp_path, former_id):
    """Real Airflow (dag.test): the Spark operator finds its interval committed, submits nothing, stays
    silent; in the same run @task.delta_snapshot (registered through the provider info) gets a pinned snapshot."""
    uri = str(tmp_path / "orders")
    table = DeltaTable.create(uri, pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": [1, 2]}))                 # version 1; the DAG's txn-only commit is 2
    # former_id: the interval was committed by a release before 0.2.0 (id 'delta_recommit.ingest@...') and the
    # run is cleared after the upgrade: it must find that commit, not write the interval again under the new id
    report = run_dag("delta_recommit", env={"DELTA_TEST_TABLE": uri, "DELTA_TEST_FORMER_ID": "1" if former_id else "0"})
    assert report.state == "success", report.output[-5000:]
    assert report.tasks == {"mark_interval_committed": "success", "ingest": "success", "pin": "success",
                            "count_rows": "success"}
    commit = report.xcoms["ingest"]["commit"]
    assert commit["committed"] is False and commit["version"] == 2
    assert commit["app_id"] == report.xcoms["mark_interval_committed"]["return_value"]
    sources = [e["source_task_id"] for e in report.asset_events]
    assert sources == ["pin"], report.asset_events
    # the decorator: version 2 pinned, and the function's own write (version 3) did not move it
    assert report.xcoms["count_rows"]["return_value"] == {"version": 2, "rows": 2, "after_write": 2}
    assert report.xcoms["count_rows"]["version"] == 2
    assert DeltaTable(uri).latest_version() == 3


EXAMPLES = Path(__file__).resolve().parents[2] / "dags_examples"


def example_dags(monkeypatch) -> DagBag:
    """The example DAGs parsed afresh (their settings module re-imported), as a dag-processor does."""
    monkeypatch.syspath_prepend(str(EXAMPLES))
    sys.modules.pop("example_settings", None)
    bag = DagBag(dag_folder=str(EXAMPLES))
    assert not bag.import_errors, bag.import_errors
    return bag


def test_examples_render_for_a_manual_run_and_name_tables_by_absolute_paths(tmp_path, monkeypatch):
    """`airflow dags trigger delta_ingest` gives no logical date; the paths must not follow the cwd."""
    monkeypatch.delenv("DELTA_EXAMPLE_BASE", raising=False)
    monkeypatch.chdir(tmp_path)                       # parse from an unrelated working directory
    bag = example_dags(monkeypatch)
    ingest = bag.dags["delta_ingest"].get_task("ingest_orders")
    assert os.path.isabs(ingest.output_table_uri)
    assert ingest.output_table_uri.startswith(str(EXAMPLES.parent / "example_output"))
    # Airflow 3's task runner leaves logical_date and ds out of the context of a run without one
    after = dt.datetime(2026, 3, 4, 5, 6, tzinfo=UTC)
    manual = copy.copy(ingest)
    manual.render_template_fields({"dag_run": SimpleNamespace(logical_date=None, run_after=after),
                                   "run_after": after})
    assert manual.transform_params["run_date"] == "2026-03-04"
    logical = dt.datetime(2026, 3, 1, tzinfo=UTC)
    ingest.render_template_fields({"dag_run": SimpleNamespace(logical_date=logical, run_after=after),
                                   "logical_date": logical, "run_after": after, "ds": "2026-03-01"})
    assert ingest.transform_params["run_date"] == "2026-03-01"


def test_the_example_filters_ingest_commits_by_the_ingest_task_key(monkeypatch):
    """INGEST_APP_ID (the downstream sensor's filter) is the ingest task's key in the current spelling,
    ``<dag_id>:<task_id>``, and matches the per-interval appIds the ingest task commits with."""
    bag = example_dags(monkeypatch)
    from example_settings import INGEST_APP_ID
    ingest = bag.dags["delta_ingest"].get_task("ingest_orders")
    assert INGEST_APP_ID == task_key(None, ingest) == "delta_ingest:ingest_orders"
    assert bag.dags["delta_downstream"].get_task("wait_for_orders").app_id == INGEST_APP_ID
    committed = run_app_id(INGEST_APP_ID, interval(dt.datetime(2026, 3, 1, tzinfo=UTC),
                                                    dt.datetime(2026, 3, 2, tzinfo=UTC)))
    assert committed.startswith("delta_ingest:ingest_orders@") and app_id_matches(INGEST_APP_ID, committed)


def test_the_audit_example_pins_the_version_its_asset_events_announce(monkeypatch):
    """delta_orders_audit: the newest version of the triggering events, or the latest when run by hand."""
    task = example_dags(monkeypatch).dags["delta_orders_audit"].get_task("audit_orders")
    manual = copy.copy(task)
    events = {"example_orders_commits": [SimpleNamespace(extra={"payload": {"version": 4}}),
                                         SimpleNamespace(extra={"payload": {"version": 7}})]}
    task.render_template_fields({"triggering_asset_events": events})
    assert str(task.version) == "7"
    manual.render_template_fields({"triggering_asset_events": {}})
    assert manual.version == ""
