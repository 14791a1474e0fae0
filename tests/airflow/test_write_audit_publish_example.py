"""The write-audit-publish example DAG (``dags_examples/delta_write_audit_publish.py``) under real Airflow.

``dag.test()`` in a subprocess, with the ``delta_wap`` connection naming a SQLite
SqlCatalog: a run whose audit passes publishes both tables at once (one version each,
the same transaction id in both commits); a run with ``{"fail_audit": true}`` fails the
audit, skips the publish, aborts the group, and leaves both tables exactly as they were
(no new version, no staged commit, no data file of the group).
"""
from __future__ import annotations

import json
import os

import pytest
from airflow_test_support import example_dag_folder

from airflow_provider_delta.log import DeltaTable, SqlCatalog

pytestmark = pytest.mark.airflow


def _files(root: str) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(root) for f in fs}


def test_publish_on_a_good_audit_and_nothing_on_a_failed_one(run_dag, tmp_path):
    base = tmp_path / "base"
    dags, env = example_dag_folder(tmp_path, "delta_write_audit_publish.py", base)
    # the deployment defines the connection (scripts/airflow_deploy.py), never the DAG file
    env["AIRFLOW_CONN_DELTA_WAP"] = json.dumps({"conn_type": "delta",
                                                "extra": {"catalog": {"url": f"sqlite:///{base}/catalog.db"}}})

    good = run_dag("delta_write_audit_publish", env=env, dags_folder=dags)
    assert good.state == "success", good.output[-5000:]
    assert good.tasks["publish"] == "success" and good.tasks["abort"] == "skipped"
    tx_id = good.xcoms["begin"]["return_value"]
    catalog = SqlCatalog(f"sqlite:///{base / 'catalog.db'}")
    orders, totals = (DeltaTable(str(base / n), catalog=catalog) for n in ("wap_orders", "wap_customer_totals"))
    assert good.xcoms["publish"]["return_value"] == {orders.uri: 1, totals.uri: 1}
    for t in (orders, totals):
        info = t.history(1)[0]
        assert info["tags"] == {"delta.multiTableTransaction.transactionId": tx_id}
    before = {t.uri: (t.latest_version(), _files(t.storage.root)) for t in (orders, totals)}

    bad = run_dag("delta_write_audit_publish", env={**env, "DELTA_DAG_RUN_CONF": json.dumps({"fail_audit": True})},
                  dags_folder=dags)
    assert bad.state == "failed"
    assert bad.tasks["audit"] == "failed" and bad.tasks["publish"] == "upstream_failed"
    assert bad.tasks["abort"] == "success"
    bad_tx = bad.xcoms["begin"]["return_value"]
    assert catalog.store.group(bad_tx).state == "aborted"
    for t in (orders, totals):
        fresh = DeltaTable(t.uri, catalog=catalog)
        assert (fresh.latest_version(), _files(t.storage.root)) == before[t.uri]
    catalog.dispose()
