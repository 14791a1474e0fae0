"""Write-audit-publish with Spark writers: DeltaSparkSubmitOperator(transaction_id=...) stages on the driver.

A DAG run with ``dag.test()`` in this process: begin a group in the ``delta`` connection's
SqlCatalog (SQLite), two DeltaSparkSubmitOperator tasks write two catalog-managed tables into
it (the job runs in this test's Spark session with the arguments and secrets spark-submit would
get: ``SparkSubmitOperator.execute`` is replaced by the entry point's ``run``), an audit reads
the staged view, then publish or abort. A failed audit leaves both tables unchanged (no version,
no staged commit, no data file); a passed one publishes both at once. A retried writer task
whose try staged already submits nothing.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, SqlCatalog
from airflow_provider_delta.spark.job import run as run_job
from airflow_provider_delta.spark.job_args import JobSpec
from task_context import load_dag, task_context

pytestmark = pytest.mark.spark

from spark_wap_dag import CONN
SOURCE_SCHEMA = pa.schema([("customer", pa.string()), ("amount", pa.int64())])


@pytest.fixture
def lake(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path}/catalog.db"
    monkeypatch.setenv(f"AIRFLOW_CONN_{CONN.upper()}",
                       json.dumps({"conn_type": "delta", "extra": {"catalog": {"url": url}}}))
    source = DeltaTable.create(str(tmp_path / "source"), SOURCE_SCHEMA)
    source.write(pa.table({"customer": ["ann", "bob", "ann"], "amount": [10, 20, 5]}, schema=SOURCE_SCHEMA))
    catalog = SqlCatalog(url)
    orders = DeltaTable.create(str(tmp_path / "orders"), SOURCE_SCHEMA, catalog=catalog)
    totals = DeltaTable.create(str(tmp_path / "totals"), pa.schema([("customer", pa.string()),
                                                                    ("total", pa.int64())]), catalog=catalog)
    yield source, orders, totals, catalog
    catalog.dispose()


def wap_dag(source: DeltaTable, orders: DeltaTable, totals: DeltaTable, monkeypatch):
    """The DAG of ``spark_wap_dag.py`` loaded with the three tables' URIs from the environment."""
    for name, table in (("SOURCE", source), ("ORDERS", orders), ("TOTALS", totals)):
        monkeypatch.setenv(f"SPARK_WAP_{name}", table.uri)
    return load_dag(Path(__file__).with_name("spark_wap_dag.py"))


def files(table: DeltaTable) -> set[str]:
    root = table.storage.root
    return {os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs}


def states(run) -> dict[str, str]:
    return {ti.task_id: str(ti.state) for ti in run.get_task_instances()}


def test_failed_audit_leaves_both_tables_unchanged_and_passed_audit_publishes_both(airflow_db, in_session, lake, monkeypatch):
    source, orders, totals, catalog = lake
    dag = wap_dag(source, orders, totals, monkeypatch)
    before = {t.uri: files(t) for t in (orders, totals)}

    bad = dag.test(run_conf={"fail_audit": True})
    assert states(bad) == {"begin": "success", "write_orders": "success", "write_totals": "success",
                           "audit": "failed", "publish": "upstream_failed", "abort": "success"}
    assert [s.transaction_id for s in in_session] == [in_session[0].transaction_id] * 2   # both staged, ...
    assert catalog.store.group(in_session[0].transaction_id).state == "aborted"
    assert catalog.latest_versions([orders.uri, totals.uri]) == {orders.uri: 0, totals.uri: 0}   # ... none visible
    for t in (orders, totals):
        assert files(t) == before[t.uri]             # no staged commit, no data file of the group

    in_session.clear()
    good = dag.test()
    assert states(good)["publish"] == "success" and states(good)["abort"] == "skipped", states(good)
    tx_id = in_session[0].transaction_id
    assert {s.writer for s in in_session} == {"spark_wap:write_orders", "spark_wap:write_totals"}
    assert catalog.latest_versions([orders.uri, totals.uri]) == {orders.uri: 1, totals.uri: 1}
    for t in (orders, totals):
        assert t.history(1)[0]["tags"] == {"delta.multiTableTransaction.transactionId": tx_id}
    rows = DeltaTable(totals.uri, catalog=catalog).snapshot().to_pyarrow().sort_by("customer").to_pylist()
    assert rows == [{"customer": "ann", "total": 15}, {"customer": "bob", "total": 20}]
    assert DeltaTable(orders.uri, catalog=catalog).snapshot().to_pyarrow().num_rows == 3


def test_a_retried_spark_writer_whose_try_staged_submits_nothing(in_session, lake):
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    source, orders, totals, catalog = lake
    hook = DeltaTableHook(CONN)
    tx = hook.begin_transaction()

    def writer():
        return DeltaSparkSubmitOperator(task_id="write_orders", input_table_uri=source.uri, output_table_uri=orders.uri,
                                        transform="identity", transaction_id=tx, delta_conn_id=CONN,
                                        conn_id="spark_not_defined")
    first = task_context(task_id="write_orders")
    assert writer().execute(first) == 1
    assert first["ti"].xcoms["commit"]["submitted"] is True
    retry = task_context(task_id="write_orders", try_number=2)       # the first try's success was lost
    assert writer().execute(retry) == 1
    assert retry["ti"].xcoms["commit"]["submitted"] is False and len(in_session) == 1
    assert hook.publish_transaction(tx) == {orders.uri: 1}
    assert DeltaTable(orders.uri, catalog=catalog).snapshot().to_pyarrow().num_rows == 3


def test_a_spark_writer_into_a_group_needs_the_connection_catalog(in_session, lake, tmp_path, monkeypatch):
    """The output side's secrets carry no catalog: the job refuses before reading anything (typed)."""
    from airflow_provider_delta.log import InvalidArgumentError
    source, orders, _totals, _catalog = lake
    spec = JobSpec(output_table_uri=orders.uri, transform="identity", input_table_uri=source.uri,
                   transaction_id="no-such-group", writer="dag.task").validate()
    with pytest.raises(InvalidArgumentError, match="'catalog' extra"):
        run_job(None, spec, {})
    assert Path(orders.uri.removeprefix("file://"), "_delta_log", "_staged_commits").exists() is False


def test_the_job_document_carries_the_transaction_and_refuses_a_bad_one():
    from airflow_provider_delta.log import InvalidArgumentError
    spec = JobSpec(output_table_uri="/t", transform="identity", transaction_id="g-1", writer="dag.task").validate()
    assert json.loads(spec.to_json())["transaction"] == {"id": "g-1", "writer": "dag.task"}
    assert JobSpec.parse(spec.to_json()) == spec
    assert "transaction" not in json.loads(JobSpec(output_table_uri="/t", transform="identity").to_json())
    for bad in ({"id": ""}, {"id": 7}, {"id": "g", "writer": 3}, ["g"]):
        with pytest.raises(InvalidArgumentError, match="transaction"):
            JobSpec.from_document({"output": {"table_uri": "/t"}, "transform": "identity", "transaction": bad})
