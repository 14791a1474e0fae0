"""Secrets folders left by a worker killed before it removed them (operators/spark_secrets.py).

Real processes write their folders with the operators' own code (``DriverSecrets``); one is
SIGKILLed, one keeps running. The sweep, run by the next submission, removes the killed one's
folder and keeps the running one's, a folder without an owner marker (being created, or not
ours), one of another host, and one whose process cannot be told apart from its owner.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import textwrap

import pytest

from airflow_provider_delta.operators.spark_secrets import (OWNER_MARKER, SECRETS_DIR_PREFIX, DriverSecrets,
                                                            _pid_namespace, sweep_orphaned_secrets)

pytestmark = pytest.mark.airflow

WORKER = textwrap.dedent('''
    import logging, sys, tempfile, time
    tempfile.tempdir = sys.argv[1]
    from airflow_provider_delta.operators.spark_secrets import DriverSecrets
    secrets = DriverSecrets(logging.getLogger("worker"))
    secrets._files(None, {"DELTA_SPARK_JOB_SECRETS": "S3cret"}, ship=False)
    print("FOLDER=" + secrets._dir, flush=True)
    time.sleep(600)
''')


def _worker(tmp: str) -> tuple[subprocess.Popen, str]:
    proc = subprocess.Popen([sys.executable, "-c", WORKER, tmp], stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    folder = ""
    for line in proc.stdout:                                     # type: ignore[union-attr]
        if line.startswith("FOLDER="):                           # (Airflow's log lines come first)
            folder = line.strip()[len("FOLDER="):]
            break
    assert folder.startswith(os.path.join(tmp, SECRETS_DIR_PREFIX)), folder
    return proc, folder


def _folder(tmp, name: str, owner: dict | None) -> str:
    path = os.path.join(str(tmp), SECRETS_DIR_PREFIX + name)
    os.mkdir(path, 0o700)
    with open(os.path.join(path, "delta-secrets-x.json"), "w") as f:
        f.write("{}")
    if owner is not None:
        with open(os.path.join(path, OWNER_MARKER), "w") as f:
            json.dump(owner, f)
    return path


def test_the_folder_of_a_killed_worker_is_swept_and_a_live_ones_kept(tmp_path, monkeypatch):
    tmp = str(tmp_path)
    killed, killed_folder = _worker(tmp)
    live, live_folder = _worker(tmp)
    try:
        killed.send_signal(signal.SIGKILL)
        killed.wait(30)
        assert os.path.isdir(killed_folder)                      # SIGKILL: nothing removed it
        me = {"host": socket.gethostname(), "pidns": _pid_namespace(), "pid": os.getpid()}
        unmarked = _folder(tmp_path, "unmarked", None)
        elsewhere = _folder(tmp_path, "elsewhere", {**me, "host": "another-host", "pid": killed.pid, "started": 1.0})
        reused = _folder(tmp_path, "reused", {**me, "started": 1.0})           # our pid, another start: gone
        broken = _folder(tmp_path, "broken", {"pid": "x"})
        # the killed worker's pid and start time, but no PID namespace (a marker of an earlier version: its pid
        # may be a container's) or another one (a container sharing /tmp and the host name): kept
        with open(os.path.join(killed_folder, OWNER_MARKER)) as f:
            gone = json.load(f)
        legacy = _folder(tmp_path, "legacy", {k: v for k, v in gone.items() if k != "pidns"})
        other_ns = _folder(tmp_path, "other-ns", {**gone, "pidns": (gone["pidns"] or 0) + 1})
        monkeypatch.setattr("tempfile.tempdir", tmp)
        secrets = DriverSecrets(_Log())
        secrets._files(None, {"DELTA_SPARK_JOB_SECRETS": "{}"}, ship=False)   # the next submission sweeps
        assert not os.path.exists(killed_folder) and not os.path.exists(reused)
        assert all(os.path.isdir(p) for p in (live_folder, unmarked, elsewhere, broken, legacy, other_ns, secrets._dir))
        assert len(os.listdir(live_folder)) == 2                                # its secret and marker, untouched
        assert sweep_orphaned_secrets(directory=tmp) == []                     # nothing else is orphaned
        secrets.close()
        assert not os.path.exists(secrets._dir or killed_folder)
    finally:
        for proc in (killed, live):
            if proc.poll() is None:
                proc.kill()
                proc.wait(30)
    assert sweep_orphaned_secrets(directory=tmp) == [live_folder]              # now its process is gone too


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, msg: str, *args) -> None:
        self.lines.append(msg % args)
