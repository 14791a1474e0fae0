"""The job side of DeltaSparkApplicationOperator: delta_job_context() from argv or the environment.

No Spark here: the helper is standard library only.
"""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from airflow_provider_delta.spark.delta_job import (CONTEXT_ARG, ENV_INPUT_TABLE_URI, ENV_INPUT_VERSION,
                                                    ENV_OUTPUT_TABLE_URI, ENV_TXN_APP_ID, ENV_TXN_VERSION,
                                                    TXN_APP_ID_CONF, TXN_AUTO_RESET_CONF, TXN_VERSION_CONF,
                                                    USER_METADATA_CONF, DeltaJobContext, DeltaJobContextError,
                                                    delta_job_context, parse_run_marker)

CTX = DeltaJobContext(input_table_uri="file:///data/orders", input_version=3,
                      output_table_uri="file:///data/out", txn_app_id="dag.task", txn_version=1767225600,
                      job={"dag_id": "dag", "task_id": "task"})


def _doc(**changes):
    doc = CTX.to_document()
    for key, value in changes.items():
        doc[key] = value
    return doc


def _arg(doc) -> str:
    return f"{CONTEXT_ARG}={json.dumps(doc)}"


def test_round_trip_through_the_argument_keeps_the_other_arguments():
    ctx = delta_job_context(["--day", "2026-01-02", CTX.to_argument(), "extra"], environ={})
    assert ctx == DeltaJobContext(**{**CTX.__dict__, "args": ("--day", "2026-01-02", "extra")})
    assert ctx.job == {"dag_id": "dag", "task_id": "task"}
    assert ctx.write_options == {}            # the pair travels as session settings, not write options
    conf = ctx.session_conf
    assert conf[TXN_APP_ID_CONF] == "dag.task" and conf[TXN_VERSION_CONF] == "1767225600"
    assert conf[TXN_AUTO_RESET_CONF] == "true"
    assert ctx.submit_conf == {k: v for k, v in conf.items() if k != TXN_VERSION_CONF}   # SparkConf: no version
    marker = parse_run_marker(conf[USER_METADATA_CONF])
    assert (marker["dag_id"], marker["task_id"]) == ("dag", "task")
    assert parse_run_marker("not json airflow_run") is None and parse_run_marker(None) is None
    assert ctx.read_options == {"versionAsOf": "3"}


def test_flag_and_value_as_two_arguments():
    ctx = delta_job_context([CONTEXT_ARG, json.dumps(CTX.to_document())], environ={})
    assert (ctx.input_version, ctx.txn_version, ctx.args) == (3, 1767225600, ())


def test_the_argument_wins_over_the_environment():
    env = {**CTX.to_env(), ENV_TXN_VERSION: "7"}
    assert delta_job_context([CTX.to_argument()], environ=env).txn_version == 1767225600


def test_from_the_environment_only():
    assert CTX.to_env() == {ENV_INPUT_TABLE_URI: "file:///data/orders", ENV_INPUT_VERSION: "3",
                            ENV_OUTPUT_TABLE_URI: "file:///data/out", ENV_TXN_APP_ID: "dag.task",
                            ENV_TXN_VERSION: "1767225600"}
    ctx = delta_job_context(["a"], environ=CTX.to_env())
    assert (ctx.input_table_uri, ctx.input_version, ctx.output_table_uri, ctx.txn_app_id, ctx.txn_version,
            ctx.args) == ("file:///data/orders", 3, "file:///data/out", "dag.task", 1767225600, ("a",))


def test_a_job_without_input():
    ctx = delta_job_context([_arg(_doc(input=None))], environ={})
    assert ctx.input_table_uri is None and ctx.input_version is None and ctx.read_options == {}
    env = {k: v for k, v in CTX.to_env().items() if k not in (ENV_INPUT_TABLE_URI, ENV_INPUT_VERSION)}
    assert delta_job_context([], environ=env).input_table_uri is None


def test_reads_sys_argv_and_os_environ_by_default():
    code = ("from airflow_provider_delta.spark.delta_job import delta_job_context as c; "
            "x = c(); print(x.input_version, x.txn_app_id, x.args)")
    out = subprocess.run([sys.executable, "-c", code, CTX.to_argument(), "more"], capture_output=True,
                         text=True, check=True, env={"PATH": "/usr/bin:/bin"}).stdout
    assert out.split() == ["3", "dag.task", "('more',)"]


def test_the_module_is_standard_library_only():
    """It can be shipped alone (py_files) to a cluster without this package; pyspark only where the
    entry (run_application) arms the application's session, in spark-submit's driver."""
    import ast
    from pathlib import Path

    import airflow_provider_delta.spark.delta_job as mod
    tree = ast.parse(Path(mod.__file__).read_text())
    names = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
    names |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
    assert all(not isinstance(n, ast.ImportFrom) or n.level == 0 for n in ast.walk(tree))
    assert names <= set(sys.stdlib_module_names) | {"__future__", "pyspark"}, names
    top = {n.module for n in tree.body if isinstance(n, ast.ImportFrom)} | {
        a.name for n in tree.body if isinstance(n, ast.Import) for a in n.names}
    assert not any(name.startswith("pyspark") for name in top)


