"""The rollback example DAG (``dags_examples/delta_load_with_rollback.py``) under real Airflow.

``dag.test()`` runs it four times: a good batch is loaded and published (the rollback is
skipped); a bad batch is loaded, fails the check and is rolled back by a RESTORE commit to
the version before the load; a batch that cannot even be loaded fails before committing,
and the rollback then has nothing to do and commits nothing; so does a run triggered before any batch
landed, whose load says where to put one.
"""
from __future__ import annotations

import json

import pytest
from airflow_test_support import example_dag_folder

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.airflow


def test_load_check_and_rollback_on_both_branches(run_dag, tmp_path):
    base = tmp_path / "base"
    landing = base / "landing"
    landing.mkdir(parents=True)
    dags, env = example_dag_folder(tmp_path, "delta_load_with_rollback.py", base)

    def run(batch):
        (landing / "payments.json").write_text(json.dumps(batch))
        return run_dag("delta_load_with_rollback", env=env, dags_folder=dags)

    good = run([{"id": 1, "amount": 10.0}, {"id": 2, "amount": 5.5}])
    assert good.state == "success", good.output[-5000:]
    assert good.tasks == {"remember_version": "success", "load": "success", "check": "success",
                          "publish": "success", "rollback": "skipped"}
    table = DeltaTable(str(base / "payments"))
    assert table.latest_version() == 1

    bad = run([{"id": 3, "amount": -1.0}])
    assert bad.tasks["check"] == "failed" and bad.tasks["rollback"] == "success", bad.output[-5000:]
    assert bad.tasks["publish"] == "upstream_failed"
    assert bad.xcoms["rollback"]["return_value"]["restored_version"] == 1
    assert bad.xcoms["rollback"]["return_value"]["version"] == 3 and bad.xcoms["rollback"]["return_value"]["committed"]
    table = DeltaTable(str(base / "payments"))
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2]
    assert [h["operation"] for h in table.history()][:2] == ["RESTORE", "WRITE"]
    assert sorted(table.snapshot(version=2).to_pyarrow().column("id").to_pylist()) == [1, 2, 3]   # kept in history
    events = [e for e in bad.asset_events if e["source_task_id"] == "rollback"]
    assert events and events[-1]["extra"]["operation"] == "RESTORE" and events[-1]["extra"]["version"] == 3

    broken = run([{"id": "not a number"}])                 # the load fails before committing
    assert broken.tasks["load"] == "failed" and broken.tasks["rollback"] == "success", broken.output[-5000:]
    assert broken.xcoms["rollback"]["return_value"]["committed"] is False
    assert DeltaTable(str(base / "payments")).latest_version() == 3
    # no new asset event from the rollback that restored nothing (the database keeps the earlier runs')
    assert [e for e in broken.asset_events if e["source_task_id"] == "rollback"] == events

    (landing / "payments.json").unlink()                    # triggered by hand before any batch landed
    missing = run_dag("delta_load_with_rollback", env=env, dags_folder=dags)
    assert missing.tasks["load"] == "failed" and missing.tasks["rollback"] == "success", missing.output[-5000:]
    assert f"no batch has landed at {landing / 'payments.json'}: put the batch to load there" in missing.output
    assert DeltaTable(str(base / "payments")).latest_version() == 3
