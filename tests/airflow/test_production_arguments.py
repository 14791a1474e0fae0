"""Rendered arguments that fail safe, sensors that see their run's commits, bounded payloads.

Operators through ``execute(context)`` on real tables, and DAGs as a data engineer writes them
(``prod_dags/``) through ``dag.test()``: a templated ``dry_run`` that renders to nothing must fail
without retry and delete nothing, a templated ``enforce_retention=False`` must be False, a sensor
right after the writing task must see that task's commit.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pyarrow as pa
import pytest
from airflow.sdk.exceptions import AirflowFailException

from airflow_provider_delta.assets import asset_uri_for_table, to_asset
from airflow_provider_delta.hooks.payloads import MAX_LISTED
from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.operators import (DeltaCheckpointOperator, DeltaMetadataCleanupOperator,
                                              DeltaTimeTravelSnapshotOperator, DeltaVacuumOperator)
from airflow_provider_delta.hooks.arguments import DeltaArgumentError, flag
from airflow_provider_delta.sensors import DeltaCommitSensor

PROD_DAGS = Path(__file__).resolve().parent / "prod_dags"
ROW = pa.table({"id": [1], "day": ["2026-01-01"]})


def data_files(table: DeltaTable) -> list[str]:
    root = table.storage.root
    return sorted(os.path.relpath(os.path.join(d, f), root) for d, _, fs in os.walk(root) for f in fs
                  if "_delta_log" not in d and f.endswith(".parquet"))


def rendered(cls, **kwargs):
    """The task as Airflow runs it: built with templates, then each field set to what its template rendered."""
    task = cls(task_id="t", **{k: ("{{ rendered }}" if k != "table_uri" else v) for k, v in kwargs.items()})
    for key, value in kwargs.items():
        setattr(task, key, value)
    return task


def table_with_garbage(make_table) -> DeltaTable:
    """A table whose overwrite left 4 unreferenced data files (what a zero-retention vacuum deletes)."""
    table = make_table(commits=2)
    table.write(ROW, mode="overwrite")
    time.sleep(0.01)
    return table


# ------------------------------------------------------------------ the parser
@pytest.mark.parametrize("value, expected", [
    (True, True), (False, False), (1, True), (0, False), ("true", True), ("False", False), (" YES ", True),
    ("no", False), ("1", True), ("0", False)])
def test_flags_parse_only_clear_values(value, expected):
    assert flag(value, "dry_run") is expected


@pytest.mark.parametrize("value", ["None", "", "maybe", None, "on", 2, "dry", [], "null"])
def test_anything_else_is_refused_naming_argument_and_value(value):
    with pytest.raises(DeltaArgumentError, match=r"dry_run must be true or false.*Nothing was deleted") as e:
        flag(value, "dry_run", deletes=True)
    assert repr(value) in str(e.value)
    assert isinstance(e.value, AirflowFailException) and isinstance(e.value, InvalidArgumentError)


# --------------------------------------------------------------- execute(context)
@pytest.mark.parametrize("value", ["None", "", "maybe", None])
def test_vacuum_with_an_unclear_dry_run_deletes_nothing(make_table, make_context, value):
    table = table_with_garbage(make_table)
    before = data_files(table)
    op = rendered(DeltaVacuumOperator, table_uri=table.storage.root, retention_hours=0, enforce_retention=False,
                  dry_run=value)
    with pytest.raises(DeltaArgumentError, match="dry_run"):
        op.execute(make_context())
    assert data_files(table) == before


def test_vacuum_flags_as_rendered_strings(make_table, make_context):
    table = table_with_garbage(make_table)
    before = data_files(table)
    # enforce_retention rendered "True": the zero retention is refused (a clear error, nothing deleted)
    with pytest.raises(InvalidArgumentError, match="refusing to vacuum"):
        DeltaVacuumOperator(task_id="v", table_uri=table.storage.root, retention_hours="0",
                            enforce_retention="True", dry_run="false").execute(make_context())
    with pytest.raises(DeltaArgumentError, match="enforce_retention must be true or false.*'None'"):
        rendered(DeltaVacuumOperator, table_uri=table.storage.root, retention_hours="0",
                 enforce_retention="None", dry_run="false").execute(make_context())
    assert data_files(table) == before
    out = DeltaVacuumOperator(task_id="v", table_uri=table.storage.root, retention_hours="0",
                              enforce_retention="FALSE", dry_run="YES").execute(make_context())
    assert out["dry_run"] is True and out["num_files_deleted"] == 4 and data_files(table) == before
    out = DeltaVacuumOperator(task_id="v", table_uri=table.storage.root, retention_hours="0",
                              enforce_retention="no", dry_run="0").execute(make_context())
    assert out["dry_run"] is False and out["num_files_deleted"] == 4 and len(data_files(table)) == len(before) - 4


def test_other_bad_rendered_values_fail_without_retry_before_touching_anything(make_table, make_context):
    table = make_table(commits=2)
    log = sorted(os.listdir(table.storage.path("_delta_log")))
    cases = [
        (DeltaVacuumOperator, {"retention_hours": "a week"}, "retention_hours must be a number of hours"),
        (DeltaMetadataCleanupOperator, {"dry_run": "None"}, "dry_run must be true or false"),
        (DeltaCheckpointOperator, {"cleanup": "None"}, "cleanup must be true or false"),
        (DeltaCheckpointOperator, {"cleanup": True, "cleanup_dry_run": ""}, "cleanup_dry_run must be"),
        (DeltaCheckpointOperator, {"version": "v2"}, "table version"),
        (DeltaCheckpointOperator, {"actions_per_part": "0"}, "actions_per_part must be a positive integer"),
        (DeltaTimeTravelSnapshotOperator, {"allow_after_latest": "None"}, "allow_after_latest must be"),
        (DeltaTimeTravelSnapshotOperator, {"write_manifest": "perhaps"}, "write_manifest must be"),
    ]
    for cls, kwargs, message in cases:
        with pytest.raises(DeltaArgumentError, match=message) as e:
            rendered(cls, table_uri=table.storage.root, **kwargs).execute(make_context())
        assert isinstance(e.value, AirflowFailException), cls
    assert sorted(os.listdir(table.storage.path("_delta_log"))) == log
    assert not os.path.exists(table.storage.path("_delta_manifests"))
    # an engine that renders to nothing known is refused after rendering too
    op = DeltaCheckpointOperator(task_id="t", table_uri=table.storage.root, engine="{{ params.engine }}")
    op.engine = "spork"
    with pytest.raises(DeltaArgumentError, match="engine must be one of local, spark"):
        op.execute(make_context())
    # values that are not templates are checked when the DAG is parsed
    for cls, kwargs in ((DeltaCheckpointOperator, {"engine": "spork"}), (DeltaVacuumOperator, {"dry_run": "None"}),
                        (DeltaMetadataCleanupOperator, {"dry_run": None}), (DeltaCheckpointOperator, {"cleanup": "x"}),
                        (DeltaTimeTravelSnapshotOperator, {"write_manifest": ""})):
        with pytest.raises(DeltaArgumentError):
            cls(task_id="t", table_uri=table.storage.root, **kwargs)


def test_version_and_timestamp_arguments_that_mean_nothing_fail_without_retry(make_table, make_context, tmp_path):
    """Review s12-rv-airflow: DeltaRestoreOperator(version="None") raised the log layer's plain
    InvalidArgumentError (Airflow retried it). Every operator taking a version as of ``version`` or
    ``timestamp`` refuses both given, a timestamp that is no time, and (restore) neither, with
    DeltaArgumentError before touching anything; the hook and the Spark operator's inputs likewise."""
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators import (DeltaCloneOperator, DeltaRestoreOperator,
                                                  DeltaSparkApplicationOperator, DeltaSparkSubmitOperator)

    table = make_table(commits=2)
    log = sorted(os.listdir(table.storage.path("_delta_log")))
    clone_uri = str(tmp_path / "clone")
    cases = [
        (DeltaRestoreOperator, {"version": "None"}, "restore needs exactly one of version or timestamp, but version is 'None'"),
        (DeltaRestoreOperator, {"version": "", "timestamp": "None"}, "restore needs exactly one of version or timestamp"),
        (DeltaRestoreOperator, {"version": "1", "timestamp": "2026-01-01T00:00:00Z"}, "not both"),
        (DeltaRestoreOperator, {"timestamp": "yesterday"}, "timestamp: cannot parse timestamp"),
        (DeltaRestoreOperator, {"version": "v1"}, "version must be a table version"),
        (DeltaTimeTravelSnapshotOperator, {"version": 1, "timestamp": "2026-01-01"}, "not both"),
        (DeltaTimeTravelSnapshotOperator, {"timestamp": "soon"}, "timestamp: cannot parse timestamp"),
    ]
    for cls, kwargs, message in cases:
        with pytest.raises(DeltaArgumentError, match=message) as e:
            rendered(cls, table_uri=table.storage.root, **kwargs).execute(make_context())
        assert isinstance(e.value, AirflowFailException), (cls, kwargs)
    for kwargs, message in (({"version": "0", "timestamp": "2026-01-01"}, "not both"),
                            ({"timestamp": "later"}, "cannot parse timestamp")):
        op = rendered(DeltaCloneOperator, table_uri=clone_uri, source_uri=table.storage.root, **kwargs)
        with pytest.raises(DeltaArgumentError, match=message):
            op.execute(make_context())
    with pytest.raises(DeltaArgumentError, match="not both"):
        DeltaTableHook().resolve_version(table.storage.root, version=1, timestamp="2026-01-01")
    spark_cases = [
        ({"input_table_uri": table.storage.root, "input_version": "1", "input_timestamp": "2026-01-01"},
         "pass either input_version or input_timestamp, not both"),
        ({"input_table_uri": table.storage.root, "input_timestamp": "whenever"}, "input_timestamp: cannot parse timestamp"),
        ({"input_version": "1"}, "input_version and input_timestamp need input_table_uri"),
    ]
    for kwargs, message in spark_cases:
        op = DeltaSparkApplicationOperator(task_id="t", application="job.py", output_table_uri=str(tmp_path / "out"),
                                      **kwargs)
        with pytest.raises(DeltaArgumentError, match=message):
            op.resolve_input()
    for kwargs, message in (({"transform_params": "{not json"}, "transform_params must be a JSON object"),
                            ({"input_version": "1"}, "input.version needs input.table_uri")):
        op = DeltaSparkSubmitOperator(task_id="t", transform="append", output_table_uri=str(tmp_path / "out"),
                                      app_id="orders", app_version=1, **kwargs)
        with pytest.raises(DeltaArgumentError, match=message):
            op.execute(make_context())
    assert sorted(os.listdir(table.storage.path("_delta_log"))) == log       # nothing restored
    assert not os.path.exists(clone_uri) and not os.path.exists(tmp_path / "out")
    assert not os.path.exists(table.storage.path("_delta_manifests"))


