"""DeltaSparkSubmitOperator without a Spark job: master resolution, arguments, exactly-once paths.

The full run through a real spark-submit is the example pipeline test; here the
operator's own decisions are checked, with real tables and, where a process must
run, a stand-in spark-submit executable.
"""
from __future__ import annotations

import json
import os
import stat
import sys
from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import CommitFailedError, InvalidArgumentError
from airflow_provider_delta.spark.job_args import SECRETS_ENV, JobSpec
from task_context import LOGICAL, RUN_KEY, task_context



def _context(**ti_fields: Any) -> dict[str, Any]:
    return task_context(**{"task_id": "spark", **ti_fields})


def _operator(**kwargs: Any):
    from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
    kwargs.setdefault("task_id", "spark")
    kwargs.setdefault("transform", "identity")
    return DeltaSparkSubmitOperator(**kwargs)


def _command(op) -> tuple[list[str], dict[str, Any]]:
    op.conf = op.conf or {}
    hook = op._get_hook()
    return hook._build_spark_submit_command(op.application), dict(hook._env_vars or {})


# ---------------------------------------------------------------- master and binary
def test_without_spark_connection_runs_local_with_pyspark(monkeypatch, tmp_path):
    monkeypatch.delenv("PYSPARK_PYTHON", raising=False)
    monkeypatch.delenv("PYSPARK_DRIVER_PYTHON", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))          # no spark-submit on PATH
    from airflow_provider_delta.operators.spark import DEFAULT_APPLICATION, bundled_spark_submit
    op = _operator(output_table_uri=str(tmp_path / "out"), conn_id="spark_not_defined")
    cmd, env = _command(op)
    assert cmd[cmd.index("--master") + 1] == "local[*]"
    assert cmd[0] == bundled_spark_submit() and os.access(cmd[0], os.X_OK)
    assert cmd[-1] == DEFAULT_APPLICATION and DEFAULT_APPLICATION.endswith("spark/job.py")
    assert env["PYSPARK_PYTHON"] == sys.executable == env["PYSPARK_DRIVER_PYTHON"]
    assert env["SPARK_HOME"] == os.path.dirname(os.path.dirname(cmd[0]))


def test_spark_connection_master_is_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", "spark://master-host:7077")
    op = _operator(output_table_uri=str(tmp_path / "out"), conn_id="spark_cluster")
    cmd, env = _command(op)
    assert cmd[cmd.index("--master") + 1] == "spark://master-host:7077"
    assert "PYSPARK_PYTHON" not in env            # a cluster brings its own Python


def test_explicit_master_wins(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_SPARK_CLUSTER", "spark://master-host:7077")
    op = _operator(output_table_uri=str(tmp_path / "out"), conn_id="spark_cluster", master="local[2]")
    cmd, _ = _command(op)
    assert cmd[cmd.index("--master") + 1] == "local[2]"


# ---------------------------------------------------------------------- arguments
def test_spec_defaults_and_secrets(monkeypatch, tmp_path):
    base = tmp_path / "lake"
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({
        "conn_type": "delta", "host": str(base), "extra": {"storage_options": {"auto_mkdir": True}}}))
    op = _operator(output_table_uri="out", input_table_uri="in", input_version="3", delta_conn_id="lake",
                   transform="pkg.mod:fn", transform_params={"x": 1}, partition_by=["d"])
    spec, secrets = op.build_spec(_context())
    assert spec.output_table_uri == f"{base}/out" and spec.input_table_uri == f"{base}/in"
    assert spec.input_version == 3 and spec.partition_by == ["d"] and spec.params == {"x": 1}
    assert spec.app_id == "dag:spark@" + RUN_KEY and spec.app_version == int(LOGICAL.timestamp())
    assert spec.job == {"dag_id": "dag", "task_id": "spark", "run_id": "scheduled__2026-01-02", "try_number": 1}
    assert secrets == {"output": {"storage_options": {"auto_mkdir": True}},
                       "input": {"storage_options": {"auto_mkdir": True}}}
    assert JobSpec.parse(spec.to_json()) == spec


