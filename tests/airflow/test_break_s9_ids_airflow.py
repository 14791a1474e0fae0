"""Break review s9 (breaker 5) of the 'dag:task' default identity and its old-spelling filters."""
from __future__ import annotations

import pytest

#: an Airflow 3 manual run without a logical date: its run key is the run id, which holds colons
MANUAL_RUN_ID = "manual__2026-11-27T10:00:00+00:00"


def test_an_old_spelling_filter_naming_a_manual_run_matches_that_runs_commit(make_table):
    """A filter in the pre-0.2.0 spelling that names one run (``dag.task@<run key>``) matches that run's
    commit as the new build writes it (``dag:task@<run key>``) also when the run key is a manual run id,
    whose colons are no task separator (the fallback was skipped for any filter holding a colon)."""
    from airflow_provider_delta.hooks.commits import CommitWatch
    table = make_table(commits=0)
    with table.transaction(operation="WRITE") as txn:
        txn.set_txn(f"sales:load@{MANUAL_RUN_ID}", 1)
    with table.transaction(operation="WRITE") as txn:
        txn.set_txn("sales:load@manual__2026-11-28T10:00:00+00:00", 2)
    watch = CommitWatch(after_version=0, app_id=f"sales.load@{MANUAL_RUN_ID}")
    watch.poll(table)
    assert [c["version"] for c in watch.commits] == [1]
    new_spelling = CommitWatch(after_version=0, app_id=f"sales:load@{MANUAL_RUN_ID}")
    new_spelling.poll(table)
    assert [c["version"] for c in new_spelling.commits] == [1]


def test_an_old_spelling_filter_does_not_turn_a_dot_of_the_run_key_into_the_task_separator():
    from airflow_provider_delta.hooks.run_identity import app_id_matches
    assert not app_id_matches("sales@x.y", "sales@x:y")
    assert app_id_matches("sales.load", "sales:load@manual__2026-11-27T10:00:00.5+00:00")
    assert not app_id_matches("sales.load", "sales.load:x@y")


@pytest.mark.airflow
def test_a_mapped_writer_in_a_task_group_of_a_dotted_dag_stages_once_across_its_retry(run_dag, tmp_path,
                                                                                   monkeypatch):
    """Real Airflow: DAG 'sales.daily', task group 'grp', mapped 'load' over two tables, each instance
    losing its worker after staging; the retries find their members (writer 'sales.daily:grp.load[i]')
    and the group publishes one row per table."""
    import json
    from pathlib import Path

    import pyarrow as pa
    import sqlalchemy as sa

    from airflow_provider_delta.log import DeltaTable, SqlCatalog
    url = f"sqlite:///{tmp_path}/catalog.db"
    catalog = SqlCatalog(url)
    schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
    tables = [DeltaTable.create(str(tmp_path / n), schema, catalog=catalog) for n in ("a", "b")]
    conn = json.dumps({"conn_type": "delta", "extra": {"catalog": {"url": url}}})
    env = {"DELTA_BREAK5_TABLES": ",".join(t.uri for t in tables), "AIRFLOW_CONN_DELTA_WAP_TEST": conn}
    report = run_dag("sales.daily", env=env, dags_folder=Path(__file__).resolve().parent / "break5_dags")
    assert report.state == "success", report.output[-5000:]
    assert "worker lost after staging" in report.output
    for t in tables:
        assert DeltaTable(t.uri, catalog=catalog).snapshot().to_pyarrow().num_rows == 1
    with catalog.store.db.engine.connect() as c:
        rows = [r._mapping for r in c.execute(sa.text("SELECT state, members FROM delta_catalog_groups"))]
    assert len(rows) == 1 and rows[0]["state"] == "ratified", rows
    assert '"sales.daily:grp.load[0]"' in rows[0]["members"] and '"sales.daily:grp.load[1]"' in rows[0]["members"]
    catalog.dispose()
