"""Adversarial tests of the s8-catalog write-audit-publish fixes (#25): the writer key of
``stage_write`` and the Spark job's catalog secret (review branch s8-break-catalog).

Each xfail(strict) test is a finding: it fails on the reviewed code until the bug is fixed.
Real Airflow (``dag.test()`` in a subprocess), a real SQLite SqlCatalog, the real SparkSubmitHook.
"""
from __future__ import annotations

import json
import os
import textwrap

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, SqlCatalog

pytestmark = pytest.mark.airflow

SCHEMA = pa.schema([("g", pa.string()), ("n", pa.int64())])

COLLIDING_DAG = textwrap.dedent('''
    """Two different writers whose writer keys are equal: the mapped task ``load`` (map index 1)
    and the task ``load.1`` are both ``break_s8_keys.load.1``."""
    import os
    from datetime import datetime

    from airflow.sdk import DAG, task

    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators import DeltaBeginTransactionOperator, DeltaPublishTransactionOperator

    TABLES = os.environ["BREAK_S8_TABLES"].split(",")

    def rows(g):
        import pyarrow as pa
        return pa.table({"g": [g], "n": [1]}, schema=pa.schema([("g", pa.string()), ("n", pa.int64())]))

    with DAG("break_s8_keys", schedule=None, start_date=datetime(2026, 1, 1), catchup=False):
        begin = DeltaBeginTransactionOperator(task_id="begin", delta_conn_id="delta_s8")

        @task
        def load(uri, transaction_id):
            return DeltaTableHook("delta_s8").stage_write(transaction_id, uri, rows("mapped"))

        @task(task_id="load.1")
        def second_writer(transaction_id):
            # a second writer of TABLES[1] in the group: must be refused, not taken for a retry
            return DeltaTableHook("delta_s8").stage_write(transaction_id, TABLES[1], rows("second"))

        publish = DeltaPublishTransactionOperator(task_id="publish", delta_conn_id="delta_s8",
                                                  transaction_id="{{ ti.xcom_pull(task_ids='begin') }}",
                                                  trigger_rule="all_done")
        mapped = load.partial(transaction_id=begin.output).expand(uri=TABLES)
        other = second_writer(begin.output)
        mapped >> other >> publish
''')


def test_a_second_writer_whose_key_collides_is_refused_not_dropped(run_dag, tmp_path):
    url = f"sqlite:///{tmp_path}/catalog.db"
    catalog = SqlCatalog(url, publish_grace_ms=0)
    uris = [DeltaTable.create(str(tmp_path / n), SCHEMA, catalog=catalog).uri for n in ("a", "b")]
    dags = tmp_path / "dags"
    dags.mkdir()
    (dags / "break_s8_keys.py").write_text(COLLIDING_DAG)
    env = {"BREAK_S8_TABLES": ",".join(uris),
           "AIRFLOW_CONN_DELTA_S8": json.dumps({"conn_type": "delta", "extra": {"catalog": {"url": url}}})}
    report = run_dag("break_s8_keys", env=env, dags_folder=dags)
    written = sorted(DeltaTable(uris[1], catalog=catalog).snapshot().to_pyarrow().column("g").to_pylist())
    catalog.dispose()
    # the correct outcomes: load.1 is refused (its task fails), or its rows are in the table
    assert report.tasks["load.1"] == "failed" or "second" in written, (report.tasks, written)


