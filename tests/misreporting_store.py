"""A real local store whose answer to the next commit-file put is altered: for commit-outcome tests.

The commit file is really written (``lands=True``) or really not, and then the store answers as
a flaky object store would: ``"exists"`` (a timed-out PUT whose conditional retry is refused
with 412 because the first request landed) or ``"raises"`` (a timeout). Shared by
tests/log/test_commit_outcome.py, tests/spark/test_spark_commit_outcomes.py and the failure
matrix's Spark application (tests/spark/matrix_app.py).
"""
from __future__ import annotations

from typing import Any


class MisreportingFiles:
    """Wraps a storage backend (``table.storage.files``); only its next commit-file put misbehaves."""

    def __init__(self, inner: Any, lands: bool, answer: str):
        self.inner, self.lands, self.answer, self.armed = inner, lands, answer, True

    def put_if_absent(self, target: str, data: bytes) -> bool:
        if not (self.armed and "_delta_log" in target and target.endswith(".json")):
            return self.inner.put_if_absent(target, data)
        self.armed = False
        if self.lands:
            assert self.inner.put_if_absent(target, data)
        if self.answer == "exists":
            return False
        raise TimeoutError("PUT timed out")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def misreport(table: Any, lands: bool, answer: str) -> Any:
    """``table`` with its next commit-file put misreported; returns the table."""
    table.storage.files = MisreportingFiles(table.storage.files, lands, answer)
    return table
