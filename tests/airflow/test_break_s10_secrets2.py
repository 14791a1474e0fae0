"""Break review s10 (second pass): the sweep of ``delta-spark-secrets-*`` folders must fail safe.

A folder whose owning worker is gone may still be in use: spark-submit and a client-mode driver are
not killed with a SIGKILLed task, and the driver reads its file when the application asks
(``apply_hadoop_conf``). Such a folder stays while a live process names it (environment or command
line). Each test sweeps a directory of its own, never the real /tmp.
"""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import uuid

import psutil

from airflow_provider_delta.operators.spark_secrets import (OWNER_MARKER, SECRETS_DIR_PREFIX, _pid_namespace,
                                                            sweep_orphaned_secrets)
from airflow_provider_delta.spark.job_args import SECRETS_ENV


def _gone_owner() -> dict:
    """The owner marker of a worker process that has exited (as one killed with SIGKILL)."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(0.3)"])
    owner = {"host": socket.gethostname(), "pidns": _pid_namespace(), "pid": proc.pid,
             "started": psutil.Process(proc.pid).create_time()}
    proc.wait()
    return owner


def _folder(root, name: str) -> tuple[str, str]:
    """A secrets folder left by a gone worker, and its secrets file."""
    path = os.path.join(str(root), SECRETS_DIR_PREFIX + name)
    os.mkdir(path, 0o700)
    secret = os.path.join(path, "delta-secrets-x-delta_spark_job_secrets.json")
    with open(os.open(secret, os.O_WRONLY | os.O_CREAT, 0o600), "w") as f:
        f.write('{"output": {"catalog": {"url": "postgresql://etl:pw@db/cat"}}}')
    with open(os.path.join(path, OWNER_MARKER), "w") as f:
        json.dump(_gone_owner(), f)
    return path, secret


def _process(env: dict[str, str], args: list[str] = (), cwd: str | None = None) -> subprocess.Popen:
    """A stand-in for a driver or spark-submit that outlived its task: a live process naming the file."""
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args], env={**os.environ, **env},
                            cwd=cwd)
    time.sleep(0.3)
    return proc


def test_a_folder_a_running_driver_names_in_its_environment_stays(tmp_path):
    path, secret = _folder(tmp_path, "driver-outlived-its-task")
    driver = _process({f"{SECRETS_ENV}_FILE": secret})
    try:
        assert sweep_orphaned_secrets(directory=str(tmp_path)) == []      # was: removed under the driver
        assert os.path.exists(secret)
    finally:
        driver.kill()
        driver.wait()
    assert sweep_orphaned_secrets(directory=str(tmp_path)) == [path]
    assert not os.path.exists(path)


def test_a_folder_a_spark_submit_names_on_its_command_line_stays(tmp_path):
    """YARN cluster mode ships the file with ``--files <path>``: while spark-submit runs the folder stays."""
    path, secret = _folder(tmp_path, "shipping")
    submit = _process({}, ["--files", secret])
    try:
        assert sweep_orphaned_secrets(directory=str(tmp_path)) == []
        assert os.path.exists(secret)
    finally:
        submit.kill()
        submit.wait()
    assert sweep_orphaned_secrets(directory=str(tmp_path)) == [path]


def test_symlinks_and_other_users_folders_stay(tmp_path, tmp_path_factory):
    """Sound (attacked, held): a symlink named like a secrets folder (a trap in a shared /tmp) is neither
    followed nor removed; a folder of another user is not touched; two sweeps agree."""
    victim, victim_file = _folder(tmp_path_factory.mktemp("victim"), "precious")
    trap = os.path.join(str(tmp_path), SECRETS_DIR_PREFIX + "trap")
    os.symlink(victim, trap)
    theirs, _ = _folder(tmp_path, "other-user")
    if os.getuid() == 0:
        os.chown(theirs, 54321, 54321)
    stale, _ = _folder(tmp_path, "stale")
    assert sweep_orphaned_secrets(directory=str(tmp_path)) == [stale]
    assert sweep_orphaned_secrets(directory=str(tmp_path)) == []
    assert os.path.exists(victim_file) and os.path.islink(trap)
    if os.getuid() == 0:
        assert os.path.exists(theirs)


# --------------------------------------------------------------- doubt keeps the folder (s11, issue #25)
def test_a_folder_a_driver_names_by_a_path_that_no_longer_resolves_stays(tmp_path):
    """The driver was given the folder through a link (its task's TMPDIR) that is gone now: its path leads
    nowhere, so the sweep cannot tell which folder it means; it keeps the one of that name."""
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    path, secret = _folder(real, f"through-a-removed-link-{uuid.uuid4().hex[:8]}")   # (random, as mkdtemp's:
    # the same test running elsewhere at once names a dangling path of its own, which would keep this one)
    driver = _process({f"{SECRETS_ENV}_FILE": os.path.join(str(link), os.path.basename(path),
                                                           os.path.basename(secret))})
    link.unlink()
    try:
        assert sweep_orphaned_secrets(directory=str(real)) == []
        assert os.path.exists(secret)
    finally:
        driver.kill()
        driver.wait()
    assert sweep_orphaned_secrets(directory=str(real)) == [path]


def test_a_folder_a_driver_names_relative_to_its_working_directory_stays(tmp_path):
    """A relative ``NAME_FILE`` is resolved in the driver's working directory, as the driver opens it."""
    path, secret = _folder(tmp_path, "relative")
    driver = _process({f"{SECRETS_ENV}_FILE": os.path.join(os.path.basename(path), os.path.basename(secret))},
                      cwd=str(tmp_path))
    try:
        assert sweep_orphaned_secrets(directory=str(tmp_path)) == []
    finally:
        driver.kill()
        driver.wait()
    assert sweep_orphaned_secrets(directory=str(tmp_path)) == [path]


def test_a_folder_of_the_same_name_elsewhere_does_not_keep_the_orphan(tmp_path):
    """Not kept on the name alone: a driver naming another folder of the same name (another temporary
    directory) keeps that one's use, not the orphan's."""
    (tmp_path / "here").mkdir()
    (tmp_path / "there").mkdir()
    path, _ = _folder(tmp_path / "here", "same-name")
    other, other_secret = _folder(tmp_path / "there", "same-name")
    driver = _process({f"{SECRETS_ENV}_FILE": other_secret})
    try:
        assert sweep_orphaned_secrets(directory=str(tmp_path / "here")) == [path]
        assert os.path.exists(other_secret)
    finally:
        driver.kill()
        driver.wait()


def test_a_folder_stays_while_a_process_of_this_user_has_an_unreadable_environment(tmp_path, monkeypatch):
    """A process of this user whose environment cannot be read (a non-dumpable one: /proc/<pid>/environ is
    then root's) may name any folder made before it started: they stay. (This machine's root reads every
    environment, so psutil's answer for that one process is replaced by the AccessDenied it gives then;
    the code under test is ours, unchanged.)"""
    path, secret = _folder(tmp_path, "unreadable-environment")
    driver = _process({f"{SECRETS_ENV}_FILE": secret})
    environ = psutil.Process.environ

    def denied(self):
        if self.pid == driver.pid:
            raise psutil.AccessDenied(self.pid)
        return environ(self)

    monkeypatch.setattr(psutil.Process, "environ", denied)
    try:
        assert sweep_orphaned_secrets(directory=str(tmp_path)) == []   # was: removed (its command line names nothing)
        assert os.path.exists(secret)
    finally:
        driver.kill()
        driver.wait()
    assert sweep_orphaned_secrets(directory=str(tmp_path)) == [path]
