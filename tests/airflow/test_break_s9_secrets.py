"""Adversarial tests of the s9 driver-secrets routing (operators/spark_secrets.py, review branch s9-break3).

Each test was a strict xfail (a finding) on the reviewed code; all are fixed in operators/spark_secrets.py
(the deploy mode resolved as spark-submit does and pinned with --deploy-mode; standalone cluster judged
by Spark's reading of the master URL; database URLs with a password registered with the secrets masker).
The real operators and the real ``SparkSubmitHook`` submit to the stand-in ``spark-submit`` of
tests/spark_submit_stand_in.py, which resolves the deploy mode the way Spark's ``SparkSubmitArguments`` does (``--deploy-mode``, else the property
``spark.submit.deployMode`` from ``--conf`` or ``$SPARK_CONF_DIR/spark-defaults.conf``, else the
``DEPLOY_MODE`` environment variable; checked against the real pyspark spark-submit, which answers
``--master local --conf spark.submit.deployMode=cluster`` with "Cluster deploy mode is not compatible
with master local"), and then plays the driver where that mode puts it: a YARN container (sees only
its ``--files`` and ``spark.yarn.appMasterEnv.*``; the worker's /tmp is another machine's), a
Kubernetes pod (``spark.kubernetes.driverEnv.*``), a standalone worker (the legacy standalone client
sends spark-submit's whole environment with the driver description), or this worker (client mode).
"""
from __future__ import annotations

import json
from typing import Any

import pytest

from airflow_provider_delta.spark.job_args import SECRETS_ENV
from spark_submit_stand_in import spark_submit_stand_in

pytestmark = pytest.mark.airflow

PASSWORD = "S3cretS9Value"
OPTIONS = {"auto_mkdir": True, "client_secret": PASSWORD}
EXPECTED = {"output": {"storage_options": OPTIONS}}

@pytest.fixture
def stub(tmp_path):
    return spark_submit_stand_in(tmp_path)


@pytest.fixture
def lake(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LAKE_S9", json.dumps(
        {"conn_type": "delta", "extra": {"storage_options": OPTIONS}}))
    return "lake_s9"


def _spark_conn(monkeypatch, host: str, extra: dict[str, Any] | None = None) -> str:
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_S9", json.dumps({"conn_type": "spark", "host": host,
                                                            "extra": extra or {}}))
    return "spark_s9"


def _operator(tmp_path, stub_path: str, lake: str, spark_conn: str, **kwargs: Any):
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    return DeltaSparkSubmitOperator(task_id="spark", output_table_uri=str(tmp_path / "out"), transform="identity",
                                    delta_conn_id=lake, conn_id=spark_conn, spark_binary=stub_path,
                                    durable=False, **kwargs)


def _run(op, make_context) -> None:
    from airflow_provider_delta.log.base.errors import CommitFailedError
    with pytest.raises(CommitFailedError):            # the stand-in commits nothing
        op.execute(make_context(task_id="spark"))


# --------------------------------------------------------------------------------------------------
# The deploy mode the route decides on is the hook's (--deploy-mode from the operator or the
# connection's "deploy-mode" extra). spark-submit also takes it from spark.submit.deployMode (conf,
# properties file, spark-defaults.conf) and DEPLOY_MODE: the route then picks the client route for a
# driver that runs in the cluster.

# fixed (was a strict xfail): S9-1: cluster mode set by conf spark.submit.deployMode is not seen by
# DriverSecrets.route (it reads only hook._connection['deploy_mode']): a YARN cluster driver is handed an
# absolute path on the Airflow worker and no --files; it cannot read its secrets
def test_yarn_cluster_mode_set_in_conf_still_gets_the_secrets_to_the_driver(tmp_path, monkeypatch, stub, lake,
                                                                           make_context):
    stub_path, record = stub
    op = _operator(tmp_path, stub_path, lake, _spark_conn(monkeypatch, "yarn"),
                   conf={"spark.submit.deployMode": "cluster"})
    _run(op, make_context)
    rec = json.loads(record.read_text())
    assert PASSWORD not in " ".join(rec["argv"])
    assert rec["mode"] == "cluster"
    assert rec.get("driver_secrets") == EXPECTED, rec.get("driver_error")


