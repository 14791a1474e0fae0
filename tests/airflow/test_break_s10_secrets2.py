"""Break review s10 (second pass): the sweeper of stale ``delta-spark-secrets-*`` folders must fail safe.

Each test sweeps a temporary directory of its own (``tempfile.tempdir``), never the real /tmp.
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import pytest

from airflow_provider_delta.operators.spark_secrets import SECRETS_DIR_PREFIX, remove_stale_secrets
from airflow_provider_delta.spark.job_args import SECRETS_ENV
from test_break_s10_spark_secrets import _folder as _secrets_folder


def _folder(root, name: str, age_hours: float) -> tuple[str, str]:
    """A secrets folder (and its file) ``age_hours`` old, as a submission leaves it."""
    path = _secrets_folder(root, name, age_hours)
    return path, os.path.join(path, "delta-secrets-x-delta_spark_job_secrets.json")


@pytest.fixture
def tmp_root(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    return tmp_path


def _driver(env: dict[str, str], args: list[str] = ()) -> subprocess.Popen:
    """A stand-in for a client-mode driver (or a spark-submit) still running: a process with the route."""
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *args],
                            env={**os.environ, **env})


def test_a_folder_a_running_driver_names_in_its_environment_stays(tmp_root):
    """A client-mode driver running for more than a day (or one that outlived its SIGKILLed task: spark-submit
    and the driver are not killed with it) still names its file (``NAME_FILE``) and may read it (the
    application calls ``apply_hadoop_conf`` when it likes): the sweep removed it. It stays while a process
    names it, and goes once none does."""
    path, secret = _folder(tmp_root, SECRETS_DIR_PREFIX + "long-running", 30)
    driver = _driver({f"{SECRETS_ENV}_FILE": secret})
    try:
        time.sleep(0.2)
        assert remove_stale_secrets() == []                    # was: [path], the driver's file gone
        assert os.path.exists(secret)
    finally:
        driver.kill()
        driver.wait()
    assert remove_stale_secrets() == [path]
    assert not os.path.exists(path)


def test_a_folder_a_spark_submit_names_on_its_command_line_stays(tmp_root):
    """YARN cluster mode ships the file with ``--files <path>``: while spark-submit runs (uploading, or
    waiting for the application) the folder stays."""
    path, secret = _folder(tmp_root, SECRETS_DIR_PREFIX + "shipping", 30)
    submit = _driver({}, ["--files", secret])
    try:
        time.sleep(0.2)
        assert remove_stale_secrets() == []
        assert os.path.exists(secret)
    finally:
        submit.kill()
        submit.wait()
    assert remove_stale_secrets() == [path]


def test_symlinks_other_users_folders_and_fresh_folders_stay(tmp_root, tmp_path_factory):
    """Sound (attacked, held): a symlink named like a secrets folder (another user's trap in a shared /tmp)
    is not followed, a folder of another user is not touched, a fresh folder (a running task's) stays."""
    target_root = tmp_path_factory.mktemp("victim")
    victim, victim_file = _folder(target_root, "precious", 48)
    os.symlink(victim, os.path.join(tmp_root, SECRETS_DIR_PREFIX + "trap"))
    old = time.time() - 48 * 3600
    os.utime(os.path.join(tmp_root, SECRETS_DIR_PREFIX + "trap"), (old, old), follow_symlinks=False)
    theirs, _ = _folder(tmp_root, SECRETS_DIR_PREFIX + "other-user", 48)
    if os.getuid() == 0:
        os.chown(theirs, 54321, 54321)
    fresh, _ = _folder(tmp_root, SECRETS_DIR_PREFIX + "fresh", 1)
    stale, _ = _folder(tmp_root, SECRETS_DIR_PREFIX + "stale", 25)
    assert remove_stale_secrets() == [stale]
    assert os.path.exists(victim_file) and os.path.islink(os.path.join(tmp_root, SECRETS_DIR_PREFIX + "trap"))
    assert os.path.exists(fresh)
    if os.getuid() == 0:
        assert os.path.exists(theirs)


def test_a_folder_in_the_future_stays_and_two_sweeps_agree(tmp_root):
    """Sound: a clock set back (mtime ahead of now) keeps folders; two sweeps one after the other remove a
    stale folder once and the second reports nothing (a sweep reports folders gone after it)."""
    path, _ = _folder(tmp_root, SECRETS_DIR_PREFIX + "future", -48)
    stale, _ = _folder(tmp_root, SECRETS_DIR_PREFIX + "stale", 25)
    assert remove_stale_secrets() == [stale]
    assert remove_stale_secrets() == []
    assert os.path.exists(path)