def test_every_argument_is_a_template_field():
    import inspect
    from airflow_provider_delta.operators import DeltaBackfillOperator
    from airflow_provider_delta.operators.delta_spark import DeltaSparkApplicationOperator
    from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    not_templated = {"deferrable", "kwargs", "self", "conn_id", "name", "application"}
    from airflow_provider_delta.operators import DeltaCloneOperator, DeltaOptimizeOperator, DeltaRestoreOperator
    for cls in (DeltaBackfillOperator, DeltaCheckpointOperator, DeltaMetadataCleanupOperator, DeltaVacuumOperator,
                DeltaTimeTravelSnapshotOperator, DeltaCommitSensor, DeltaSparkSubmitOperator,
                DeltaSparkApplicationOperator, DeltaOptimizeOperator, DeltaRestoreOperator, DeltaCloneOperator):
        own = set(inspect.signature(cls.__init__).parameters) - not_templated
        for base in cls.__mro__[1:]:
            if base is SparkSubmitOperator:
                own -= set(inspect.signature(base.__init__).parameters) - set(base.template_fields)
        assert own <= set(cls.template_fields), (cls.__name__, own - set(cls.template_fields))


# ------------------------------------------------------------------- the sensor
def test_sensor_counts_commits_made_since_the_run_started(make_table, make_context):
    from datetime import datetime, timezone
    from types import SimpleNamespace
    table = make_table(commits=2)
    time.sleep(0.01)
    run = SimpleNamespace(start_date=datetime.now(timezone.utc))
    time.sleep(0.01)
    table.write(ROW)                              # version 3: the upstream task of the same run
    out = DeltaCommitSensor(task_id="w", table_uri=table.storage.root, poke_interval=0.05,
                            timeout=30).execute(make_context(dag_run=run))
    assert out["count"] == 1 and [c["version"] for c in out["commits"]] == [3]
    # the old rule on request: only commits made while the sensor waits (none here: it times out)
    from airflow.sdk.exceptions import AirflowSensorTimeout
    with pytest.raises(AirflowSensorTimeout):
        DeltaCommitSensor(task_id="w", table_uri=table.storage.root, poke_interval=0.05, timeout=0.3,
                          baseline="sensor_start").execute(make_context(dag_run=run))
    with pytest.raises(DeltaArgumentError, match="baseline must be one of run_start, sensor_start"):
        DeltaCommitSensor(task_id="w", table_uri=table.storage.root, baseline="now")


