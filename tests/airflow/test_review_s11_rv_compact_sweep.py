"""Review s11 (report-only) of the secrets-folder sweep (operators/spark_secrets.py, s11-sweep merge 54c9826).

Each case: a folder left by a gone worker, a live stand-in driver (a real process) naming it in some
spelling, and the sweep of a directory of our own (never the real /tmp). The driver must keep its folder.
Cases that pass show what was tried and held; strict xfails are open findings.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import psutil
import pytest

from airflow_provider_delta.operators.spark_secrets import sweep_orphaned_secrets
from airflow_provider_delta.spark.job_args import SECRETS_ENV
from test_break_s10_secrets2 import _folder as _named_folder

pytestmark = pytest.mark.airflow


def _folder(root) -> tuple[str, str]:
    """A secrets folder (random name, as mkdtemp's) left by a gone worker, and its secrets file."""
    return _named_folder(root, uuid.uuid4().hex[:8])


class _Driver:
    """A live stand-in driver: it reads its secrets file through the path it was given (as the driver does
    when the application asks); ``reads()`` says whether that still works."""

    def __init__(self, env: dict[str, str], cwd: str | None = None, args: tuple[str, ...] = ()):
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args],
                                     env={**os.environ, **env}, cwd=cwd)
        time.sleep(0.3)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.proc.kill()
        self.proc.wait()


def _kept(tmp_path, path: str, secret: str) -> None:
    assert sweep_orphaned_secrets(directory=os.path.dirname(path)) == []
    assert os.path.exists(secret)


# ------------------------------------------------------------------------------------ held (tried)
def test_dotdot_segments_through_an_existing_directory_keep_the_folder(tmp_path):
    path, secret = _folder(tmp_path)
    (tmp_path / "sub").mkdir()
    spelled = os.path.join(str(tmp_path), "sub", "..", os.path.basename(path), os.path.basename(secret))
    with _Driver({f"{SECRETS_ENV}_FILE": spelled}):
        _kept(tmp_path, path, secret)
    assert sweep_orphaned_secrets(directory=str(tmp_path)) == [path]


def test_dotdot_through_a_missing_directory_keeps_the_folder_on_doubt(tmp_path):
    path, secret = _folder(tmp_path)
    spelled = os.path.join(str(tmp_path), "gone", "..", os.path.basename(path), os.path.basename(secret))
    with _Driver({f"{SECRETS_ENV}_FILE": spelled}):
        _kept(tmp_path, path, secret)


def test_a_relative_dotdot_path_from_the_drivers_working_directory_keeps_the_folder(tmp_path):
    path, secret = _folder(tmp_path)
    (tmp_path / "work").mkdir()
    with _Driver({f"{SECRETS_ENV}_FILE": f"../{os.path.basename(path)}/{os.path.basename(secret)}"},
                 cwd=str(tmp_path / "work")):
        _kept(tmp_path, path, secret)


@pytest.mark.parametrize("value", [
    '{{"file": "{p}"}}',                                   # JSON
    "'{p}'",                                               # quoted
    '-Dspark.x="{p}" -Dspark.y=1',                         # quoted Java option
    "file://{p}",                                          # URI
    "hdfs:///a,{p}#secrets.json",                          # --files list with a YARN alias
])
def test_a_path_inside_a_quoted_json_or_uri_value_keeps_the_folder(tmp_path, value):
    path, secret = _folder(tmp_path)
    with _Driver({"SPARK_SUBMIT_OPTS": value.format(p=secret)}):
        _kept(tmp_path, path, secret)


def test_a_path_on_the_command_line_keeps_the_folder(tmp_path):
    path, secret = _folder(tmp_path)
    with _Driver({}, args=("--files", secret)):
        _kept(tmp_path, path, secret)


@pytest.mark.skipif(os.getuid() != 0, reason="bind mounts need root")
def test_a_path_through_a_bind_mount_keeps_the_folder(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "bound").mkdir()
    path, secret = _folder(tmp_path / "real")
    if subprocess.run(["mount", "--bind", str(tmp_path / "real"), str(tmp_path / "bound")]).returncode:
        pytest.skip("mount --bind not permitted here")
    try:
        spelled = os.path.join(str(tmp_path / "bound"), os.path.basename(path), os.path.basename(secret))
        with _Driver({f"{SECRETS_ENV}_FILE": spelled}):
            _kept(tmp_path, path, secret)
    finally:
        subprocess.run(["umount", str(tmp_path / "bound")], check=True)


