"""Review s12 (report-only) of the secrets-folder sweep (operators/spark_secrets.py).

A folder must never be swept while the process that made it runs. The owner marker names the process by
``(host, pid, start time)``; a process id is only meaningful inside its PID namespace. A task running in a
container that shares the worker's temporary directory and host name (``docker run --network host -v
/tmp:/tmp``, a Kubernetes pod with ``hostNetwork`` and a ``hostPath`` /tmp, several Celery worker
containers on one machine) records its namespace's pid (1, 7, ...); the sweep of a task outside that
namespace (or in another container) looks that pid up in its own namespace, finds another process (or none)
and removes the live task's folder: its spark-submit, started right after, gets NAME_FILE paths to files
that are gone.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time

import pytest

from airflow_provider_delta.operators.spark_secrets import SECRETS_DIR_PREFIX, sweep_orphaned_secrets

pytestmark = pytest.mark.airflow

#: the owning task, as DriverSecrets._files makes its folder (mkdtemp in TMPDIR, then the owner marker)
_OWNER = """
import os, sys, tempfile, time
from airflow_provider_delta.operators.spark_secrets import SECRETS_DIR_PREFIX, _write_owner_marker
folder = tempfile.mkdtemp(prefix=SECRETS_DIR_PREFIX)
_write_owner_marker(folder)
with open(os.path.join(folder, "delta-secrets-0-delta_job_secrets.json"), "w") as f:
    f.write("{}")
print(folder, flush=True)
time.sleep(60)
"""


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs util-linux unshare")
def test_a_live_owner_in_another_pid_namespace_keeps_its_folder(tmp_path):
    probe = subprocess.run(["unshare", "-Urpf", "--mount-proc", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"unprivileged PID namespaces not available: {probe.stderr!r}")
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": os.pathsep.join(sys.path)}
    owner = subprocess.Popen(["unshare", "-Urpf", "--mount-proc", sys.executable, "-c", _OWNER],
                             env=env, stdout=subprocess.PIPE, text=True)
    try:
        folder = owner.stdout.readline().strip()
        assert folder.startswith(str(tmp_path)) and os.path.basename(folder).startswith(SECRETS_DIR_PREFIX)
        assert owner.poll() is None                      # the owning task is alive
        removed = sweep_orphaned_secrets(directory=str(tmp_path))
        assert removed == [] and os.path.isdir(folder), "the live task's secrets folder was swept"
    finally:
        owner.kill()
        owner.wait()