def test_a_run_start_ahead_of_this_workers_clock_counts_from_now(make_table, make_context):
    """A scheduler whose clock runs ahead: the run 'started' in this worker's future; no error, and the
    commits before now do not count."""
    from datetime import datetime, timedelta, timezone
    from types import SimpleNamespace
    from airflow.sdk.exceptions import TaskDeferred
    table = make_table(commits=2)
    run = SimpleNamespace(start_date=datetime.now(timezone.utc) + timedelta(minutes=5))
    with pytest.raises(TaskDeferred) as deferred:
        DeltaCommitSensor(task_id="w", table_uri=table.storage.root, deferrable=True,
                          timeout=30).execute(make_context(dag_run=run))
    assert deferred.value.trigger.serialize()[1]["after_version"] == 2


def test_a_deferred_sensor_keeps_the_run_start_baseline(make_table, make_context):
    import asyncio
    from datetime import datetime, timezone
    from types import SimpleNamespace
    from airflow.sdk.exceptions import TaskDeferred
    table = make_table(commits=2)
    time.sleep(0.01)
    run = SimpleNamespace(start_date=datetime.now(timezone.utc))
    time.sleep(0.01)
    with table.transaction(operation="OPTIMIZE"):
        pass                                      # version 3, after the run started, not a WRITE
    s = DeltaCommitSensor(task_id="w", table_uri=table.storage.root, operation="WRITE", deferrable=True,
                          poke_interval=0.05, timeout=30)
    ctx = make_context(dag_run=run)
    with pytest.raises(TaskDeferred) as deferred:
        s.execute(ctx)
    _, kwargs = deferred.value.trigger.serialize()
    assert kwargs["after_version"] == 2 and kwargs["last_seen"] == 3     # sensor_start would say 3
    table.write(ROW)                              # version 4
    event = asyncio.run(deferred.value.trigger.run().__anext__())
    out = s.execute_complete(ctx, event=event.payload)
    assert out["count"] == 1 and out["first_version"] == 4 and out["version"] == 4