def test_a_parent_renamed_while_the_driver_lives_keeps_the_folder_on_doubt(tmp_path):
    """The driver's path leads nowhere once its parent is renamed (the driver cannot read it either):
    kept on doubt, not removed."""
    (tmp_path / "a").mkdir()
    path, secret = _folder(tmp_path / "a")
    with _Driver({f"{SECRETS_ENV}_FILE": secret}):
        os.rename(tmp_path / "a", tmp_path / "b")
        moved = os.path.join(str(tmp_path / "b"), os.path.basename(path))
        assert sweep_orphaned_secrets(directory=str(tmp_path / "b")) == []
        assert os.path.isdir(moved)


_WORKER = """
import logging, os, subprocess, sys, tempfile, time
tempfile.tempdir = sys.argv[1]
from airflow_provider_delta.operators.spark_secrets import DriverSecrets
secrets = DriverSecrets(logging.getLogger("worker"))
env = secrets._files(None, {"DELTA_SPARK_JOB_SECRETS": "S3cret"}, ship=False)
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], env={**os.environ, **env})
print("FOLDER=" + secrets._dir + " CHILD=" + str(child.pid), flush=True)
time.sleep(600)
"""


def test_the_ordinary_sigkill_case_is_kept_while_its_child_runs_then_swept(tmp_path):
    """The common case end to end: a worker (the operators' own DriverSecrets) starts a spark-submit
    stand-in with NAME_FILE in its environment and is SIGKILLed; the child outlives it (kept), then ends
    (swept by the next sweep)."""
    tmp = str(tmp_path)
    worker = subprocess.Popen([sys.executable, "-c", _WORKER, tmp], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    line = next(x for x in worker.stdout if x.startswith("FOLDER="))       # type: ignore[union-attr]
    folder, child = line.split()[0][len("FOLDER="):], psutil.Process(int(line.split()[1][len("CHILD="):]))
    try:
        worker.kill()
        worker.wait(30)
        assert child.is_running() and os.path.isdir(folder)
        assert sweep_orphaned_secrets(directory=tmp) == []
        child.kill()
        child.wait(30)
        assert sweep_orphaned_secrets(directory=tmp) == [folder]
    finally:
        for proc in (worker, child):
            try:
                proc.kill()
            except (psutil.Error, OSError):
                pass


# ------------------------------------------------------------------------------------ findings
def test_a_json_value_with_escaped_slashes_keeps_the_folder(tmp_path):
    path, secret = _folder(tmp_path)
    with _Driver({"DELTA_CONF_JSON": json.dumps({"file": secret}).replace("/", "\\/")}):
        _kept(tmp_path, path, secret)


def test_the_folder_followed_by_a_newline_in_a_value_keeps_the_folder(tmp_path):
    path, secret = _folder(tmp_path)
    with _Driver({"SPARK_LOCAL_DIRS_LIST": f"{path}\n/var/tmp"}):
        _kept(tmp_path, path, secret)


def test_a_path_through_a_link_to_the_folder_itself_keeps_the_folder(tmp_path):
    (tmp_path / "sweep").mkdir()
    path, secret = _folder(tmp_path / "sweep")
    alias = tmp_path / "current-secrets"
    alias.symlink_to(path)
    with _Driver({f"{SECRETS_ENV}_FILE": os.path.join(str(alias), os.path.basename(secret))}):
        _kept(tmp_path, path, secret)


_LEADER_GONE = """
import ctypes, threading, time
threading.Thread(target=time.sleep, args=(60,)).start()    # the thread that goes on reading the file
time.sleep(0.1)
ctypes.CDLL(None).pthread_exit(None)                       # the main thread ends, the process lives on
"""


def test_a_process_whose_main_thread_exited_keeps_its_folder(tmp_path):
    path, secret = _folder(tmp_path)
    proc = subprocess.Popen([sys.executable, "-c", _LEADER_GONE], env={**os.environ, f"{SECRETS_ENV}_FILE": secret})
    try:
        time.sleep(1)
        assert psutil.Process(proc.pid).num_threads() >= 2          # alive, its leader a zombie
        _kept(tmp_path, path, secret)
    finally:
        proc.kill()
        proc.wait()
