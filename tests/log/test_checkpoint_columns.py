"""Which checkpoint columns a snapshot decodes: the file statistics' null counts let it skip
tombstones a checkpoint does not hold and file-action fields that are null in every row;
a checkpoint without statistics is read whole. The answers never change."""
from __future__ import annotations

import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import CorruptLogError, DeltaTable
from airflow_provider_delta.log.read.checkpoint_reader import _file_columns
from airflow_provider_delta.log.base.parquet_file import ParquetFile

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def _table(path, with_removes: bool) -> str:
    t = DeltaTable.create(str(path), SCHEMA, partition_by=["p"],
                          properties={"delta.deletedFileRetentionDuration": "interval 3650 days",
                                      "delta.logRetentionDuration": "interval 3650 days"})
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "p": ["a", "b"]}), mode="overwrite" if with_removes and i == 2 else "append")
    t.checkpoint()
    return str(path / "_delta_log" / "00000000000000000003.checkpoint.parquet")


def _state(path) -> tuple:
    snap = DeltaTable(str(path)).snapshot()
    files = snap.files().sort_by("path")
    tombstones = snap.tombstones().sort_by("path")
    return files.to_pylist(), tombstones.to_pylist()


def _without_statistics(checkpoint: str) -> None:
    pq.write_table(pq.read_table(checkpoint), checkpoint, write_statistics=False)


def test_a_checkpoint_without_tombstones_skips_the_remove_columns(tmp_path):
    cp = _table(tmp_path / "t", with_removes=False)
    cols = _file_columns(ParquetFile(cp))
    assert list(cols) == ["add"]
    assert "add.path" in cols["add"] and "add.stats" in cols["add"]
    assert "add.partitionValues" in cols["add"] and "add.tags" in cols["add"]   # maps: empty is not null
    assert not any(c.startswith("add.deletionVector") for c in cols["add"])    # null in every row


def test_tombstones_in_a_checkpoint_are_read(tmp_path):
    cp = _table(tmp_path / "t", with_removes=True)
    assert "remove" in _file_columns(ParquetFile(cp))
    files, tombstones = _state(tmp_path / "t")
    assert len(files) == 2 and len(tombstones) == 4


def test_the_same_answers_with_and_without_statistics(tmp_path):
    for with_removes in (False, True):
        table = tmp_path / f"t{with_removes}"
        cp = _table(table, with_removes)
        before = _state(table)
        copy = tmp_path / f"copy{with_removes}"
        shutil.copytree(table, copy)
        _without_statistics(str(copy / "_delta_log" / "00000000000000000003.checkpoint.parquet"))
        every = _file_columns(ParquetFile(str(copy / "_delta_log" / "00000000000000000003.checkpoint.parquet")))
        assert set(every) == {"add", "remove"}                      # unknown null counts: read it all
        assert any(c.startswith("add.deletionVector") for c in every["add"])
        assert len(every["add"]) > len(_file_columns(ParquetFile(cp))["add"])
        assert _state(copy) == before


def test_deletion_vectors_in_a_checkpoint_are_read(corpus):
    table = corpus / "delta-golden" / "dv-partitioned-with-checkpoint"
    cp = ParquetFile(str(table / "_delta_log" / "00000000000000000010.checkpoint.parquet"))
    assert any(c.startswith("add.deletionVector") for c in _file_columns(cp)["add"])
    dvs = DeltaTable(str(table)).snapshot(version=10).files().column("deletion_vector")
    assert len(dvs) - dvs.null_count == 3


def test_adds_without_paths_are_still_refused_as_corrupt(tmp_path):
    """Skipping a kind whose leaves are all null must not hide adds that lost their path."""
    cp = _table(tmp_path / "t", with_removes=False)
    t = pq.read_table(cp)
    add = t.column("add").combine_chunks()
    fields = [add.field(i) if add.type.field(i).name != "path" else pa.nulls(len(add), pa.string())
              for i in range(add.type.num_fields)]
    broken = pa.StructArray.from_arrays(fields, fields=list(add.type), mask=pc.invert(add.is_valid()))
    pq.write_table(t.set_column(t.schema.get_field_index("add"), "add", broken), cp)
    assert "add" in _file_columns(ParquetFile(cp))
    with pytest.raises(CorruptLogError, match="without a path"):
        DeltaTable(str(tmp_path / "t")).snapshot().files()
