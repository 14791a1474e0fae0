"""Break review s10: what a killed Spark task leaves of its secrets in the temporary directory.

A task killed with SIGKILL never runs ``DriverSecrets.close``: its 0600 secrets file (YARN routes) stayed in
/tmp for good (one with a test's catalog password was found there, left by a killed run). The next
submission of the same user removes such folders once a day old; fresh ones (a running task's) stay.
"""
from __future__ import annotations

import json
import logging
import os
import tempfile
import time

from airflow_provider_delta.operators.spark_secrets import DriverSecrets
from airflow_provider_delta.spark.job_args import SECRETS_ENV


def _folder(root, name: str, age_hours: float) -> str:
    path = os.path.join(root, name)
    os.mkdir(path, 0o700)
    secret = os.path.join(path, "delta-secrets-x-delta_spark_job_secrets.json")
    with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write('{"output": {"catalog": {"url": "postgresql://etl:pw@db/cat"}}}')
    old = time.time() - age_hours * 3600
    os.utime(secret, (old, old))
    os.utime(path, (old, old))
    return path


def test_the_next_submission_removes_secrets_folders_a_killed_task_left(tmp_path, monkeypatch):
    from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

    from airflow_provider_delta.operators.spark_base import resolve_master
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = _folder(tmp_path, "delta-spark-secrets-killed", 25)
    running = _folder(tmp_path, "delta-spark-secrets-running", 1)
    other = _folder(tmp_path, "not-ours-secrets", 48)
    hook = SparkSubmitHook(conn_id="spark_not_defined", name="s", env_vars={SECRETS_ENV: json.dumps({"output": {}})})
    hook = resolve_master(hook, "local[1]", "spark_not_defined", logging.getLogger("test"))
    hook._is_yarn = True                  # the YARN client route: a secrets file
    with DriverSecrets(logging.getLogger("test")) as secrets:
        secrets.route(hook)
        path = hook._env_vars[f"{SECRETS_ENV}_FILE"]
        assert os.path.exists(path) and path.startswith(str(tmp_path))
        assert not os.path.exists(stale)                       # was: there for good
        assert os.path.exists(running) and os.path.exists(other)
    assert not os.path.exists(path)
    from airflow_provider_delta.operators.spark_secrets import remove_stale_secrets
    assert remove_stale_secrets(max_age_hours=0.5) == [running]
