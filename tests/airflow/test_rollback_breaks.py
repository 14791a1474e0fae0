"""Breaking the rollback pattern of dags_examples/delta_load_with_rollback.py (break-restore review).

The finding: a rollback that restores "the version before my load" also undoes whatever another
DAG run committed (and published) after that load. The example now runs one DAG run at a time and
guards its rollback with ``expected_version`` (its own load's version): the restore happens only
while that load is still the table's latest commit, and otherwise fails the task, writing nothing.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, UnexpectedVersionError
from airflow_provider_delta.operators import DeltaRestoreOperator

EXAMPLE = Path(__file__).resolve().parents[2] / "dags_examples" / "delta_load_with_rollback.py"


def ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


def rollback(uri: str, own_load: int) -> DeltaRestoreOperator:
    """The example's rollback task as its templates render after a load that committed ``own_load``."""
    return DeltaRestoreOperator(task_id="rollback", table_uri=uri, version=str(own_load - 1),
                                expected_version=str(own_load))


def test_rollback_of_one_run_never_undoes_the_load_another_run_published(make_table, make_context):
    table = make_table(commits=1)                      # v0 create, v1 ids [0, 1]
    uri = table.storage.root
    a_load = DeltaTable(uri).write(pa.table({"id": [-1], "day": ["2026-01-01"]}))    # run A: load (bad), v2
    DeltaTable(uri).write(pa.table({"id": [7], "day": ["2026-01-01"]}))              # run B: load, check ok, publish
    log = sorted(p.name for p in (Path(uri) / "_delta_log").iterdir())
    with pytest.raises(UnexpectedVersionError) as e:                                 # run A: check fails, rollback
        rollback(uri, a_load).execute(make_context("rollback"))
    assert (e.value.expected, e.value.latest) == (2, 3)
    assert type(e.value).__name__ == "DeltaRollbackRefusedError"                     # fails without retrying
    assert sorted(p.name for p in (Path(uri) / "_delta_log").iterdir()) == log      # nothing written
    assert ids(uri) == [-1, 0, 1, 7]                   # run B's published load stays; A's bad rows are left
    #                                                    for a person to remove (the failed task says so)


def test_guarded_rollback_undoes_exactly_the_runs_own_load(make_table, make_context):
    table = make_table(commits=1)
    uri = table.storage.root
    DeltaTable(uri).write(pa.table({"id": [5], "day": ["2026-01-02"]}))             # another writer, before the load
    a_load = DeltaTable(uri).write(pa.table({"id": [-1], "day": ["2026-01-01"]}))   # run A: load (bad), v3
    out = rollback(uri, a_load).execute(make_context("rollback"))
    assert out["committed"] and out["restored_version"] == a_load - 1
    assert ids(uri) == [0, 1, 5]                       # only the load is undone, the earlier commit stays


def test_the_example_runs_one_dag_run_at_a_time_and_guards_its_rollback():
    """The example's DAG (read from its source: importing it needs its settings module) sets
    max_active_runs=1 and gives its rollback task an expected_version."""
    tree = ast.parse(EXAMPLE.read_text())
    calls = {getattr(n.func, "id", None): {k.arg: k.value for k in n.keywords} for n in ast.walk(tree)
             if isinstance(n, ast.Call) and getattr(n.func, "id", None) in ("DAG", "DeltaRestoreOperator")}
    assert ast.literal_eval(calls["DAG"]["max_active_runs"]) == 1
    assert "expected_version" in calls["DeltaRestoreOperator"]
