"""Findings of the break review of the airflow-prod branch (issue 23: rendered arguments, run_start
baseline, bounded payloads). Each test states the behaviour we want (the findings, fixed on branch s8-airflow, and their neighbours).

Real tables on disk, the real hook/operators/sensor, Jinja's own rendering of the templates.
"""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, timezone
from types import SimpleNamespace

import jinja2
import pyarrow as pa
import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_delta.hooks.delta_table import DeltaTableHook
from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.operators import DeltaMetadataCleanupOperator, DeltaVacuumOperator
from airflow_provider_delta.hooks.arguments import DeltaArgumentError
from airflow_provider_delta.sensors import DeltaCommitSensor

ROW = pa.table({"id": [1], "day": ["2026-01-01"]})


def data_files(table: DeltaTable) -> list[str]:
    root = table.storage.root
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                  if "_delta_log" not in d and f.endswith(".parquet"))


def table_with_garbage(make_table) -> DeltaTable:
    """A table whose overwrite left unreferenced data files (what a zero-retention vacuum deletes)."""
    table = make_table(commits=2)
    table.write(ROW, mode="overwrite")
    time.sleep(0.01)
    return table


def render(template: str, **values) -> str:
    """What Airflow's (non-native) Jinja rendering gives a template field: the str() of the value."""
    return jinja2.Environment().from_string(template).render(**values)


# ------------------------------------------------------------------ unclear flags that still delete
@pytest.mark.parametrize("value", [None, "", 0.0])
def test_hook_vacuum_with_an_unclear_dry_run_deletes(make_table, value):
    table = table_with_garbage(make_table)
    before = data_files(table)
    try:
        DeltaTableHook().vacuum(table.storage.root, retention_hours=0, enforce_retention=False, dry_run=value)
    except InvalidArgumentError:
        pass
    assert data_files(table) == before


@pytest.mark.parametrize("value", [None, ""])
def test_hook_vacuum_with_an_unclear_enforce_retention_skips_the_retention_check(make_table, value):
    table = table_with_garbage(make_table)
    before = data_files(table)
    try:
        DeltaTableHook().vacuum(table.storage.root, retention_hours=0, dry_run=False, enforce_retention=value)
    except InvalidArgumentError:
        pass
    assert data_files(table) == before


@pytest.mark.parametrize("field, value", [("dry_run", "None"), ("dry_run", "maybe"), ("enforce_retention", "None"),
                                          ("retention_hours", "inf")])
def test_hook_vacuum_refuses_unclear_values_typed_and_deletes_nothing(make_table, field, value):
    table = table_with_garbage(make_table)
    before = data_files(table)
    kwargs = {"retention_hours": 0, "enforce_retention": False, "dry_run": False, field: value}
    with pytest.raises(DeltaArgumentError, match=field):
        DeltaTableHook().vacuum(table.storage.root, **kwargs)
    assert data_files(table) == before


def test_hook_vacuum_reads_rendered_words(make_table):
    """The rendered spellings of real answers still work: 'True' keeps files, 'false'/'False' delete."""
    table = table_with_garbage(make_table)
    before = data_files(table)
    report = DeltaTableHook().vacuum(table.storage.root, retention_hours="0", enforce_retention="False",
                                     dry_run="True")
    assert report["dry_run"] is True and data_files(table) == before
    DeltaTableHook().vacuum(table.storage.root, retention_hours="0", enforce_retention="false", dry_run="False")
    assert len(data_files(table)) < len(before)


@pytest.mark.parametrize("kwargs", [{"dry_run": "None"}, {"dry_run": ""}, {"force": "None"}])
def test_hook_cleanup_metadata_refuses_unclear_flags(make_table, kwargs):
    table = make_table(commits=3)
    log = sorted(os.listdir(table.storage.path("_delta_log")))
    with pytest.raises(DeltaArgumentError):
        DeltaTableHook().cleanup_metadata(table.storage.root, retention_ms=0, **kwargs)
    assert sorted(os.listdir(table.storage.path("_delta_log"))) == log


# ------------------------------------------------------------------ unclear values, untyped errors
@pytest.mark.parametrize("cls", [DeltaMetadataCleanupOperator, DeltaVacuumOperator])
def test_infinite_retention_hours_is_a_typed_error(make_table, make_context, cls):
    table = make_table(commits=2)
    log = sorted(os.listdir(table.storage.path("_delta_log")))
    op = cls(task_id="m", table_uri=table.storage.root, retention_hours="{{ r }}")
    op.retention_hours = "inf"
    with pytest.raises(DeltaArgumentError):
        op.execute(make_context())
    assert sorted(os.listdir(table.storage.path("_delta_log"))) == log


