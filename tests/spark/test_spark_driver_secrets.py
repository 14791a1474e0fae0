"""The secrets of a Spark job reach its driver and never a spark-submit command line, for every master.

``operators/spark_secrets.py`` routes ``DELTA_SPARK_JOB_SECRETS`` (and ``DELTA_JOB_HADOOP_CONF``)
per master and deploy mode. Here the real operators and the real ``SparkSubmitHook`` submit to
the stand-in ``spark-submit`` of tests/spark_submit_stand_in.py (YARN and Kubernetes are not on this
machine), which resolves the deploy mode as Spark does, records its arguments and environment and plays the driver: in client modes it reads the secrets as the
driver would (same environment: the driver is spark-submit's child); in YARN cluster mode it
first does what YARN does (copies the ``--files`` into a container working directory, sets the
``spark.yarn.appMasterEnv.*`` variables). The last test runs a real local spark-submit whose
driver reads its secrets from the file the YARN client route writes.
"""
from __future__ import annotations

import json
import logging
import os
import stat
import sys
import tempfile
import textwrap
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import CommitFailedError, InvalidTableStateError
from airflow_provider_delta.operators.spark_secrets import DriverSecrets, DriverSecretsError
from airflow_provider_delta.spark.job_args import SECRETS_ENV
from spark_submit_stand_in import ROOT, spark_submit_stand_in
from task_context import task_context

PASSWORD = "pw with S3cretValue"          # a space: the hook's log masking used to stop there
OPTIONS = {"auto_mkdir": True, "client_secret": PASSWORD}

@pytest.fixture
def stub(tmp_path):
    return spark_submit_stand_in(tmp_path)


@pytest.fixture
def lake(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_SECRETS", json.dumps(
        {"conn_type": "delta", "extra": {"storage_options": OPTIONS}}))
    return "lake_secrets"


def _spark_conn(monkeypatch, deploy_mode: str) -> str:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_SECRETS", json.dumps(
        {"conn_type": "spark", "host": "yarn", "extra": {"deploy-mode": deploy_mode}}))
    return "spark_secrets"


def _submit_operator(tmp_path, stub_path: str, lake: str, spark_conn: str, master: str, **kwargs: Any):
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    return DeltaSparkSubmitOperator(task_id="spark", output_table_uri=str(tmp_path / "out"), transform="identity",
                                    delta_conn_id=lake, conn_id=spark_conn, master=master, spark_binary=stub_path,
                                    durable=False, **kwargs)


@pytest.fixture(autouse=True)
def own_temp_directory(tmp_path_factory, monkeypatch):
    """Each test's secrets folders go to a temporary directory of its own (this process's and its
    children's): the leftover checks below then see this test's folders only, not those of a Spark job
    another pytest worker runs at the same time."""
    directory = str(tmp_path_factory.mktemp("tmpdir"))
    monkeypatch.setattr(tempfile, "tempdir", directory)
    monkeypatch.setenv("TMPDIR", directory)


def _leftover_secret_files() -> list[str]:
    return [n for n in os.listdir(tempfile.gettempdir()) if n.startswith("delta-spark-secrets-")]


CASES = [  # master, deploy mode, how the secrets travel
    ("local[2]", "client", "environment"),
    ("spark://master.example:7077", "client", "environment"),
    ("k8s://https://kube.example:6443", "client", "environment"),
    ("yarn", "client", "file"),
    ("yarn", "cluster", "shipped file"),
]


@pytest.mark.parametrize("master,deploy_mode,route", CASES, ids=[f"{m.split(':')[0]}-{d}" for m, d, _ in CASES])
def test_the_driver_gets_the_secrets_and_no_command_line_holds_them(tmp_path, monkeypatch, capsys, stub, lake,
                                                                    master, deploy_mode, route):
    stub_path, record = stub
    before = _leftover_secret_files()
    op = _submit_operator(tmp_path, stub_path, lake, _spark_conn(monkeypatch, deploy_mode), master)
    with pytest.raises(CommitFailedError, match="holds no commit"):
        op.execute(task_context(task_id="spark"))      # the stand-in commits nothing
    rec = json.loads(record.read_text())
    command = " ".join(rec["argv"])
    logged = capsys.readouterr().out                    # the task log (Airflow's structlog prints it)
    assert "Spark-Submit cmd" in logged
    assert PASSWORD not in command and "S3cretValue" not in logged
    assert rec["driver_secrets"] == {"output": {"storage_options": OPTIONS}}     # what the driver reads
    file_var = f"{SECRETS_ENV}_FILE"
    if route == "environment":
        assert json.loads(rec["env"][SECRETS_ENV]) == {"output": {"storage_options": OPTIONS}}
        assert SECRETS_ENV not in command and not rec["files"]
    elif route == "file":                 # the path in the environment (and appMasterEnv): no secret
        path, mode, dir_mode = rec["named_file"]
        assert (mode, dir_mode) == (0o600, 0o700)
        assert f"spark.yarn.appMasterEnv.{file_var}={path}" in rec["argv"]
        assert not os.path.exists(path), "the secrets file outlived the job"
    else:                                 # shipped with --files, named by its base name
        (path, mode), = rec["files"].items()
        assert mode == 0o600 and f"spark.yarn.appMasterEnv.{file_var}={os.path.basename(path)}" in rec["argv"]
        assert not os.path.exists(path), "the secrets file outlived the job"
    assert _leftover_secret_files() == before
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("master", ["spark://master.example:7077", "k8s://https://kube.example:6443"])
def test_a_cluster_driver_the_secrets_cannot_reach_is_refused_before_submitting(tmp_path, monkeypatch, stub, lake,
                                                                              master):
    stub_path, record = stub
    op = _submit_operator(tmp_path, stub_path, lake, _spark_conn(monkeypatch, "cluster"), master)
    before = _leftover_secret_files()       # another test's killed job may have left one (not this one's)
    with pytest.raises(DriverSecretsError, match="client mode.*Nothing was submitted") as raised:
        op.execute(task_context(task_id="spark"))
    assert PASSWORD not in str(raised.value)
    assert not record.exists(), "spark-submit ran"
    assert not (tmp_path / "out").exists() and _leftover_secret_files() == before


