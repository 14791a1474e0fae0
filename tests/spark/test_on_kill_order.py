"""``on_kill`` of the Spark operators stops the driver before spark-submit, with real processes.

A stand-in for spark-submit (a real process) starts a stand-in driver (its child) that
watches its parent: if the parent dies while the driver lives, the driver is orphaned (as a
PySpark driver is when the JVM is killed first, and could commit while YARN's kill command
runs) and writes a file saying so. ``on_kill`` must leave no such file: the driver is dead
before its parent is killed. Killed the other way round the driver nearly always has the
moment it needs to write: here the provider's ``on_kill`` runs in YARN client mode, so after
killing spark-submit it runs ``yarn application -kill`` (a real stand-in ``yarn`` on PATH that
takes a second, as the real one takes seconds).
"""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import psutil
import pytest

#: the driver: report being orphaned (its parent gone while it lives), as fast as it can see it
DRIVER = """
import os, sys, time
parent = os.getppid()
open(sys.argv[1] + ".started", "w").close()
while os.getppid() == parent:
    time.sleep(0.001)
open(sys.argv[1], "w").write("orphaned")
"""
#: spark-submit: start the driver, then wait for it
SUBMIT = """
import subprocess, sys
subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]]).wait()
time.sleep(3600)
"""


def _wait_for(path, timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.05)


def _slow_yarn(tmp_path) -> str:
    """A ``yarn`` CLI that records the kill it was asked for and takes a second, like the real one."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    yarn = bin_dir / "yarn"
    yarn.write_text(f"#!/bin/sh\necho \"$@\" > {tmp_path}/yarn-called\nsleep 1\n")
    yarn.chmod(yarn.stat().st_mode | stat.S_IEXEC)
    return str(bin_dir)


@pytest.mark.parametrize("operator", ["application", "submit"])
def test_on_kill_stops_the_driver_before_spark_submit(monkeypatch, tmp_path, operator):
    monkeypatch.setenv("PATH", _slow_yarn(tmp_path) + os.pathsep + os.environ["PATH"])
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
    if operator == "application":
        op = DeltaSparkApplicationOperator(task_id="t", conn_id="spark_not_defined", application="app.py",
                                           output_table_uri=str(tmp_path / "o"))
    else:
        op = DeltaSparkSubmitOperator(task_id="t", conn_id="spark_not_defined", output_table_uri=str(tmp_path / "o"),
                                      transform="jobs:copy")
    hook = op._get_hook()
    op._hook = hook
    hook._yarn_application_id = "application_1_0001"      # YARN client mode: on_kill also runs yarn
    marker = tmp_path / "orphaned"
    hook._submit_sp = subprocess.Popen([sys.executable, "-c", "import time\n" + SUBMIT, DRIVER, str(marker)])
    started = psutil.Process(hook._submit_sp.pid)
    try:
        _wait_for(tmp_path / "orphaned.started")
        driver = started.children()[0]
        op.on_kill()
        hook._submit_sp.wait(timeout=30)
        assert not driver.is_running() or driver.status() == psutil.STATUS_ZOMBIE
        assert not marker.exists(), "the driver outlived spark-submit"
        assert (tmp_path / "yarn-called").read_text().split() == ["application", "-kill", "application_1_0001"]
    finally:
        for p in [started, *started.children(recursive=True)] if started.is_running() else []:
            p.kill()