def test_sensor_payload_is_bounded_on_a_long_history(make_table, make_context):
    table = make_table(commits=300)
    ctx = make_context()
    out = DeltaCommitSensor(task_id="w", table_uri=table.storage.root, after_version=-1,
                            outlets=[to_asset(table_uri=table.storage.root)]).execute(ctx)
    size = len(json.dumps(out))
    assert out["count"] == 301 and out["first_version"] == 0 and out["last_version"] == 300
    assert out["truncated"] is True and [c["version"] for c in out["commits"]] == list(range(281, 301))
    assert size < 10_000, size                        # was 65 KB with every commit listed
    assert len(json.dumps(ctx["outlet_events"][to_asset(table_uri=table.storage.root)].extra)) == size


def test_sensor_operation_filter_ignores_case_and_says_what_it_skipped(make_table, make_context, capsys):
    table = make_table(commits=2)
    out = DeltaCommitSensor(task_id="w", table_uri=table.storage.root, after_version=0,
                            operation=["write"]).execute(make_context())
    assert [c["operation"] for c in out["commits"]] == ["WRITE", "WRITE"]
    with table.transaction(operation="OPTIMIZE"):
        pass
    from airflow.sdk.exceptions import AirflowSensorTimeout
    with pytest.raises(AirflowSensorTimeout):
        DeltaCommitSensor(task_id="w", table_uri=table.storage.root, after_version=2, operation="merge",
                          poke_interval=0.05, timeout=0.2).execute(make_context())
    assert "Commits with other operations were left out: ['OPTIMIZE'] (the filter is ['MERGE'])" in capsys.readouterr().out


