"""Write-audit-publish tasks under real Airflow: a retried begin, transaction ids that render to nothing.

``dag.test()`` of ``prod_dags/delta_wap_arguments.py`` against a SQLite ``SqlCatalog``, plus the
operators through ``execute(context)``:

* a begin task whose first try recorded a transaction and then died is retried: the retry returns
  that transaction, so the catalog holds one group, not two, and the run publishes it;
* ``transaction="{{ ti.xcom_pull(task_ids='no_such_task') }}"`` renders ``"None"``: the audit
  decorator reads it as "not given" (like its other optional arguments); the publish and abort tasks
  fail at once with ``DeltaArgumentError`` (no retry) and no transaction changes;
* ``DeltaBeginTransactionOperator(transaction_id=...)`` is refused when the DAG is built.
"""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_delta.hooks.arguments import DeltaArgumentError
from airflow_provider_delta.log import DeltaTable, SqlCatalog
from airflow_provider_delta.operators import (DeltaAbortTransactionOperator, DeltaBeginTransactionOperator,
                                              DeltaPublishTransactionOperator)

PROD_DAGS = Path(__file__).resolve().parent / "prod_dags"
SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


@pytest.fixture
def wap(tmp_path, monkeypatch):
    """A catalog-managed table with one row, and the connection naming its catalog."""
    url = f"sqlite:///{tmp_path}/catalog.db"
    catalog = SqlCatalog(url)
    table = DeltaTable.create(str(tmp_path / "orders"), SCHEMA, catalog=catalog)
    table.write(pa.table({"id": [1], "day": ["2026-01-01"]}))
    conn = json.dumps({"conn_type": "delta", "extra": {"catalog": {"url": url}}})
    monkeypatch.setenv("AIRFLOW_CONN_DELTA_WAP_TEST", conn)
    yield catalog, table, {"DELTA_TEST_TABLE": table.uri, "AIRFLOW_CONN_DELTA_WAP_TEST": conn}
    catalog.dispose()


def groups(catalog: SqlCatalog) -> list[tuple[str, str]]:
    """Every transaction the catalog recorded: (id, state)."""
    with catalog.store.db.engine.connect() as c:
        return [tuple(r) for r in c.execute(sa.text("SELECT group_id, state FROM delta_catalog_groups"))]


@pytest.mark.airflow
def test_a_retried_begin_returns_the_transaction_its_first_try_began(run_dag, wap):
    catalog, table, env = wap
    report = run_dag("delta_wap_retried_begin", env=env, dags_folder=PROD_DAGS)
    assert report.state == "success", report.output[-5000:]
    assert "worker lost after beginning" in report.output              # the first try did fail
    tx_id = report.xcoms["begin"]["return_value"]
    assert groups(catalog) == [(tx_id, "ratified")]                     # one group: the retry reused it
    assert report.xcoms["audit"]["return_value"] == 2                   # the staged view: 1 + 1 rows
    assert report.xcoms["publish"]["return_value"] == {table.uri: 2}
    assert DeltaTable(table.uri, catalog=catalog).snapshot().to_pyarrow().num_rows == 2


@pytest.mark.airflow
@pytest.mark.parametrize("dag_id", ["delta_wap_missing_transaction", "delta_wap_missing_transaction_native"])
def test_a_transaction_id_rendered_to_none_fails_publish_and_abort_without_retry(run_dag, wap, dag_id):
    catalog, table, env = wap
    report = run_dag(dag_id, env=env, dags_folder=PROD_DAGS)
    assert report.state == "failed"
    # retries=3 with a retry delay of an hour: a retried task would be up_for_retry, not failed
    assert report.tasks["publish"] == "failed" and report.tasks["abort"] == "failed", report.tasks
    assert "transaction_id is 'None': no transaction id. Nothing was changed" in report.output \
        or "transaction_id is None: no transaction id. Nothing was changed" in report.output
    # the audit took "None" for "not given": it read the published table (1 row), not the staged view
    assert report.xcoms["audit_latest"]["return_value"] == 1
    assert report.xcoms["audit_latest"]["version"] == 1
    tx_id = report.xcoms["begin"]["return_value"]
    assert groups(catalog) == [(tx_id, "open")]                         # neither published nor aborted
    assert catalog.group(tx_id).staged_version(table.uri, f"{dag_id}:write") == 2
    assert DeltaTable(table.uri, catalog=catalog).latest_version() == 1


@pytest.mark.parametrize("value", ["None", "", "  ", None, "null", {"id": "x"}, 12])
@pytest.mark.parametrize("cls", [DeltaPublishTransactionOperator, DeltaAbortTransactionOperator])
def test_publish_and_abort_refuse_a_missing_id_before_asking_the_catalog(wap, make_context, cls, value):
    catalog, table, _ = wap
    tx_id = catalog.begin("some-key").record().id
    op = cls(task_id="t", transaction_id="{{ rendered }}", delta_conn_id="delta_wap_test")
    op.transaction_id = value                                           # what the template rendered to
    with pytest.raises(DeltaArgumentError, match="Nothing was changed") as e:
        op.execute(make_context())
    assert isinstance(e.value, AirflowFailException)                    # fails without a retry
    assert groups(catalog) == [(tx_id, "open")]


def test_begin_refuses_a_transaction_id(wap):
    with pytest.raises(DeltaArgumentError, match="takes no transaction_id"):
        DeltaBeginTransactionOperator(task_id="begin", transaction_id="abc", delta_conn_id="delta_wap_test")


def test_begin_is_keyed_by_task_instance_and_begins_anew_after_an_abort(wap, make_context):
    """The same task instance (every try) gets one transaction; another run or task its own; an aborted
    transaction is not handed out again (the task cleared after a failed audit starts afresh)."""
    catalog, table, _ = wap
    begin = DeltaBeginTransactionOperator(task_id="begin", delta_conn_id="delta_wap_test")
    first = begin.execute(make_context("begin"))
    assert begin.execute(make_context("begin")) == first                # a retry
    other_run = make_context("begin")
    other_run["ti"].run_id = other_run["run_id"] = "manual__2026-01-02T00:00:00+00:00"
    assert begin.execute(other_run) != first
    catalog.group(first).abort()
    again = begin.execute(make_context("begin"))
    assert again not in (first, None)
    assert sorted(groups(catalog)) == sorted([(first, "aborted"), (again, "open"),
                                              (begin.execute(other_run), "open")])
