"""Final review (session 10) of the task-id upgrade paths under real Airflow: findings as strict xfails.

dag.test() of a DAG ``sales`` whose task group ``daily`` holds ``DeltaSparkSubmitOperator`` tasks with the
default ``app_id``: ``load`` (one interval) and ``apply`` (incremental, change feed). Their ids are
``sales:daily.load@<interval>`` / ``sales:daily.apply``; before 0.2.0 they would have been
``sales.daily.load@<interval>`` / ``sales.daily.apply``, the same as those of DAG ``sales.daily`` task
``load`` / ``apply``. Here only that other DAG ran before the upgrade, into the same tables; its commits
name it (``commitInfo.job``). The Spark job runs in the test's Spark session (``in_session``).
"""
from __future__ import annotations

import textwrap

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, process_changes
from task_context import load_dag

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64())])

DAG_FILE = textwrap.dedent('''\
    """DAG ``sales`` of tests/spark/test_final_s10_ids_spark.py (written by the test)."""
    import os
    from datetime import datetime

    from airflow.sdk import DAG, TaskGroup, get_current_context, task

    from airflow_provider_delta.hooks.run_identity import run_app_id, run_app_version
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator

    E = os.environ.get

    with DAG("sales", schedule="@daily", start_date=datetime(2026, 1, 1), catchup=False) as dag:

        @task
        def other_dag_before_the_upgrade() -> str:
            """What DAG 'sales.daily' task 'load' of a build before 0.2.0 committed for this interval."""
            import pyarrow as pa
            from airflow_provider_delta.log import DeltaTable
            context = get_current_context()
            app_id = run_app_id("sales.daily.load", context)
            DeltaTable(E("FINAL_IDS_ORDERS")).write(
                pa.table({"id": [900]}), app_id=app_id, app_version=run_app_version(context),
                job={"dag_id": "sales.daily", "task_id": "load", "run_id": context["run_id"], "try_number": 1})
            return app_id

        with TaskGroup("daily"):
            load = DeltaSparkSubmitOperator(task_id="load", input_table_uri=E("FINAL_IDS_EU"), input_version=1,
                                            output_table_uri=E("FINAL_IDS_ORDERS"), transform="identity",
                                            conn_id="spark_not_defined")
            apply = DeltaSparkSubmitOperator(task_id="apply", input_table_uri=E("FINAL_IDS_EU"),
                                             input_changes=True, output_table_uri=E("FINAL_IDS_CHANGES"),
                                             transform="identity", conn_id="spark_not_defined")
        other_dag_before_the_upgrade() >> load
''')


def test_a_new_task_group_task_does_not_take_another_dags_pre_upgrade_commits(airflow_db, in_session, tmp_path,
                                                                              monkeypatch):
    eu = DeltaTable.create(str(tmp_path / "eu"), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    eu.write(pa.table({"id": [1, 2]}))                                                 # v1
    eu.write(pa.table({"id": [3]}))                                                    # v2
    orders = DeltaTable.create(str(tmp_path / "orders"), SCHEMA)
    # DAG sales.daily task apply (0.1.0) consumed another source (us) into the same changes table up to version 2
    us = DeltaTable.create(str(tmp_path / "us"), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    us.write(pa.table({"id": [700]}))
    us.write(pa.table({"id": [701]}))
    changes = DeltaTable(str(tmp_path / "changes"))
    process_changes(us, changes, "sales.daily.apply", end_version=2,
                    job={"dag_id": "sales.daily", "task_id": "apply", "run_id": "scheduled__2025-12-31",
                         "try_number": 1})
    for name, table in (("EU", eu), ("ORDERS", orders), ("CHANGES", changes)):
        monkeypatch.setenv(f"FINAL_IDS_{name}", table.uri)
    path = tmp_path / "final_s10_ids_sales_dag.py"
    path.write_text(DAG_FILE)
    dag = load_dag(path)

    import pendulum
    run = dag.test(logical_date=pendulum.datetime(2026, 1, 1, tz="UTC"))
    states = {ti.task_id: str(ti.state) for ti in run.get_task_instances()}
    assert states == {"other_dag_before_the_upgrade": "success", "daily.load": "success", "daily.apply": "success"}
    ran = {spec.app_id.partition("@")[0]: spec for spec in in_session}
    assert set(ran) == {"sales:daily.load", "sales:daily.apply"}                      # both submitted
    assert ran["sales:daily.apply"].input_starting_version == 0
    assert sorted(orders.snapshot().to_pyarrow()["id"].to_pylist()) == [1, 2, 900]
    assert sorted(changes.snapshot().to_pyarrow()["id"].to_pylist()) == [1, 2, 3, 700, 701]
