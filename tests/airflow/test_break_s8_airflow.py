"""Break review of s8-airflow (#23): strict hook flags, byte-bounded payloads, the hook's other arguments.

Every test here is a finding, marked ``xfail(strict=True)``: it passes once the finding is fixed
(then drop the mark). Real tables on local disk, the real hook, sensor and trigger classes.
"""
from __future__ import annotations

import json
import logging
import os
import time
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from airflow.providers.common.compat.sdk import AirflowFailException

from airflow_provider_delta.hooks.arguments import DeltaArgumentError
from airflow_provider_delta.hooks.delta_table import DeltaTableHook
from airflow_provider_delta.hooks.payloads import MAX_LISTED_BYTES, MAX_TEXT, clipped, json_size
from airflow_provider_delta.log import DeltaTable, TimestampOutOfRangeError
from airflow_provider_delta.sensors import DeltaCommitSensor
from airflow_provider_delta.triggers.delta_commit import DeltaCommitTrigger

ROW = pa.table({"id": [1]})


def small_table(tmp_path) -> DeltaTable:
    """A table of one append (version 0)."""
    table = DeltaTable(str(tmp_path / "t"))
    table.write(ROW)
    return table


def foreign_commit(table: DeltaTable, commit_info: dict) -> int:
    """Append a commit another writer made (only a commitInfo) as the next version; its version."""
    version = table.latest_version() + 1
    path = os.path.join(table.storage.root, "_delta_log", f"{version:020d}.json")
    with open(path, "x") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": int(time.time() * 1000), **commit_info}}) + "\n")
    return version


@pytest.fixture
def quiet_commit_log():
    """The sensor logs each matching commit whole; keep a multi-megabyte line out of the test output."""
    logger = logging.getLogger("airflow_provider_delta.hooks.commits")
    level = logger.level
    logger.setLevel(logging.WARNING)
    yield
    logger.setLevel(level)


# ------------------------------------------------------------------------- payloads
def test_one_commit_with_nested_parameters_makes_a_multi_megabyte_sensor_payload(tmp_path, make_context,
                                                                                 quiet_commit_log):
    table = small_table(tmp_path)
    nested = {f"k{i}": {f"j{j}": "x" * MAX_TEXT for j in range(64)} for i in range(64)}
    version = foreign_commit(table, {"operation": "WRITE", "operationParameters": nested})
    out = DeltaCommitSensor(task_id="w", table_uri=table.storage.root, after_version=0, poke_interval=0.05,
                            timeout=30).execute(make_context())
    assert out["last_version"] == version and out["count"] == 1
    # what the deferrable sensor stores as trigger kwargs carries the same summaries
    trigger = DeltaCommitTrigger(table_uri=table.storage.root, commits=out["commits"], after_version=0,
                                 last_seen=version)
    kwargs_size = json_size(trigger.serialize()[1])
    assert json_size(out) <= 2 * MAX_LISTED_BYTES, f"sensor payload {json_size(out)} bytes"
    assert kwargs_size <= 2 * MAX_LISTED_BYTES, f"trigger kwargs {kwargs_size} bytes"


def test_a_clipped_unicode_value_stays_near_one_kilobyte_of_json():
    assert json_size(clipped("\U0001F600" * 5000)) <= 2 * MAX_TEXT


def test_clipping_long_keys_keeps_or_notes_every_entry():
    prefix = "p" * MAX_TEXT
    out = clipped({prefix + "a": "first", prefix + "b": "second"})
    assert len(out) == 2 or any("more" in str(v) for v in out.values()), out


# ------------------------------------------------------- the hook's strict arguments
def test_hook_vacuum_refuses_a_numpy_bool_retention(tmp_path):
    import numpy as np
    table = small_table(tmp_path)
    with pytest.raises(DeltaArgumentError):
        DeltaTableHook().vacuum(table.storage.root, retention_hours=np.True_, dry_run=True)


def test_hook_vacuum_huge_retention_is_a_typed_error(tmp_path):
    table = small_table(tmp_path)
    with pytest.raises(DeltaArgumentError):
        DeltaTableHook().vacuum(table.storage.root, retention_hours=10 ** 400, dry_run=True)


