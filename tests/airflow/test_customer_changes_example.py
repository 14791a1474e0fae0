"""The incremental example DAG (``dags_examples/delta_customer_changes.py``) under real Airflow.

``dag.test()`` runs it three times against a change-feed table that another writer
(deltalake) changes between runs: round one processes versions 0..2, a run with nothing
new commits nothing, round two (an update with cdc files and a delete) processes only
versions 3..4. The output holds every change of the source exactly once.
"""
from __future__ import annotations

import pyarrow as pa
import pytest
from airflow_test_support import example_dag_folder

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.airflow

APP_ID = "delta_customer_changes.apply"


def _keys(table: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["name"], r["_change_type"], r["_commit_version"]) for r in table.to_pylist())


def test_two_rounds_each_processed_once(run_dag, tmp_path):
    from deltalake import DeltaTable as DL, write_deltalake
    base = tmp_path / "base"
    dags, env = example_dag_folder(tmp_path, "delta_customer_changes.py", base)
    customers = str(base / "customers")
    write_deltalake(customers, pa.table({"id": pa.array([1, 2], pa.int64()), "name": ["ann", "bob"]}),
                    configuration={"delta.enableChangeDataFeed": "true"})                      # v0
    write_deltalake(customers, pa.table({"id": pa.array([3], pa.int64()), "name": ["cid"]}), mode="append")  # v1
    write_deltalake(customers, pa.table({"id": pa.array([4], pa.int64()), "name": ["dee"]}), mode="append")  # v2

    def run() -> dict:
        report = run_dag("delta_customer_changes", env=env, dags_folder=dags)
        assert report.state == "success", report.output[-5000:]
        return report.xcoms["apply_changes"]["return_value"]

    assert run() == {"start": 0, "end": 2, "output_version": 0, "rows": 4}
    output = DeltaTable(str(base / "customer_changes"))
    assert output.snapshot().transaction_version(APP_ID) == 2
    assert run() == {"start": 3, "end": 2, "output_version": None, "rows": 0}     # nothing new: no commit
    assert output.latest_version() == 0
    DL(customers).update(updates={"name": "'BOB'"}, predicate="id = 2")                            # v3
    DL(customers).delete("id = 3")                                                                 # v4
    assert run() == {"start": 3, "end": 4, "output_version": 1, "rows": 3}
    source = DeltaTable(customers)
    assert _keys(output.snapshot().to_pyarrow()) == _keys(source.changes(0))
    assert {r["_change_type"] for r in output.snapshot().to_pyarrow().to_pylist()} == {
        "insert", "update_preimage", "update_postimage", "delete"}