def test_mapped_task_gets_its_own_app_id(tmp_path):
    op = _operator(output_table_uri=str(tmp_path / "out"), app_version="12")
    spec, secrets = op.build_spec(_context(map_index=3))
    assert (spec.app_id, spec.app_version) == ("dag:spark[3]@" + RUN_KEY, 12) and secrets == {}


@pytest.mark.parametrize("kwargs, message", [
    ({"app_version": "-1"}, "app_version"),
    ({"app_version": "soon"}, "app_version"),
    ({"mode": "merge"}, "mode must be"),
])
def test_bad_arguments(tmp_path, kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        _operator(output_table_uri=str(tmp_path / "out"), **kwargs).build_spec(_context())


def test_input_given_twice_is_refused(tmp_path):
    with pytest.raises(InvalidArgumentError, match="not both"):
        _operator(output_table_uri=str(tmp_path / "o"), input_table_uri="/a", input_manifest_uri="/m")


# -------------------------------------------------------------------- execution
def _table_with_txn(path, app_id: str, version: int) -> DeltaTable:
    table = DeltaTable.create(str(path), pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": [1]}))
    with table.transaction() as txn:
        txn.set_txn(app_id, version)
    table.write(pa.table({"id": [2]}))
    return table


def test_already_committed_run_is_not_submitted(tmp_path):
    from airflow_provider_delta.assets import to_asset
    table = _table_with_txn(tmp_path / "out", "dag:spark@" + RUN_KEY, int(LOGICAL.timestamp()))
    asset = to_asset(table_uri=table.uri)
    op = _operator(output_table_uri=str(tmp_path / "out"), outlets=[asset],
                   application=str(tmp_path / "does-not-exist.py"))
    ctx = _context()
    assert op.execute(ctx) == 2
    assert ctx["ti"].xcoms["commit"] == {"version": 2, "committed": False, "table_uri": table.uri,
                                         "app_id": "dag:spark@" + RUN_KEY, "app_version": int(LOGICAL.timestamp())}
    assert op.outlets == [] and ctx["outlet_events"][asset].extra == {}   # nothing committed: no asset event
    assert DeltaTable(str(tmp_path / "out")).latest_version() == 3


def _fake_spark_submit(tmp_path, exit_code: int) -> str:
    path = tmp_path / f"spark-submit-{exit_code}"
    path.write_text(f"#!/bin/sh\necho \"fake spark-submit $@\"\nexit {exit_code}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_job_that_does_not_commit_fails_the_task(tmp_path):
    op = _operator(output_table_uri=str(tmp_path / "out"), spark_binary=_fake_spark_submit(tmp_path, 0),
                   conn_id="spark_not_defined", env_vars={"EXTRA": "1"})
    with pytest.raises(CommitFailedError, match="holds no commit"):
        op.execute(_context())
    args = json.loads(op.application_args[0])
    assert args["app_id"] == "dag:spark@" + RUN_KEY and args["output"]["table_uri"] == str(tmp_path / "out")
    assert op.env_vars == {"EXTRA": "1"}          # no secrets for a local table
    assert not (tmp_path / "out").exists()


def test_failed_spark_submit_fails_the_task(tmp_path):
    from airflow.providers.common.compat.sdk import AirflowException
    op = _operator(output_table_uri=str(tmp_path / "out"), spark_binary=_fake_spark_submit(tmp_path, 3),
                   conn_id="spark_not_defined")
    with pytest.raises(AirflowException, match="Error code is: 3"):
        op.execute(_context())


def test_secrets_travel_in_the_environment_only(monkeypatch, tmp_path):
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps({
        "conn_type": "delta", "host": str(tmp_path), "login": "user", "password": "s3cr3t",
        "extra": {"storage_options": {"auto_mkdir": True}}}))
    op = _operator(output_table_uri="out", delta_conn_id="lake", spark_binary=_fake_spark_submit(tmp_path, 0),
                   conn_id="spark_not_defined")
    with pytest.raises(CommitFailedError):
        op.execute(_context())
    assert "s3cr3t" not in op.application_args[0]
    secrets = json.loads(op.env_vars[SECRETS_ENV])
    assert secrets["output"]["storage_options"] == {"auto_mkdir": True}   # local storage takes no login