def test_hook_cleanup_metadata_text_retention_fails_without_retry(tmp_path):
    table = small_table(tmp_path)
    with pytest.raises(AirflowFailException):
        DeltaTableHook().cleanup_metadata(table.storage.root, retention_ms="a week", dry_run=False)
    # a whole number as text is that number (as the other rendered arguments), not a retried error
    assert DeltaTableHook().cleanup_metadata(table.storage.root, retention_ms="0", dry_run=True)["dry_run"]


def test_hook_cleanup_metadata_bad_orphan_age_changes_nothing(tmp_path):
    table = small_table(tmp_path)
    temp = os.path.join(table.storage.root, "_delta_log", f".00000000000000000001.json.{'a' * 32}.tmp")
    with open(temp, "w") as f:
        f.write("{}")
    old = time.time() - 7 * 24 * 3600
    os.utime(temp, (old, old))
    with pytest.raises(Exception) as raised:
        DeltaTableHook().cleanup_metadata(table.storage.root, orphan_age_ms="a day", dry_run=False)
    assert os.path.exists(temp), f"deleted although the call failed with {raised.value!r}"
    assert isinstance(raised.value, DeltaArgumentError)


def test_hook_snapshot_manifest_parses_allow_after_latest(tmp_path):
    table = small_table(tmp_path)
    time.sleep(0.05)
    after_latest = datetime.now(timezone.utc).isoformat()      # after the latest commit, not in the future
    hook = DeltaTableHook()
    with pytest.raises(TimestampOutOfRangeError):
        hook.write_snapshot_manifest(table.storage.root, timestamp=after_latest, allow_after_latest=False,
                                     write=False)
    with pytest.raises((TimestampOutOfRangeError, DeltaArgumentError)):
        hook.write_snapshot_manifest(table.storage.root, timestamp=after_latest, allow_after_latest="false",
                                     write=False)


def test_hook_snapshot_manifest_write_false_text_writes_nothing(tmp_path):
    table = small_table(tmp_path)
    try:
        out = DeltaTableHook().write_snapshot_manifest(table.storage.root, write="false")
    except DeltaArgumentError:
        out = {"manifest_uri": None}
    assert out["manifest_uri"] is None
    assert not os.path.exists(os.path.join(table.storage.root, "_delta_manifests"))


def test_hook_commit_files_refuses_a_fractional_txn_version(tmp_path):
    table = small_table(tmp_path)
    before = table.latest_version()
    with pytest.raises(DeltaArgumentError):
        DeltaTableHook().commit_files(table.storage.root, app_id="app", txn_version=2.9)
    assert table.latest_version() == before


# ----------------------------------------------- a manifest that resolves to None in a mapped task
def test_a_mapped_spark_task_whose_manifest_resolves_to_none_is_refused(tmp_path, make_context):
    from datetime import datetime, timezone
    from types import SimpleNamespace

    from airflow.sdk import DAG

    from airflow_provider_delta.operators import DeltaSparkSubmitOperator

    with DAG("mapped_manifest", schedule=None, start_date=datetime(2026, 1, 1)):
        mapped = DeltaSparkSubmitOperator.partial(
            task_id="job", output_table_uri=str(tmp_path / "out"), transform="identity", mode="overwrite",
        ).expand(input_manifest_uri=[None, str(tmp_path / "m.json")])
    task = mapped.unmap({"input_manifest_uri": None})     # what render_template_fields does for map index 0
    ti = make_context("job")["ti"]           # the airflow conftest's recording task instance (by fixture:
    ti.dag_id, ti.map_index = "mapped_manifest", 0   # a bare 'conftest' import depends on the test order)
    run = SimpleNamespace(run_id=ti.run_id, dag_id="mapped_manifest", start_date=datetime.now(timezone.utc),
                          logical_date=None, conf={})
    with pytest.raises(DeltaArgumentError):
        spec, _ = task.build_spec({"ti": ti, "task_instance": ti, "run_id": ti.run_id, "dag_run": run})
        # reached only without the error: the overwrite job would run with no input at all
        assert spec.input_manifest_uri is None and spec.input_table_uri is None


