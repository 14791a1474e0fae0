"""The clone example DAG (``dags_examples/delta_test_copy.py``) under real Airflow.

``dag.test()`` clones a real orders table into a new folder, the next task appends to the
clone, and orders keeps its version and rows; a second run clones into a folder of its own.
"""
from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.airflow

EXAMPLES = Path(__file__).resolve().parents[2] / "dags_examples"


def test_the_clone_takes_the_change_and_orders_does_not(run_dag, tmp_path):
    dags = tmp_path / "dags"
    dags.mkdir()
    for name in ("delta_test_copy.py", "example_settings.py"):
        shutil.copy(EXAMPLES / name, dags / name)
    base = tmp_path / "base"
    orders = DeltaTable.create(str(base / "orders"), pa.schema([("order_id", pa.int64()), ("amount", pa.float64())]))
    orders.write(pa.table({"order_id": [1, 2, 3], "amount": [1.0, 2.0, 3.0]}))
    env = {"DELTA_EXAMPLE_BASE": str(base),
           "AIRFLOW_CONN_DELTA_EXAMPLE": json.dumps({"conn_type": "delta"}),
           "PYTHONPATH": os.pathsep.join(p for p in (str(dags), os.environ.get("PYTHONPATH")) if p)}

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
