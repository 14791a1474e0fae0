"""DeltaCommitSensor through execute(context): poke, reschedule and deferrable modes."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from datetime import datetime, timezone

import pyarrow as pa
import pytest
from airflow.sdk import Asset
from airflow.sdk.exceptions import (AirflowException, AirflowFailException, AirflowRescheduleException,
                                    AirflowSensorTimeout, TaskDeferred)

from airflow_provider_delta.assets import to_asset
from airflow_provider_delta.log import CorruptLogError
from airflow_provider_delta.hooks.arguments import DeltaArgumentError
from airflow_provider_delta.sensors import DeltaCommitSensor
from airflow_provider_delta.sensors.delta_commit import DeltaCommitWaitError
from airflow_provider_delta.triggers import DeltaCommitTrigger

ROW = pa.table({"id": [1], "day": ["2026-01-01"]})


def sensor(table, **kwargs) -> DeltaCommitSensor:
    kwargs.setdefault("poke_interval", 0.05)
    kwargs.setdefault("timeout", 60)
    return DeltaCommitSensor(task_id="wait", table_uri=table.storage.root, **kwargs)


def test_poke_mode_returns_all_commits_pushes_version_and_emits_asset_event(make_table, make_context):
    table = make_table(commits=3)
    asset = to_asset(table_uri=table.storage.root)
    s = sensor(table, after_version=1, outlets=[asset])
    ctx = make_context()
    result = s.execute(ctx)
    commits = result["commits"]
    assert [c["version"] for c in commits] == [2, 3]
    assert ctx["ti"].xcoms["version"] == 3
    assert result == {"version": 3, "count": 2, "first_version": 2, "last_version": 3, "commits": commits,
                      "truncated": False}
    assert ctx["outlet_events"][asset].extra == result


def test_poke_mode_waits_for_a_commit(make_table, make_context):
    table = make_table(commits=1)
    s = sensor(table, operation="WRITE")  # baseline: version 1 at start

    def writer():
        time.sleep(0.4)
        with table.transaction(operation="OPTIMIZE"):
            pass  # a commit that does not match
        time.sleep(0.2)
        table.write(ROW)

    threading.Thread(target=writer, daemon=True).start()
    commits = s.execute(make_context())["commits"]
    assert [(c["version"], c["operation"]) for c in commits] == [(3, "WRITE")]


def test_poke_mode_times_out(make_table, make_context):
    table = make_table(commits=1)
    with pytest.raises(AirflowSensorTimeout):
        sensor(table, target_version=10, timeout=0.3, poke_interval=0.05).execute(make_context())


def test_reschedule_mode_reschedules_until_done(make_table, make_context):
    table = make_table(commits=1)
    with pytest.raises(AirflowRescheduleException):
        sensor(table, target_version=2, mode="reschedule").execute(make_context())
    table.write(ROW)
    result = sensor(table, target_version=2, mode="reschedule").execute(make_context())
    assert [c["version"] for c in result["commits"]] == [2]


def test_reschedule_mode_baseline_is_the_first_poke_time(make_table, make_context):
    """A later poke (new process) counts commits made after the *first* poke, not after itself."""
    table = make_table(commits=1)
    time.sleep(0.01)
    first_poke = datetime.now(timezone.utc)
    time.sleep(0.01)
    table.write(ROW)  # version 2, after the first poke
    ctx = make_context()
    ctx["ti"].get_first_reschedule_date = lambda context: first_poke
    commits = sensor(table, mode="reschedule").execute(ctx)["commits"]
    assert [c["version"] for c in commits] == [2]


def test_deferrable_defers_with_its_state_then_returns_the_trigger_commits(make_table, make_context):
    table = make_table(commits=1)
    asset = Asset(f"delta://{table.storage.root}")
    s = sensor(table, target_version=3, after_version=0, deferrable=True, outlets=[asset])
    ctx = make_context()
    with pytest.raises(TaskDeferred) as deferred:
        s.execute(ctx)
    trigger = deferred.value.trigger
    assert isinstance(trigger, DeltaCommitTrigger)
    assert deferred.value.method_name == "execute_complete"
    _, kwargs = trigger.serialize()
    assert kwargs["last_seen"] == 1 and [c["version"] for c in kwargs["commits"]] == [1]
    assert kwargs["target_version"] == 3 and kwargs["poke_interval"] == 0.05
    table.write(ROW)
    table.write(ROW)
    import asyncio
    event = asyncio.run(trigger.run().__anext__())
    result = s.execute_complete(ctx, event=event.payload)
    assert [c["version"] for c in result["commits"]] == [1, 2, 3] and result["count"] == 3
    assert ctx["ti"].xcoms["version"] == 3
    assert ctx["outlet_events"][asset].extra["version"] == 3


def test_deferrable_completes_without_deferring_when_already_done(make_table, make_context):
    table = make_table(commits=2)
    commits = sensor(table, target_version=2, deferrable=True).execute(make_context())["commits"]
    assert [c["version"] for c in commits] == [2]


def test_trigger_error_fails_the_task_with_a_typed_error(make_table, make_context):
    s = sensor(make_table(commits=0), deferrable=True)
    with pytest.raises(CorruptLogError, match="CorruptLogError: boom"):
        s.execute_complete(make_context(), {"status": "error", "error_type": "CorruptLogError", "message": "boom"})
    # an invalid argument is not retried
    with pytest.raises(DeltaArgumentError, match="connection 'x' is not defined") as bad:
        s.execute_complete(make_context(), {"status": "error", "error_type": "InvalidArgumentError",
                                            "message": "Airflow connection 'x' is not defined"})
    assert isinstance(bad.value, AirflowFailException)
    with pytest.raises(DeltaCommitWaitError, match="no event") as none:
        s.execute_complete(make_context(), None)
    assert not isinstance(none.value, AirflowException)
    with pytest.raises(DeltaCommitWaitError, match="OSError: disk"):
        s.execute_complete(make_context(), {"status": "error", "error_type": "OSError", "message": "disk"})


def test_template_fields_cover_every_argument():
    assert set(DeltaCommitSensor.template_fields) == {"table_uri", "delta_conn_id", "target_version",
                                                      "after_version", "operation", "app_id", "baseline"}


@pytest.mark.parametrize("value,expected", [("True", True), ("False", False)])
def test_deferrable_default_comes_from_airflow_config(value, expected):
    env = dict(os.environ, AIRFLOW__OPERATORS__DEFAULT_DEFERRABLE=value)
    code = ("from airflow_provider_delta.sensors import DeltaCommitSensor;"
            "print(DeltaCommitSensor(task_id='w', table_uri='/t').deferrable)")
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1].lower()) is expected