# ------------------------------------------------------------ the example DAGs as a user triggers them
def test_write_audit_publish_example_runs_when_triggered_without_a_logical_date(run_dag, tmp_path):
    import shutil
    from pathlib import Path
    examples = Path(__file__).resolve().parents[2] / "dags_examples"
    dags = tmp_path / "dags"
    dags.mkdir()
    for name in ("delta_write_audit_publish.py", "example_settings.py"):
        shutil.copy(examples / name, dags / name)
    base = tmp_path / "base"
    env = {"DELTA_EXAMPLE_BASE": str(base), "PYTHONPATH": os.pathsep.join([str(dags), str(examples.parent)]),
           "AIRFLOW_CONN_DELTA_WAP": json.dumps({"conn_type": "delta",
                                                 "extra": {"catalog": {"url": f"sqlite:///{base}/catalog.db"}}}),
           "DELTA_DAG_RUN_NO_LOGICAL_DATE": "1"}
    run = run_dag("delta_write_audit_publish", env=env, dags_folder=dags)
    assert run.tasks.get("write_orders") == "success", run.output[-3000:]
    assert run.state == "success" and run.tasks["publish"] == "success", run.tasks


# ------------------------------------------------- table properties a rendered template leaves empty
@pytest.mark.parametrize("props", [{"delta.logRetentionDuration": "None"}, {"delta.logRetentionDuration": ""},
                                   {"delta.checkpointInterval": "None"}])
def test_a_table_property_rendered_to_none_is_refused_at_create(tmp_path, props):
    from airflow_provider_delta.log import InvalidArgumentError
    from airflow_provider_delta.hooks.arguments import string_map
    try:
        props = string_map(props, "table_properties")
    except DeltaArgumentError:
        return                                    # refused by the operator's parser: fine
    with pytest.raises(InvalidArgumentError):
        DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), properties=props)


# ---------------------------------------------------- the log layer's vacuum (a design disagreement)
def test_log_vacuum_refuses_a_text_dry_run_before_deleting(tmp_path):
    from airflow_provider_delta.log import InvalidArgumentError
    table = small_table(tmp_path)
    table.write(ROW, mode="overwrite")           # the first file is now unreferenced
    before = {f for _, _, fs in os.walk(table.storage.root) for f in fs if f.endswith(".parquet")}
    with pytest.raises(InvalidArgumentError):
        table.vacuum(retention_hours=0, dry_run=None, enforce_retention=False)     # None: falsy, so not a dry run
    after = {f for _, _, fs in os.walk(table.storage.root) for f in fs if f.endswith(".parquet")}
    assert after == before


def test_a_mapped_spark_application_whose_manifest_resolves_to_none_is_refused(tmp_path):
    from datetime import datetime

    from airflow.sdk import DAG

    from airflow_provider_delta.operators import DeltaSparkApplicationOperator

    with DAG("mapped_app_manifest", schedule=None, start_date=datetime(2026, 1, 1)):
        mapped = DeltaSparkApplicationOperator.partial(
            task_id="app", application=str(tmp_path / "app.py"), output_table_uri=str(tmp_path / "out"),
        ).expand(input_manifest_uri=[None, str(tmp_path / "m.json")])
    task = mapped.unmap({"input_manifest_uri": None})
    with pytest.raises(DeltaArgumentError):
        assert task.resolve_input() == (None, None)


# ------------------------------------------------------ a rollback guard that renders to nothing
def test_a_rollback_guard_rendered_to_none_does_not_restore(tmp_path, make_context):
    from airflow_provider_delta.operators import DeltaRestoreOperator
    table = DeltaTable(str(tmp_path / "t"))
    table.write(ROW)                               # version 0
    table.write(ROW)                               # version 1: the load
    table.write(pa.table({"id": [7]}))             # version 2: another writer's commit after it
    task = DeltaRestoreOperator(task_id="rollback", table_uri=table.storage.root, version=0,
                                expected_version="{{ ti.xcom_pull(task_ids='load') }}")
    task.expected_version = "None"                 # what the template rendered to
    try:
        task.execute(make_context("rollback"))
    except (DeltaArgumentError, AirflowFailException):
        pass
    assert table.latest_version() == 2, "the rollback restored without its guard"