# ------------------------------------------------------------------ Jinja rendering to Python literals
def test_sensor_operation_rendered_from_a_list_param(make_table, make_context):
    table = make_table(commits=2)
    time.sleep(0.01)
    run = SimpleNamespace(start_date=datetime.now(timezone.utc))
    time.sleep(0.01)
    table.write(ROW)                                   # a WRITE in this run
    rendered = render("{{ params.operations }}", params={"operations": ["WRITE", "MERGE"]})
    assert rendered == "['WRITE', 'MERGE']"
    sensor = DeltaCommitSensor(task_id="w", table_uri=table.storage.root, operation="{{ params.operations }}",
                               poke_interval=0.05, timeout=30)
    sensor.operation = rendered
    try:
        assert sensor.poke(make_context(dag_run=run)) is True
    except DeltaArgumentError:
        pass                                           # refusing the text is fine too


# ------------------------------------------------------------------ payload bounds
def test_sensor_payload_is_bounded_in_bytes(make_table, make_context):
    table = make_table(commits=0)
    big = "id IN (" + ",".join(str(i) for i in range(40_000)) + ")"     # ~250 KB, a generated MERGE predicate
    for _ in range(21):
        with table.transaction(operation="MERGE", operation_parameters={"predicate": big}):
            pass
    out = DeltaCommitSensor(task_id="w", table_uri=table.storage.root, after_version=0, poke_interval=0.05,
                            timeout=30).execute(make_context())
    assert out["count"] == 21 and out["truncated"]
    assert len(json.dumps(out)) < 1_000_000


def big_predicate_commits(make_table, n: int = 21) -> DeltaTable:
    table = make_table(commits=0)
    big = "id IN (" + ",".join(str(i) for i in range(40_000)) + ")"     # ~250 KB, a generated MERGE predicate
    for _ in range(n):
        with table.transaction(operation="MERGE", operation_parameters={"predicate": big}):
            pass
    return table


def test_sensor_payload_keeps_counts_and_versions_when_bounded_in_bytes(make_table, make_context, caplog):
    from airflow.sdk.exceptions import TaskDeferred
    table = big_predicate_commits(make_table)
    with caplog.at_level("INFO"):
        out = DeltaCommitSensor(task_id="w", table_uri=table.storage.root, after_version=0, poke_interval=0.05,
                                timeout=30).execute(make_context())
    assert (out["first_version"], out["last_version"], out["version"]) == (1, 21, 21)
    assert out["commits"][-1]["version"] == 21 and out["commits"][-1]["operation"] == "MERGE"
    assert "more characters, in the task log" in out["commits"][-1]["operationParameters"]["predicate"]
    assert any(len(r.getMessage()) > 200_000 for r in caplog.records)     # the whole predicate is logged
    # deferred: the trigger's kwargs carry the same bounded summaries
    with pytest.raises(TaskDeferred) as deferred:
        DeltaCommitSensor(task_id="w", table_uri=table.storage.root, after_version=0, target_version=99,
                          deferrable=True, timeout=30).execute(make_context())
    assert len(json.dumps(deferred.value.trigger.serialize()[1])) < 1_000_000


def test_commit_event_payload_is_bounded_in_bytes(make_table):
    from airflow_provider_delta.triggers import DeltaCommitEventTrigger
    table = big_predicate_commits(make_table)
    trigger = DeltaCommitEventTrigger(table_uri=table.storage.root)
    commits, through = trigger.matching(table, 0)
    [(payload, accounted)] = trigger.payloads(commits, 0, through)
    assert (payload["count"], payload["first_version"], payload["last_version"], accounted) == (21, 1, 21, 21)
    assert payload["truncated"] and len(json.dumps(payload)) < 1_000_000


def test_vacuum_payload_is_bounded(make_table, make_context):
    table = make_table(commits=0)
    for i in range(30):
        table.write(pa.table({"id": [i], "day": ["2026-01-01"]}))
    table.write(ROW, mode="overwrite")
    time.sleep(0.01)
    out = DeltaVacuumOperator(task_id="v", table_uri=table.storage.root, retention_hours=0,
                              enforce_retention=False, dry_run=True).execute(make_context())
    assert out["num_files_deleted"] >= 30 and len(out["files_deleted"]) == 20 and out["files_deleted_truncated"]


# ------------------------------------------------------------------ Spark operator arguments outside the parser
@pytest.mark.parametrize("field, value", [("mode", "None"), ("mode", "Overwrite"),
                                          ("partition_by", "[day]"), ("partition_by", "['day', 1]"),
                                          ("partition_by", "day,"),
                                          ("table_properties", "{'a': 'b'}")])
def test_spark_submit_rendered_arguments_fail_without_retry(make_table, make_context, field, value):
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    table = make_table(commits=1)
    log = sorted(os.listdir(table.storage.path("_delta_log")))
    op = DeltaSparkSubmitOperator(task_id="s", output_table_uri=table.storage.root, transform="jobs.t:transform",
                                  app_id="break.s", app_version=1, **{field: "{{ v }}"})
    setattr(op, field, value)
    with pytest.raises(AirflowFailException):
        op.execute(make_context())
    assert sorted(os.listdir(table.storage.path("_delta_log"))) == log


