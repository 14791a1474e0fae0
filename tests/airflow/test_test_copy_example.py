"""The clone example DAG (``dags_examples/delta_test_copy.py``) under real Airflow.

``dag.test()`` clones a real orders table into a new folder, the next task appends to the
clone, and orders keeps its version and rows; a second run clones into a folder of its own.
"""
from __future__ import annotations

import json

import pyarrow as pa
import pytest
from airflow_test_support import example_dag_folder

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.airflow


def test_the_clone_takes_the_change_and_orders_does_not(run_dag, tmp_path):
    base = tmp_path / "base"
    orders = DeltaTable.create(str(base / "orders"), pa.schema([("order_id", pa.int64()), ("amount", pa.float64())]))
    orders.write(pa.table({"order_id": [1, 2, 3], "amount": [1.0, 2.0, 3.0]}))
    dags, env = example_dag_folder(tmp_path, "delta_test_copy.py", base)
    env["AIRFLOW_CONN_DELTA_EXAMPLE"] = json.dumps({"conn_type": "delta"})   # the source's connection, no owner

    first = run_dag("delta_test_copy", env=env, dags_folder=dags)
    assert first.state == "success", first.output[-5000:]
    cloned = first.xcoms["clone_orders"]["return_value"]
    assert cloned["source_version"] == 1 and cloned["version"] == 0
    assert cloned["table_uri"].startswith(f"file://{base}/test_copies/orders_manual__")
    changed = first.xcoms["try_change"]["return_value"]
    assert changed == {"copy_version": 1, "rows_added": 3, "orders_version": 1}
    assert DeltaTable(cloned["table_uri"]).snapshot().to_pyarrow().num_rows == 6
    assert DeltaTable(str(base / "orders")).snapshot().to_pyarrow().num_rows == 3

    second = run_dag("delta_test_copy", env=env, dags_folder=dags)
    assert second.state == "success", second.output[-5000:]
    assert second.xcoms["clone_orders"]["return_value"]["table_uri"] != cloned["table_uri"]
