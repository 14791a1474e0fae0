"""The failure matrix's Spark application: this package's entry point, with a pause at one step.

Run by spark-submit instead of ``airflow_provider_delta/spark/job.py`` (test_failure_matrix.py).
The job is the real one; ``MATRIX_KILL_AT`` names the step after which the driver announces
itself (its pid, in the file ``MATRIX_SIGNAL``) and waits until the file ``<MATRIX_SIGNAL>.go``
appears, so that the test can kill a process of its choice right there:

* ``written``   - Spark wrote the parquet files into the staging folder
* ``published`` - the files were moved into the table's partition folders
* ``committed`` - the commit is in the log
* ``reported``  - the result line is printed (the task has not seen the exit code yet)

``MATRIX_INJECT=lost`` makes the commit-file put fail with an unknown outcome (a timed-out PUT
that did not land): the store is the real local one, only its answer is altered.
"""
from __future__ import annotations

import json
import os
import sys
import time

from airflow_provider_delta.spark import commit as commit_module
from airflow_provider_delta.spark import job as job_module

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))   # tests/
from misreporting_store import misreport  # noqa: E402

KILL_AT = os.environ.get("MATRIX_KILL_AT", "")
SIGNAL = os.environ.get("MATRIX_SIGNAL", "")
INJECT = os.environ.get("MATRIX_INJECT", "")


def pause(step: str) -> None:
    if step != KILL_AT or not SIGNAL:
        return
    with open(SIGNAL + ".tmp", "w") as f:
        json.dump({"step": step, "driver_pid": os.getpid()}, f)
    os.rename(SIGNAL + ".tmp", SIGNAL)
    deadline = time.time() + 600
    while not os.path.exists(SIGNAL + ".go") and time.time() < deadline:
        time.sleep(0.1)


def _after(name: str, step: str) -> None:
    original = getattr(commit_module, name)

    def wrapped(*args, **kwargs):
        result = original(*args, **kwargs)
        pause(step)
        return result
    setattr(commit_module, name, wrapped)


_after("write_to_staging", "written")
_after("publish", "published")
_commit_dataframe = commit_module.commit_dataframe


def commit_then_pause(df, table, *args, **kwargs):
    if INJECT == "lost":       # the commit-file put times out without landing
        misreport(table, lands=False, answer="raises")
    version = _commit_dataframe(df, table, *args, **kwargs)
    pause("committed")
    return version


commit_module.commit_dataframe = commit_then_pause

if __name__ == "__main__":
    code = job_module.main()
    pause("reported")
    sys.exit(code)