# fixed (was a strict xfail): S9-2: a cluster-wide default spark.submit.deployMode=cluster in
# $SPARK_CONF_DIR/spark-defaults.conf (a YARN gateway's usual setting) makes spark-submit run the driver in YARN
# while the route, seeing no deploy mode, wrote a worker-local file: the driver cannot read its secrets (the
# route should pin --deploy-mode or ship the file)
def test_a_cluster_default_in_spark_defaults_conf_still_gets_the_secrets_to_the_driver(tmp_path, monkeypatch, stub,
                                                                                       lake, make_context):
    stub_path, record = stub
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    (conf_dir / "spark-defaults.conf").write_text("spark.submit.deployMode cluster\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(conf_dir))
    op = _operator(tmp_path, stub_path, lake, _spark_conn(monkeypatch, "yarn"))
    _run(op, make_context)
    rec = json.loads(record.read_text())
    assert PASSWORD not in " ".join(rec["argv"])
    assert rec.get("driver_secrets") == EXPECTED, (rec["mode"], rec.get("driver_error"))


# fixed (was a strict xfail): S9-3: standalone cluster mode set by conf spark.submit.deployMode or by
# DEPLOY_MODE bypasses the DriverSecretsError refusal: the secrets go into spark-submit's environment, which the
# legacy standalone client sends to the master with the driver description (and the hook's own 'not supported in
# standalone-cluster mode' check is bypassed too)
@pytest.mark.parametrize("how", ["conf", "env"])
def test_standalone_cluster_mode_set_outside_deploy_mode_is_refused(tmp_path, monkeypatch, stub, lake,
                                                                    make_context, how):
    from airflow_provider_delta.operators.spark_secrets import DriverSecretsError
    stub_path, record = stub
    kwargs = ({"conf": {"spark.submit.deployMode": "cluster"}} if how == "conf"
              else {"env_vars": {"DEPLOY_MODE": "cluster"}})
    op = _operator(tmp_path, stub_path, lake, _spark_conn(monkeypatch, "spark://master.example:7077"), **kwargs)
    try:
        with pytest.raises(DriverSecretsError):
            op.execute(make_context(task_id="spark"))
    finally:
        sent = json.loads(record.read_text()).get("sent_to_master") if record.exists() else None
    assert not record.exists(), f"spark-submit ran; sent to the master: {sent}"


# fixed (was a strict xfail): S9-4: Kubernetes cluster mode set by conf spark.submit.deployMode bypasses the
# DriverSecretsError refusal (no secretKeyRef named): the route takes the k8s client route and the pod's driver
# gets no secrets, silently
def test_kubernetes_cluster_mode_set_in_conf_is_refused(tmp_path, monkeypatch, stub, lake, make_context):
    from airflow_provider_delta.operators.spark_secrets import DriverSecretsError
    stub_path, record = stub
    op = _operator(tmp_path, stub_path, lake, _spark_conn(monkeypatch, "yarn"), master="k8s://https://kube.example:6443",
                   conf={"spark.submit.deployMode": "cluster"})
    with pytest.raises(DriverSecretsError):
        op.execute(make_context(task_id="spark"))
    assert not record.exists(), "spark-submit ran"


# --------------------------------------------------------------------------------------------------
# The route trusts the hook's _is_yarn / _is_kubernetes, which are substring tests of the master URL.

# fixed (was a strict xfail): S9-5: a standalone master whose host name contains 'yarn' (spark://yarn-
# master.example:7077) is taken for YARN by the hook's substring test: standalone cluster mode is not refused;
# the secrets file is 'shipped' with --files, which standalone does not put in the driver's working directory
def test_a_standalone_master_named_yarn_in_cluster_mode_is_refused(tmp_path, monkeypatch, stub, lake):
    """(The hook's submission is not run: in standalone cluster mode it would track a driver id the
    stand-in does not print; the operator's own _get_hook, which routes the secrets, is.)"""
    from airflow_provider_delta.operators.spark_base import job_secrets
    from airflow_provider_delta.operators.spark_secrets import DriverSecretsError
    stub_path, record = stub
    op = _operator(tmp_path, stub_path, lake,
                   _spark_conn(monkeypatch, "spark://yarn-master.example:7077", {"deploy-mode": "cluster"}))
    op.env_vars = {SECRETS_ENV: json.dumps({"output": job_secrets(op.hook, str(tmp_path / "out"))})}
    try:
        with pytest.raises(DriverSecretsError):
            op._get_hook()
    finally:
        op._close_driver_secrets()


# --------------------------------------------------------------------------------------------------
# Airflow's masking: the connection's extra is masked by key (client_secret is), but a catalog URL
# holding a password is a value under a key ("url") Airflow does not call sensitive. The operators
# know it is a secret (they route it as one) but never register it: any echo of it by the driver
# (spark-submit's output is the task log, line by line) is logged in clear.

# fixed (was a strict xfail): S9-6: the catalog URL's password (DELTA_SPARK_JOB_SECRETS catalog.url) is never
# registered with Airflow's secrets masker (mask_secret): the driver's output, which the hook logs line by line,
# shows it in clear
def test_the_catalog_password_is_masked_in_the_task_log(tmp_path, monkeypatch):
    from airflow.sdk.log import redact

    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    from airflow_provider_delta.operators.spark_base import job_secrets
    password = "CatalogS9Pw"
    url = f"postgresql://etl:{password}@db.example:5432/cat"
    monkeypatch.setenv("AIRFLOW_CONN_DELTA_S9_CAT", json.dumps({"conn_type": "delta",
                                                                "extra": {"catalog": {"url": url}}}))
    uri = str(tmp_path / "out")
    op = DeltaSparkSubmitOperator(task_id="spark", output_table_uri=uri, transform="identity",
                                  delta_conn_id="delta_s9_cat", master="yarn", transaction_id="tx-1")
    # what DeltaSparkSubmitOperator._submit does: the output side's secrets, routed by _get_hook
    op.env_vars = {SECRETS_ENV: json.dumps({"output": job_secrets(op.hook, uri)})}
    assert password in op.env_vars[SECRETS_ENV]          # it is one of the job's secrets
    op._get_hook()
    op._close_driver_secrets()
    echoed = f"sqlalchemy.exc.OperationalError: could not connect to {url}"
    assert password not in redact(echoed), redact(echoed)