def test_sensor_on_a_missing_table_says_so(tmp_path, make_context, capsys):
    from airflow.sdk.exceptions import AirflowSensorTimeout
    with pytest.raises(AirflowSensorTimeout):
        DeltaCommitSensor(task_id="w", table_uri=str(tmp_path / "nothing"), poke_interval=0.05,
                          timeout=0.2).execute(make_context())
    logged = capsys.readouterr().out
    assert f"Delta table {tmp_path / 'nothing'} does not exist yet" in logged
    assert "version None" not in logged


def test_sensor_bad_rendered_versions_fail_without_retry(make_table, make_context):
    table = make_table(commits=1)
    for kwargs in ({"after_version": "latest"}, {"target_version": "-3"}, {"operation": 7}):
        with pytest.raises(DeltaArgumentError):
            DeltaCommitSensor(task_id="w", table_uri=table.storage.root, **kwargs).execute(make_context())


# ------------------------------------------------------------- bounded reports
def test_vacuum_report_lists_the_first_paths_and_counts_them_all(make_table, make_context, capsys):
    table = make_table(commits=15)                          # 30 data files
    table.write(ROW, mode="overwrite")
    time.sleep(0.01)
    out = DeltaVacuumOperator(task_id="v", table_uri=table.storage.root, retention_hours=0,
                              enforce_retention=False).execute(make_context())
    assert out["num_files_deleted"] == out["files_deleted_count"] == 30
    assert len(out["files_deleted"]) == MAX_LISTED and out["files_deleted_truncated"] is True
    logged = [ln for ln in capsys.readouterr().out.splitlines() if "vacuum files_deleted:" in ln]
    assert len(logged) == 30                                # every path in the task log


# ------------------------------------------------------------------- manifests
@contextlib.contextmanager
def read_only(folder: str):
    """``folder`` made unwritable for this process: by its mode, and for root (who ignores modes) immutable."""
    os.chmod(folder, 0o555)
    immutable = False
    try:
        if os.access(folder, os.W_OK) and shutil.which("chattr"):
            immutable = subprocess.run(["chattr", "+i", folder], capture_output=True).returncode == 0
        if os.access(folder, os.W_OK) and not immutable:
            pytest.skip("cannot make a folder read-only for this user (root without chattr)")
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", folder], check=True)
        os.chmod(folder, 0o755)


def test_a_read_only_table_folder_skips_the_default_manifest(make_table, make_context, tmp_path, capsys):
    table = make_table(commits=1)
    with read_only(table.storage.root):                     # this task may read, not write, the table folder
        out = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root).execute(make_context())
        assert out["version"] == 1 and out["manifest_uri"] is None
        assert "No snapshot manifest: this task may not write to the table folder" in capsys.readouterr().out
        elsewhere = tmp_path / "pins" / "v1.json"
        out = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root,
                                              manifest_uri=str(elsewhere)).execute(make_context())
        assert out["manifest_uri"] == f"file://{elsewhere}" and elsewhere.exists()
        from airflow_provider_delta.log import StorageError
        with pytest.raises(StorageError):                   # an explicit location that cannot be written fails
            DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root,
                                            manifest_uri="pins/v1.json").execute(make_context())
    assert not os.path.exists(table.storage.path("_delta_manifests"))