@pytest.mark.parametrize("master", ["yarn", "k8s://https://kube.example:6443"])
def test_catalog_password_is_not_in_the_logged_spark_submit_command(tmp_path, monkeypatch, master):
    """The catalog URL (with its password) travels in DELTA_SPARK_JOB_SECRETS; on YARN and Kubernetes
    masters SparkSubmitHook put env_vars on the spark-submit command line (--conf
    spark.yarn.appMasterEnv.* / spark.kubernetes.driverEnv.*), where its log masking stopped at the first
    space of the JSON (was a strict xfail; fixed: operators/spark_secrets.py routes the secrets per master,
    here a 0600 file for YARN client mode and the spark-submit process's environment for Kubernetes
    client mode; every master and deploy mode: tests/spark/test_spark_driver_secrets.py)."""
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    from airflow_provider_delta.operators.spark_base import job_secrets
    from airflow_provider_delta.spark.job_args import SECRETS_ENV

    password = "S3cretCatalogPw"
    monkeypatch.setenv("AIRFLOW_CONN_DELTA_S8_SPARK", json.dumps(
        {"conn_type": "delta", "extra": {"catalog": {"url": f"postgresql://etl:{password}@db.example:5432/cat"}}}))
    uri = str(tmp_path / "out")
    op = DeltaSparkSubmitOperator(task_id="stage_out", output_table_uri=uri, transform="identity",
                                  delta_conn_id="delta_s8_spark", master=master, transaction_id="tx-1")
    # what DeltaSparkSubmitOperator._submit hands the hook: the output side's secrets in the environment
    op.env_vars = {SECRETS_ENV: json.dumps({"output": job_secrets(op.hook, uri)})}
    assert password in op.env_vars[SECRETS_ENV]          # the catalog does travel to the driver
    hook = op._get_hook()
    logged = hook._mask_cmd(hook._build_spark_submit_command(op.application))
    assert password not in logged, logged
    assert password not in " ".join(hook._build_spark_submit_command(op.application))   # nor in ps
    assert os.environ.get(SECRETS_ENV) is None
    op._close_driver_secrets()


def test_a_transaction_id_that_renders_to_nothing_is_refused_before_submitting(tmp_path, monkeypatch,
                                                                                make_context):
    from airflow_provider_delta.hooks.arguments import DeltaArgumentError
    from airflow_provider_delta.log import InvalidArgumentError
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator

    url = f"sqlite:///{tmp_path}/catalog.db"
    monkeypatch.setenv("AIRFLOW_CONN_DELTA_S8_SPARK", json.dumps(
        {"conn_type": "delta", "extra": {"catalog": {"url": url}}}))
    catalog = SqlCatalog(url)
    uri = DeltaTable.create(str(tmp_path / "out"), SCHEMA, catalog=catalog).uri
    op = DeltaSparkSubmitOperator(task_id="stage_out", output_table_uri=uri, transform="identity",
                                  delta_conn_id="delta_s8_spark", transaction_id="None")   # as rendered
    """A task built to stage whose transaction_id renders 'None' (a missing XCom) is refused with
    DeltaArgumentError (no retry) before anything is submitted, instead of turning into a plain
    commit (was a strict xfail; fixed: parse_transaction_id(required=...) in operators/spark.py)."""
    with pytest.raises((InvalidArgumentError, DeltaArgumentError)):
        spec, _ = op.build_spec(make_context(task_id="stage_out"))
        assert spec.transaction_id is not None, "the task would commit instead of staging"
    with pytest.raises(DeltaArgumentError, match="Nothing was changed"):
        op.execute(make_context(task_id="stage_out"))
    assert DeltaTable(uri, catalog=catalog).latest_version() == 0
    catalog.dispose()


def test_a_losing_second_writer_leaves_no_data_files(tmp_path):
    """Two DIFFERENT writers of one table race in a group (both past the staged_version check): the
    loser gets GroupCommitError and its staged commit and its new data files are deleted (they were
    left for a vacuum past the retention before; fixed in group.py)."""
    from airflow_provider_delta.log import GroupCommitError

    catalog = SqlCatalog(f"sqlite:///{tmp_path}/catalog.db", publish_grace_ms=0)
    a = DeltaTable.create(str(tmp_path / "a"), SCHEMA, catalog=catalog).uri
    tx_id = catalog.begin().record().id
    first, second = catalog.group(tx_id), catalog.group(tx_id)
    first.write(a, pa.table({"g": ["one"], "n": [1]}, schema=SCHEMA), writer="dag.one")
    second.write(a, pa.table({"g": ["two"], "n": [1]}, schema=SCHEMA), writer="dag.two")
    first.stage()
    with pytest.raises(GroupCommitError):
        second.stage()
    root = str(tmp_path / "a")
    assert len(os.listdir(os.path.join(root, "_delta_log", "_staged_commits"))) == 1
    parquet = sum(n.endswith(".parquet") for n in os.listdir(root))
    catalog.dispose()
    assert parquet == 1, f"{parquet} data files for one staged write"