APP = """
import json, sys
from pyspark.sql import SparkSession
json.dump({"argv": sys.argv, "path0": sys.path[0], "name": __name__,
           "builder_is_patched": SparkSession.Builder.getOrCreate.__name__}, open(sys.argv[1], "w"))
"""


def test_the_entry_runs_the_application_as_main_with_its_own_arguments(monkeypatch, tmp_path):
    """spark-submit runs delta_job.py; the application sees what ``python app.py ...`` would give it."""
    from pyspark.sql import SparkSession

    from airflow_provider_delta.spark.delta_job import APPLICATION_ARG, run_application
    monkeypatch.setattr(SparkSession.Builder, "getOrCreate", SparkSession.Builder.getOrCreate)   # undone after
    monkeypatch.setattr(sys, "argv", list(sys.argv))
    monkeypatch.setattr(sys, "path", list(sys.path))
    app = tmp_path / "jobs" / "app.py"
    app.parent.mkdir()
    app.write_text(APP)
    seen = tmp_path / "seen.json"
    run_application([f"{APPLICATION_ARG}={app}", str(seen), CTX.to_argument()])
    got = json.loads(seen.read_text())
    assert got["argv"] == [str(app), str(seen), CTX.to_argument()]       # no application argument
    assert got["path0"] == str(app.parent) and got["name"] == "__main__"
    assert got["builder_is_patched"] == "get_or_create"                  # arms the first session it returns


def test_the_entry_refuses_a_missing_application(monkeypatch, tmp_path):
    from airflow_provider_delta.spark.delta_job import APPLICATION_ARG, run_application
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DeltaJobContextError, match="the application '/nowhere/app.py' is not a file here"):
        run_application([f"{APPLICATION_ARG}=/nowhere/app.py", CTX.to_argument()])
    with pytest.raises(DeltaJobContextError, match="needs --delta-job-application=<application> once"):
        run_application([CTX.to_argument()])


@pytest.mark.parametrize("argv, environ, message", [
    ([], {}, "no Delta job context in the arguments or the environment: this application expects"),
    (["--day", "x"], {"OTHER": "1"}, "DeltaSparkApplicationOperator"),
    ([f"{CONTEXT_ARG}=not json"], {}, "is not valid JSON"),
    ([CONTEXT_ARG], {}, "its JSON value is missing"),
    ([CTX.to_argument(), CTX.to_argument()], {}, "given 2 times"),
    ([f"{CONTEXT_ARG}=[1, 2]"], {}, "must be a JSON object"),
    ([_arg(_doc(format="delta-snapshot-manifest"))], {}, "is a 'delta-snapshot-manifest' document"),
    ([_arg(_doc(format_version=2))], {}, "unsupported delta-job-context format_version 2"),
    ([_arg(_doc(output=None))], {}, "needs an 'output' object"),
    ([_arg(_doc(output={"table_uri": ""}))], {}, "output.table_uri must be a non-empty string"),
    ([_arg(_doc(txn=None))], {}, "needs a 'txn' object"),
    ([_arg(_doc(txn={"app_id": "a"}))], {}, "txn.version must be a non-negative integer, got None"),
    ([_arg(_doc(txn={"app_id": "a", "version": -1}))], {}, "txn.version must be a non-negative integer"),
    ([_arg(_doc(txn={"app_id": "a", "version": True}))], {}, "txn.version must be a non-negative integer"),
    ([_arg(_doc(txn={"app_id": " ", "version": 1}))], {}, "txn.app_id must be a non-empty string"),
    ([_arg(_doc(input="file:///x"))], {}, "'input' must be null or an object"),
    ([_arg(_doc(input={"table_uri": "file:///x"}))], {}, "input.table_uri needs input.version"),
    ([_arg(_doc(input={"version": 2}))], {}, "input.version is given without input.table_uri"),
    ([_arg(_doc(input={"table_uri": "file:///x", "version": "two"}))], {}, "input.version must be"),
    ([_arg(_doc(job=[1]))], {}, "'job' must be an object"),
    ([], {ENV_OUTPUT_TABLE_URI: "/o", ENV_TXN_APP_ID: "a"}, f"environment variable(s) {ENV_TXN_VERSION} not set"),
    ([], {ENV_OUTPUT_TABLE_URI: "/o", ENV_TXN_APP_ID: "a", ENV_TXN_VERSION: "x"},
     "in the DELTA_JOB_* environment variables: txn.version must be a non-negative integer, got 'x'"),
    ([], {**CTX.to_env(), ENV_INPUT_VERSION: ""}, "input.table_uri needs input.version"),
])
def test_bad_or_missing_context_is_a_clear_error(argv, environ, message):
    with pytest.raises(DeltaJobContextError) as e:
        delta_job_context(argv, environ=environ)
    assert message in str(e.value)
    assert isinstance(e.value, ValueError)