def test_write_manifest_false_pins_without_writing(make_table, make_context):
    table = make_table(commits=1)
    out = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root,
                                          write_manifest="False").execute(make_context())
    assert out["version"] == 1 and out["manifest_uri"] is None
    assert not os.path.exists(table.storage.path("_delta_manifests"))


def test_assets_refuse_relative_table_paths(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ValueError, match="'orders' is relative"):
        to_asset(table_uri="orders")
    with pytest.raises(ValueError, match="relative"):
        asset_uri_for_table("./data/orders")
    assert to_asset(table_uri=str(tmp_path / "orders")).uri == f"delta://{tmp_path}/orders"


# ------------------------------------------------------------------ dag.test()
@pytest.mark.airflow
@pytest.mark.parametrize("dag_id", ["delta_vacuum_conf_dry_run", "delta_vacuum_conf_dry_run_native"])
def test_dag_with_dry_run_from_missing_conf_fails_at_once_and_deletes_nothing(run_dag, make_table, dag_id):
    table = table_with_garbage(make_table)
    before = data_files(table)
    report = run_dag(dag_id, env={"DELTA_TEST_TABLE": table.storage.root}, dags_folder=PROD_DAGS)
    assert report.tasks == {"vacuum": "failed"}, report.output[-5000:]     # retries=3, none used
    assert "dry_run must be true or false" in report.output
    assert data_files(table) == before


@pytest.mark.airflow
def test_dag_with_enforce_retention_false_from_params(run_dag, make_table):
    table = table_with_garbage(make_table)
    before = data_files(table)
    report = run_dag("delta_vacuum_params_enforce", env={"DELTA_TEST_TABLE": table.storage.root},
                     dags_folder=PROD_DAGS)
    assert report.state == "success", report.output[-5000:]
    out = report.xcoms["vacuum"]["return_value"]
    assert out["dry_run"] is False and out["num_files_deleted"] == 4
    assert len(data_files(table)) == len(before) - 4


@pytest.mark.airflow
def test_dag_with_templated_checkpoint_flags(run_dag, make_table):
    table = make_table(commits=2)
    report = run_dag("delta_checkpoint_templated_flags", env={"DELTA_TEST_TABLE": table.storage.root},
                     dags_folder=PROD_DAGS)
    assert report.state == "success", report.output[-5000:]
    out = report.xcoms["checkpoint"]["return_value"]
    assert out["version"] == 2 and out["cleanup"]["dry_run"] is True     # cleanup="yes", the dry run default


@pytest.mark.airflow
@pytest.mark.parametrize("dag_id", ["delta_write_then_wait", "delta_write_then_wait_deferred"])
def test_dag_sensor_right_after_the_writer_sees_its_commit(run_dag, make_table, dag_id):
    table = make_table(commits=2)
    report = run_dag(dag_id, env={"DELTA_TEST_TABLE": table.storage.root}, dags_folder=PROD_DAGS)
    assert report.state == "success", report.output[-5000:]
    assert report.xcoms["write"]["return_value"] == 3
    out = report.xcoms["wait"]["return_value"]
    assert out["count"] == 1 and [c["version"] for c in out["commits"]] == [3]
    # (the deferrable sensor finds the commit on its first poll, before deferring; the trigger path keeps
    # the same baseline: test_a_deferred_sensor_keeps_the_run_start_baseline)


def test_a_missing_connection_reads_the_same_in_a_task_and_in_the_triggerer(monkeypatch):
    import asyncio
    from airflow_provider_delta.hooks import DeltaTableHook
    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)
    with pytest.raises(InvalidArgumentError) as sync:
        DeltaTableHook(delta_conn_id="nowhere").get_table("orders")
    with pytest.raises(InvalidArgumentError) as deferred:
        asyncio.run(DeltaTableHook(delta_conn_id="nowhere").aget_config("orders"))
    assert str(sync.value) == str(deferred.value)
    assert str(sync.value).startswith("Airflow connection 'nowhere' is not defined: create it where every "
                                      "Airflow process sees it")
    assert "AIRFLOW_CONN_NOWHERE" in str(sync.value)
