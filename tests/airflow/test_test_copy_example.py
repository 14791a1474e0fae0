"""The clone example DAG (``dags_examples/delta_test_copy.py``) under real Airflow.

``dag.test()`` clones a real orders table into a new folder, the next task appends to the
clone, and orders keeps its version and rows; a second run clones into a folder of its own.
After each run the DAG drops its own older copies, keeping the newest ``KEEP_COPIES``: copies
it made earlier (a CLONE commit by its ``clone_orders`` task) go, oldest first; everything else
under ``test_copies/`` (a clone made by someone else, a folder that is no table, a file, a link
to a copy-like folder elsewhere, a copy named outside the naming rule) stays byte for byte.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pyarrow as pa
import pytest
from airflow_test_support import example_dag_folder

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.airflow

#: the DAG's KEEP_COPIES
KEEP = 3
OURS = {"dag_id": "delta_test_copy", "task_id": "clone_orders"}


def tree(root: Path) -> dict[str, bytes]:
    """Every file below ``root`` (links not followed) and its content."""
    out = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = Path(d) / f
            out[str(p.relative_to(root))] = p.read_bytes()
    return out


def seed(base: Path, orders: DeltaTable) -> tuple[list[str], dict[str, dict[str, bytes]]]:
    """Two earlier copies of this DAG (oldest first), and things the cleanup must never touch."""
    copies = base / "test_copies"
    earlier = []
    for name in ("orders_manual__2025-12-01", "orders_manual__2025-12-02"):
        orders.clone(str(copies / name), job=OURS)
        earlier.append(name)
    orders.clone(str(copies / "orders_someone_else"))                           # a clone, but not by this DAG
    orders.clone(str(copies / "orders_other_task"), job={**OURS, "task_id": "other"})
    orders.clone(str(copies / "scratch_copy"), job=OURS)                        # ours, outside the naming rule
    (copies / "orders_not_a_table").mkdir()
    (copies / "orders_not_a_table" / "data.csv").write_text("1,2\n")
    (copies / "notes.txt").write_text("keep me")
    outside = base / "elsewhere"
    orders.clone(str(outside / "orders_linked"), job=OURS)
    os.symlink(outside / "orders_linked", copies / "orders_link")              # a link to a copy-like table
    untouchable = {n: tree(copies / n) for n in ("orders_someone_else", "orders_other_task", "scratch_copy",
                                                  "orders_not_a_table")}
    untouchable["../elsewhere"] = tree(outside)
    return earlier, untouchable


def test_the_clone_takes_the_change_and_orders_does_not(run_dag, tmp_path):
    base = tmp_path / "base"
    orders = DeltaTable.create(str(base / "orders"), pa.schema([("order_id", pa.int64()), ("amount", pa.float64())]))
    orders.write(pa.table({"order_id": [1, 2, 3], "amount": [1.0, 2.0, 3.0]}))
    earlier, untouchable = seed(base, orders)
    dags, env = example_dag_folder(tmp_path, "delta_test_copy.py", base)
    env["AIRFLOW_CONN_DELTA_EXAMPLE"] = json.dumps({"conn_type": "delta"})   # the source's connection, no owner
    copies = base / "test_copies"

    first = run_dag("delta_test_copy", env=env, dags_folder=dags)
    assert first.state == "success", first.output[-5000:]
    cloned = first.xcoms["clone_orders"]["return_value"]
    assert cloned["source_version"] == 1 and cloned["version"] == 0
    assert cloned["table_uri"].startswith(f"file://{base}/test_copies/orders_manual__")
    changed = first.xcoms["try_change"]["return_value"]
    assert changed == {"copy_version": 1, "rows_added": 3, "orders_version": 1}
    assert DeltaTable(cloned["table_uri"]).snapshot().to_pyarrow().num_rows == 6
    assert DeltaTable(str(base / "orders")).snapshot().to_pyarrow().num_rows == 3
    this_copy = os.path.basename(cloned["table_uri"])
    dropped = first.xcoms["drop_old_copies"]["return_value"]
    assert dropped["kept"] == sorted(earlier + [this_copy]) and dropped["dropped"] == []     # 3 copies: all kept
    assert sorted(dropped["left_alone"]) == sorted(["notes.txt", "orders_link", "orders_not_a_table",
                                                    "orders_other_task", "orders_someone_else", "scratch_copy"])

    second = run_dag("delta_test_copy", env=env, dags_folder=dags)
    assert second.state == "success", second.output[-5000:]
    second_copy = os.path.basename(second.xcoms["clone_orders"]["return_value"]["table_uri"])
    assert second_copy != this_copy
    dropped = second.xcoms["drop_old_copies"]["return_value"]
    assert dropped["dropped"] == [earlier[0]]                                   # the oldest of ours
    assert dropped["kept"] == sorted([earlier[1], this_copy, second_copy])
    assert sorted(os.listdir(copies)) == sorted(dropped["kept"] + dropped["left_alone"])
    assert len(dropped["kept"]) == KEEP
    for name, files in untouchable.items():                                     # byte for byte
        assert tree(copies / name) == files, name
    assert (copies / "notes.txt").read_text() == "keep me" and os.path.islink(copies / "orders_link")
    assert DeltaTable(str(base / "orders")).snapshot().to_pyarrow().num_rows == 3
