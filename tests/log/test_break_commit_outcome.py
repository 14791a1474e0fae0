"""break-spark review: a commit-file put that raised at a version another writer already holds."""
from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

SCHEMA = pa.schema([("id", pa.int64())])


class LosesTheRaceThenTimesOut:
    """A real local store: before our next commit-file put, another writer commits that version;
    our put then times out (a conditional PUT cannot land on an existing object)."""

    def __init__(self, inner: Any, uri: str):
        self.inner, self.uri, self.armed = inner, uri, True

    def put_if_absent(self, target: str, data: bytes) -> bool:
        if not (self.armed and "_delta_log" in target and target.endswith(".json")):
            return self.inner.put_if_absent(target, data)
        self.armed = False
        DeltaTable(self.uri).write(pa.table({"id": [9]}))     # the other writer wins this version
        raise TimeoutError("PUT timed out")

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def test_a_put_that_raised_on_a_version_another_writer_holds_retries_at_the_next(tmp_path):
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA).write(pa.table({"id": [1]}))
    table = DeltaTable(uri)
    table.storage.files = LosesTheRaceThenTimesOut(table.storage.files, uri)
    assert table.write(pa.table({"id": [2]})) == 3
    assert sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 9]
