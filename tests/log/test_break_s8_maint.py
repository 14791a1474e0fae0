"""s8-break-sm review of #24 (merge e28acab), log layer: the rollback guard's bad input.

Tried and held (no finding): ``expected_version`` as True, floats, numeric strings, bytes is a
typed InvalidArgumentError with nothing written; a wrong version is UnexpectedVersionError with
nothing written. Clone location spellings on a local disk (``file:``, ``file://localhost``,
``/./``, ``..``, ``//``, a partition folder, the source's parent) are all refused; the object
store spelling ``s3a://`` is not (tests/objectstore/test_break_s8_clone_schemes.py). The
column-mapping findings need Delta Spark-written tables: tests/interop/test_break_s8_maint_spark.py.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError, UnexpectedVersionError

IDS = pa.schema([("id", pa.int64())])


def _log_files(uri: str) -> list[str]:
    return sorted(os.listdir(os.path.join(uri, "_delta_log")))


def _three_writes(tmp_path) -> str:
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, IDS)
    for i in range(3):
        table.write(pa.table({"id": [i]}, schema=IDS))
    return uri


@pytest.mark.parametrize("bad", [True, 3.0, "3", " 3", b"3", 3.5])
def test_restore_guard_refuses_a_non_integer_expected_version_writing_nothing(tmp_path, bad):
    uri = _three_writes(tmp_path)
    before = _log_files(uri)
    with pytest.raises(InvalidArgumentError):
        DeltaTable(uri).restore(1, expected_version=bad)
    assert _log_files(uri) == before


@pytest.mark.parametrize("expected", [-1, 2, 4])
def test_restore_guard_refuses_another_version_writing_nothing(tmp_path, expected):
    uri = _three_writes(tmp_path)
    before = _log_files(uri)
    with pytest.raises(UnexpectedVersionError):
        DeltaTable(uri).restore(1, expected_version=expected)
    assert _log_files(uri) == before
    assert DeltaTable(uri).restore(1, expected_version=3) == 4