@pytest.mark.parametrize("field, value, parsed", [
    ("mode", "overwrite", "overwrite"), ("partition_by", '["day", "id"]', ["day", "id"]),
    ("partition_by", "day, id", ["day", "id"]), ("partition_by", "None", None),
    ("partition_by", "['day', 'id']", ["day", "id"]),        # a list param rendered to its Python text
    ("table_properties", {"delta.appendOnly": "false"}, {"delta.appendOnly": "false"})])
def test_spark_submit_rendered_arguments_that_mean_something(make_table, make_context, field, value, parsed):
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    table = make_table(commits=1)
    op = DeltaSparkSubmitOperator(task_id="s", output_table_uri=table.storage.root, transform="jobs.t:transform",
                                  app_id="break.s", app_version=1, **{field: "{{ v }}"})
    setattr(op, field, value)
    spec, _ = op.build_spec(make_context())
    assert getattr(spec, {"table_properties": "properties"}.get(field, field)) == parsed


@pytest.mark.parametrize("field, value", [("mode", "Append"), ("partition_by", "[day]"),
                                          ("table_properties", "x"), ("table_properties", {"delta.appendOnly": True})])
def test_spark_submit_plain_bad_arguments_fail_at_import(field, value):
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    with pytest.raises(DeltaArgumentError, match=field):
        DeltaSparkSubmitOperator(task_id="s", output_table_uri="/tmp/x", transform="jobs.t:transform",
                                 **{field: value})


BAD_PROPERTIES = [{"delta.appendOnyl": "true"}, {"delta.checkpointInterval": "0"},
                  {"delta.logRetentionDuration": "30 dayz"}, {"delta.feature.deletionVectors": "on"}]


@pytest.mark.parametrize("props", BAD_PROPERTIES)
def test_spark_submit_bad_table_properties_fail_at_import(props):
    """A misspelt delta.* name or a value Delta Spark refuses fails the DAG file, not a Spark driver."""
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    with pytest.raises(DeltaArgumentError, match="table_properties"):
        DeltaSparkSubmitOperator(task_id="s", output_table_uri="/tmp/x", transform="jobs.t:transform",
                                 table_properties=props)


@pytest.mark.parametrize("props", BAD_PROPERTIES)
def test_spark_submit_rendered_bad_table_properties_fail_before_submitting(make_table, make_context, props):
    """Rendered from templates, they are checked when the task builds the job, before spark-submit."""
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    table = make_table(commits=1)
    log = sorted(os.listdir(table.storage.path("_delta_log")))
    key = next(iter(props))
    op = DeltaSparkSubmitOperator(task_id="s", output_table_uri=table.storage.root, transform="jobs.t:transform",
                                  app_id="break.s", app_version=1, table_properties={key: "{{ v }}"})
    op.table_properties = props                                       # as rendered
    with pytest.raises(DeltaArgumentError, match="table_properties") as e:
        op.build_spec(make_context())
    assert isinstance(e.value, AirflowFailException)                  # no retry
    assert sorted(os.listdir(table.storage.path("_delta_log"))) == log


def test_spark_submit_table_properties_in_delta_spark_spelling(make_context):
    """Names are handed to the job as Delta Spark spells them (it compares them without case)."""
    from airflow_provider_delta.operators import DeltaSparkSubmitOperator
    op = DeltaSparkSubmitOperator(task_id="s", output_table_uri="/tmp/x", transform="jobs.t:transform",
                                  app_id="break.s", app_version=1,
                                  table_properties={"DELTA.APPENDONLY": "true", "delta.feature.DeletionVectors":
                                                    "Enabled", "team": "{{ 'sales' }}"})
    op.table_properties = {**op.table_properties, "team": "sales"}   # as rendered
    spec, _ = op.build_spec(make_context())
    assert spec.properties == {"delta.appendOnly": "true", "delta.feature.deletionVectors": "Enabled", "team": "sales"}


@pytest.mark.airflow
def test_dag_rendered_bad_table_property_fails_without_retry_or_spark(run_dag, tmp_path):
    from pathlib import Path
    out = tmp_path / "out"
    report = run_dag("delta_break_spark_bad_property", env={"DELTA_TEST_TABLE": str(out)},
                     dags_folder=Path(BREAK_DAGS))
    assert report.tasks["write"] == "failed", report.output[-5000:]      # retries=3, an hour apart: none used
    assert "delta.appendOnly must be 'true' or 'false'" in report.output, report.output[-5000:]
    assert "spark-submit" not in report.output.lower().replace("before spark-submit", "")
    assert not out.exists()                                            # nothing created


