"""Breaking restore and clone in the log layer (findings of the break-restore review)."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def test_clone_inside_its_source_through_a_symlink_is_refused(tmp_path):
    """clone refuses a target inside the source (the source's vacuum would delete the clone's own
    files), but compares the locations as written: through a symlink to the source, a clone inside
    it is accepted, and the source's vacuum then lists the clone's new data file for deletion."""
    src = DeltaTable.create(str(tmp_path / "src"), SCHEMA)
    src.write(pa.table({"id": [1], "p": ["a"]}))
    os.symlink(tmp_path / "src", tmp_path / "link")
    inner = str(tmp_path / "src" / "inner")
    with pytest.raises(InvalidArgumentError):
        DeltaTable(str(tmp_path / "link")).clone(inner)
    assert not os.path.exists(inner)


@pytest.mark.xfail(strict=True, reason="the inside check compares the target with the direct source only: a clone of "
                   "a clone may be placed inside the original table, whose vacuum then deletes the clone's own files")
def test_clone_of_a_clone_inside_the_original_table_is_refused(tmp_path):
    original = DeltaTable.create(str(tmp_path / "a"), SCHEMA)
    original.write(pa.table({"id": [1], "p": ["a"]}))
    first = original.clone(str(tmp_path / "b"))
    inner = str(tmp_path / "a" / "c")
    with pytest.raises(InvalidArgumentError):
        first.clone(inner)            # its files are the original's: it would live inside their table
    assert not os.path.exists(inner)
