"""Breaking restore and clone in the log layer (findings of the break-restore review)."""
from __future__ import annotations

import os
import time

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


def test_clone_of_a_clone_inside_the_original_table_is_refused(tmp_path):
    original = DeltaTable.create(str(tmp_path / "a"), SCHEMA)
    original.write(pa.table({"id": [1], "p": ["a"]}))
    first = original.clone(str(tmp_path / "b"))
    inner = str(tmp_path / "a" / "c")
    with pytest.raises(InvalidArgumentError):
        first.clone(inner)            # its files are the original's: it would live inside their table
    assert not os.path.exists(inner)
    with pytest.raises(InvalidArgumentError):
        first.clone(str(tmp_path / "a" / "p=x" / "deeper"))     # anywhere below the original's root
    second = first.clone(str(tmp_path / "elsewhere"))            # outside every referenced table: fine
    assert second.snapshot().to_pyarrow().column("id").to_pylist() == [1]


def test_clone_of_a_clone_whose_original_is_gone_refuses_the_files_folder(tmp_path):
    """With no _delta_log above a referenced file any more, the file's own folder stands for its table."""
    import shutil
    original = DeltaTable.create(str(tmp_path / "a"), SCHEMA)
    original.write(pa.table({"id": [1], "p": ["a"]}))
    first = original.clone(str(tmp_path / "b"))
    shutil.rmtree(tmp_path / "a" / "_delta_log")
    with pytest.raises(InvalidArgumentError):
        first.clone(str(tmp_path / "a" / "c"))
    assert not os.path.exists(tmp_path / "a" / "c")


def test_after_the_source_is_overwritten_and_vacuumed_the_clone_fails_typed_and_cannot_restore(tmp_path):
    """The other direction of a shallow clone (as Delta Spark): a vacuum of the source deletes files the
    clone still lists; reading the clone then raises DataFileNotFoundError (not a bare OSError), and
    restoring the clone to its version 0 is refused with nothing written."""
    from airflow_provider_delta.log import DataFileNotFoundError
    src = DeltaTable.create(str(tmp_path / "src"), SCHEMA)
    src.write(pa.table({"id": [1], "p": ["a"]}))
    clone = src.clone(str(tmp_path / "clone"))
    clone.write(pa.table({"id": [2], "p": ["b"]}))
    src.write(pa.table({"id": [9], "p": ["z"]}), mode="overwrite")
    # a second on: the overwrite's tombstone may carry this very millisecond, and vacuum keeps a file
    # whose tombstone is not older than the cutoff
    done = src.vacuum(retention_hours=0, enforce_retention=False, dry_run=False,
                      now_ms=int(time.time() * 1000) + 1000)
    assert done["num_files_deleted"] == 1
    with pytest.raises(DataFileNotFoundError):
        clone.snapshot().to_pyarrow()
    clone.write(pa.table({"id": [3], "p": ["c"]}), mode="overwrite")
    log = sorted(os.listdir(tmp_path / "clone" / "_delta_log"))
    with pytest.raises(DataFileNotFoundError):
        clone.restore(1)
    assert sorted(os.listdir(tmp_path / "clone" / "_delta_log")) == log
    assert sorted(clone.snapshot().to_pyarrow().column("id").to_pylist()) == [3]


def _repartitioned(tmp_path) -> DeltaTable:
    """Partitioned by p, then overwritten partitioned by q (the replay parses both keys)."""
    table = DeltaTable(str(tmp_path / "t"))
    table.write(pa.table({"p": ["a", "b"], "q": ["x", "y"], "i": [1, 2]}), partition_by=["p"])
    table.write(pa.table({"p": ["a", "b"], "q": ["x", "y"], "i": [3, 4]}), mode="overwrite", partition_by=["q"],
                overwrite_schema=True)
    table.write(pa.table({"p": ["c"], "q": [None], "i": [5]}))
    return table


# Found: after an overwrite that changed the partitioning, snapshot.files() listed the old partition
# column as null in every file's partition values, and clone refused its own adds ("has partition values
# for ['p', 'q'] but the table is partitioned by ['q']"); OPTIMIZE had worked around it for itself.
def test_files_list_only_the_partition_columns_of_their_version(tmp_path):
    table = _repartitioned(tmp_path)
    values = table.snapshot().files().column("partition_values").to_pylist()
    assert sorted(values, key=str) == sorted([[("q", "x")], [("q", "y")], [("q", None)]], key=str)
    assert table.snapshot(version=0).files().column("partition_values").to_pylist() in (
        [[("p", "a")], [("p", "b")]], [[("p", "b")], [("p", "a")]])


def test_clone_restore_and_optimize_after_the_partitioning_changed(tmp_path):
    table = _repartitioned(tmp_path)
    rows = sorted(table.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["i"])
    clone = table.clone(str(tmp_path / "c"))
    assert sorted(clone.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["i"]) == rows
    assert clone.snapshot().partition_columns == ("q",)
    table.restore(0)                                    # back to the p partitioning: its files, its keys
    assert table.snapshot().partition_columns == ("p",)
    assert sorted(r["i"] for r in table.snapshot().to_pyarrow().to_pylist()) == [1, 2]
    table.restore(2)                                    # and forward again
    assert sorted(table.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["i"]) == rows
    table.write(pa.table({"p": ["d"], "q": ["x"], "i": [6]}))
    assert table.optimize()["numFilesAdded"] == 1       # the two files of q=x
    assert sorted(r["i"] for r in table.snapshot().to_pyarrow().to_pylist()) == [3, 4, 5, 6]