def test_kubernetes_cluster_mode_takes_the_secret_the_user_names(tmp_path, monkeypatch, capsys, stub, lake):
    stub_path, record = stub
    ref = {f"spark.kubernetes.driver.secretKeyRef.{SECRETS_ENV}": "delta-job:secrets"}
    op = _submit_operator(tmp_path, stub_path, lake, _spark_conn(monkeypatch, "cluster"),
                          "k8s://https://kube.example:6443", conf=ref)
    with pytest.raises(CommitFailedError):
        op.execute(task_context(task_id="spark"))
    rec = json.loads(record.read_text())
    logged = capsys.readouterr().out
    assert PASSWORD not in " ".join(rec["argv"]) and "S3cretValue" not in logged
    assert f"spark.kubernetes.driver.secretKeyRef.{SECRETS_ENV}=delta-job:secrets" in rec["argv"]
    assert rec["driver_secrets"] == {}        # the pod gets it from Kubernetes, not from spark-submit
    assert "Kubernetes secret delta-job:secrets" in logged


def test_the_checkpoint_job_ships_its_secrets_to_a_yarn_cluster_driver(tmp_path, monkeypatch, stub, lake):
    """The operators that build their own SparkSubmitHook (checkpoint, OPTIMIZE) route them too."""
    from airflow_provider_delta.operators.checkpoint import DeltaCheckpointOperator
    stub_path, record = stub
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("n", pa.int64())]))
    table.write(pa.table({"n": [1]}))
    op = DeltaCheckpointOperator(task_id="c", table_uri=table.uri, engine="spark", delta_conn_id=lake,
                                 spark_conn_id=_spark_conn(monkeypatch, "cluster"), master="yarn",
                                 spark_submit_kwargs={"spark_binary": stub_path})
    with pytest.raises(InvalidTableStateError, match="no complete checkpoint"):
        op.execute(task_context(task_id="c"))
    rec = json.loads(record.read_text())
    assert PASSWORD not in " ".join(rec["argv"])
    assert rec["driver_secrets"] == {"table": {"storage_options": OPTIONS}}
    (path, mode), = rec["files"].items()
    assert mode == 0o600 and not os.path.exists(path)


def test_an_unreadable_secrets_file_is_a_typed_error_naming_it(tmp_path):
    from airflow_provider_delta.log import InvalidArgumentError
    from airflow_provider_delta.spark.job_args import read_secrets
    missing = str(tmp_path / "gone.json")
    with pytest.raises(InvalidArgumentError, match="DELTA_SPARK_JOB_SECRETS_FILE names .*gone.json"):
        read_secrets({f"{SECRETS_ENV}_FILE": missing})
    (tmp_path / "s.json").write_text('{"output": {}}')
    assert read_secrets({f"{SECRETS_ENV}_FILE": str(tmp_path / "s.json")}) == {"output": {}}
    assert read_secrets({SECRETS_ENV: '{"input": {}}', f"{SECRETS_ENV}_FILE": missing}) == {"input": {}}


DRIVER = textwrap.dedent('''\
    import json, sys
    from pyspark.sql import SparkSession
    from airflow_provider_delta.spark.job_args import read_secrets
    secrets = read_secrets()                       # before the session, as the entry points do
    spark = SparkSession.builder.appName("secrets").getOrCreate()
    with open(sys.argv[1], "w") as f:
        json.dump({"secrets": secrets, "rows": spark.range(3).count()}, f)
    spark.stop()
''')


@pytest.mark.slow
def test_a_real_driver_reads_its_secrets_from_the_file_of_the_yarn_client_route(java, tmp_path, monkeypatch):
    """A real local spark-submit, its hook told it talks to YARN in client mode (the hook then writes the
    env_vars on the command line as appMasterEnv confs, which local mode ignores, and on the process):
    the driver finds DELTA_SPARK_JOB_SECRETS_FILE and reads the 0600 file; the file is gone after."""
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_provider_delta.operators.spark_base import resolve_master
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")]))
    app, out = tmp_path / "driver.py", tmp_path / "out.json"
    app.write_text(DRIVER)
    secrets = {"output": {"storage_options": OPTIONS, "catalog": {"url": f"postgresql://etl:{PASSWORD}@db/cat"}}}
    hook = SparkSubmitHook(conn_id="spark_not_defined", application_args=[str(out)], name="secrets",
                           env_vars={SECRETS_ENV: json.dumps(secrets)})
    hook = resolve_master(hook, "local[1]", "spark_not_defined", logging.getLogger("test"))
    hook._is_yarn = True                  # the YARN client route, run by a local spark-submit
    with DriverSecrets(logging.getLogger("test")) as driver_secrets:
        driver_secrets.route(hook)
        path = hook._env_vars[f"{SECRETS_ENV}_FILE"]
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        command = hook._build_spark_submit_command(str(app))
        assert PASSWORD not in " ".join(command) and SECRETS_ENV not in hook._env_vars
        hook.submit(str(app))
    assert json.loads(out.read_text()) == {"secrets": secrets, "rows": 3}
    assert not os.path.exists(path)