# ------------------------------------------------------------------ dag.test(): retry or not
BREAK_DAGS = os.path.join(os.path.dirname(__file__), "break_dags")


@pytest.mark.airflow
def test_dag_mapped_unclear_dry_run_fails_without_retry_and_deletes_nothing(run_dag, make_table):
    from pathlib import Path
    table = table_with_garbage(make_table)
    before = data_files(table)
    report = run_dag("delta_break_mapped_dry_run", env={"DELTA_TEST_TABLE": table.storage.root},
                     dags_folder=Path(BREAK_DAGS))
    assert report.tasks["vacuum"] == "failed", report.output[-5000:]      # retries=3, none used
    assert data_files(table) == before


@pytest.mark.airflow
def test_dag_transient_storage_error_is_still_retried(run_dag):
    from pathlib import Path
    dead = {"conn_type": "delta", "login": "k", "password": "s",
            "extra": {"storage_options": {"client_kwargs": {"endpoint_url": "http://127.0.0.1:9"},
                                          "config_kwargs": {"retries": {"max_attempts": 1},
                                                            "connect_timeout": 1}},
                      "single_writer": True}}
    report = run_dag("delta_break_transient_storage", env={"AIRFLOW_CONN_DEAD_S3": json.dumps(dead)},
                     dags_folder=Path(BREAK_DAGS))
    # retries=1 (1 s apart): the first try is marked for retry, the second fails
    assert report.tasks["vacuum"] == "failed", report.output[-5000:]
    assert "up_for_retry" in report.output.lower(), report.output[-5000:]
    assert "is not defined" not in report.output and "must be true or false" not in report.output


# ------------------------------------------------------------------ a snapshot that wrote no manifest, downstream
MANIFEST_TEMPLATE = "{{ ti.xcom_pull('pin')['manifest_uri'] }}"


def pin_without_manifest(table: DeltaTable, make_context) -> dict:
    from airflow_provider_delta.operators import DeltaTimeTravelSnapshotOperator
    result = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root,
                                             write_manifest=False).execute(make_context())
    assert result["manifest_uri"] is None and result["version"] == table.latest_version()
    return result


def spark_readers(table: DeltaTable, tmp_path) -> list:
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator, DeltaSparkSubmitOperator
    out = str(tmp_path / "out")
    return [
        DeltaSparkSubmitOperator(task_id="s", output_table_uri=out, transform="jobs.t:transform",
                                 input_manifest_uri=MANIFEST_TEMPLATE, app_id="break.m", app_version=1),
        DeltaSparkApplicationOperator(task_id="a", application=str(tmp_path / "no_such_app.py"),
                                      output_table_uri=out, input_manifest_uri=MANIFEST_TEMPLATE,
                                      app_id="break.m", app_version=1),
    ]


@pytest.mark.parametrize("native", [False, True], ids=["rendered_text", "native_rendering"])
def test_a_manifest_the_snapshot_did_not_write_fails_downstream_before_reading(make_table, make_context,
                                                                                 tmp_path, monkeypatch, native):
    table = make_table(commits=2)
    result = pin_without_manifest(table, make_context)
    rendered = result["manifest_uri"] if native else render(MANIFEST_TEMPLATE.replace("ti.xcom_pull('pin')", "r"),
                                                             r=result)
    assert rendered == (None if native else "None")
    monkeypatch.chdir(tmp_path)
    (tmp_path / "None").write_text("{}")                 # a file named None must never be read
    for op in spark_readers(table, tmp_path):
        op.input_manifest_uri = rendered
        with pytest.raises(DeltaArgumentError, match="wrote no manifest.*input_table_uri and input_version"):
            op.execute(make_context())
        assert not os.path.exists(tmp_path / "out")      # nothing submitted, nothing written


def test_read_manifest_refuses_a_rendered_none(tmp_path, monkeypatch):
    from airflow_provider_delta.hooks.manifest import read_manifest
    monkeypatch.chdir(tmp_path)
    (tmp_path / "None").write_text("{}")
    for value in ("None", "", "null"):
        with pytest.raises(DeltaArgumentError, match="wrote no manifest"):
            read_manifest(value)


def test_a_written_manifest_still_reaches_the_job(make_table, make_context, tmp_path):
    from airflow_provider_delta.operators import DeltaTimeTravelSnapshotOperator
    table = make_table(commits=2)
    result = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root,
                                             manifest_uri=str(tmp_path / "m.json")).execute(make_context())
    submit, _ = spark_readers(table, tmp_path)
    submit.input_manifest_uri = render(MANIFEST_TEMPLATE.replace("ti.xcom_pull('pin')", "r"), r=result)
    spec, _ = submit.build_spec(make_context())
    assert spec.input_manifest_uri == result["manifest_uri"] and result["manifest_uri"].endswith("/m.json")
