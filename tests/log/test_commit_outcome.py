"""A commit the store reports as failed but that landed is found in the log, never repeated or undone.

The store is the real local one; only its answers to the commit-file put are altered
(the file is really written, or really not): a timed-out PUT whose conditional retry is
refused with 412 because the first request landed answers "exists"; a lost connection
raises after (or before) the write.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CommitOutcomeUnknownError, DeltaTable
from misreporting_store import misreport

SCHEMA = pa.schema([("id", pa.int64())])


def _table(tmp_path: Path, lands: bool, answer: str) -> DeltaTable:
    DeltaTable.create(str(tmp_path / "t"), SCHEMA).write(pa.table({"id": [1]}))
    return misreport(DeltaTable(str(tmp_path / "t")), lands, answer)


def _data_files(tmp_path: Path) -> set[str]:
    return {p.name for p in (tmp_path / "t").glob("*.parquet")}


@pytest.mark.parametrize("answer", ["exists", "raises"])
def test_a_landed_commit_reported_failed_is_ours_once(tmp_path, answer):
    table = _table(tmp_path, lands=True, answer=answer)
    assert table.write(pa.table({"id": [2]})) == 2          # blind append without an app id
    fresh = DeltaTable(str(tmp_path / "t"))
    assert fresh.latest_version() == 2                       # not committed again as version 3
    assert sorted(fresh.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2]
    assert len(_data_files(tmp_path)) == 2


def test_the_same_with_an_app_id_is_not_taken_for_a_concurrent_writer(tmp_path):
    table = _table(tmp_path, lands=True, answer="exists")
    with table.transaction() as txn:
        txn.set_txn("app", 7)
    assert txn.version == 2 and DeltaTable(str(tmp_path / "t")).snapshot().transaction_version("app") == 7


def test_a_put_that_raised_without_landing_is_unknown_and_keeps_the_files(tmp_path):
    table = _table(tmp_path, lands=False, answer="raises")
    before = _data_files(tmp_path)
    with pytest.raises(CommitOutcomeUnknownError, match="may still land"):
        table.write(pa.table({"id": [2]}))
    assert DeltaTable(str(tmp_path / "t")).latest_version() == 1
    assert len(_data_files(tmp_path) - before) == 1           # kept: the PUT could still land


def test_a_known_failure_still_deletes_what_it_wrote(tmp_path):
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    with pytest.raises(Exception):
        table.write(pa.table({"id": ["not a number"]}))
    assert _data_files(tmp_path) == set()
