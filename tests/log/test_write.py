"""write_table: parquet files + one commit; validation first, nothing left behind on failure."""
from __future__ import annotations

import datetime as dt
import json
import os
import re

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import (ConcurrentModificationError, DeltaTable, InvalidArgumentError,
                                        UnsupportedFeatureError)
from airflow_provider_delta.log.write.writer import escape_partition_name, partition_dir

FILE_NAME = re.compile(r"^part-\d{5}-[0-9a-f-]{36}\.c000\.snappy\.parquet$")


def tree(path) -> set[str]:
    """Every file under ``path`` (relative), to prove that nothing was written."""
    out = set()
    for root, _dirs, files in os.walk(path):
        for f in files:
            out.add(os.path.relpath(os.path.join(root, f), path))
    return out


def data(n: int = 4, offset: int = 0) -> pa.Table:
    return pa.table({
        "id": pa.array(range(offset, offset + n), pa.int64()),
        "name": [f"n{i}" for i in range(offset, offset + n)],
        "p": (["a/b", "x y", None, "a/b", "100%"] * n)[:n],
        "ts": pa.array([dt.datetime(2024, 1, 1, 0, 0, i) for i in range(n)], pa.timestamp("us", tz="UTC")),
    })


def rows(table: DeltaTable, version: int | None = None) -> list[dict]:
    return sorted(table.snapshot(version=version).to_pyarrow().to_pylist(), key=lambda r: r["id"])


def test_hive_style_escaping_matches_spark():
    assert escape_partition_name("a/b") == "a%2Fb"
    assert escape_partition_name("x y") == "x y"
    assert escape_partition_name("100%") == "100%25"
    assert escape_partition_name('a:b=c?d#e"f\\g{h[i]j^k*l\'m') == "a%3Ab%3Dc%3Fd%23e%22f%5Cg%7Bh%5Bi%5Dj%5Ek%2Al%27m"
    assert escape_partition_name("tab\tnew\nline\x7f") == "tab%09new%0Aline%7F"
    assert escape_partition_name("ünï") == "ünï"
    assert partition_dir(["a", "b"], {"a": "1", "b": None}) == "a=1/b=__HIVE_DEFAULT_PARTITION__"


def test_create_append_overwrite_round_trip(tmp_path):
    t = DeltaTable(str(tmp_path))
    assert t.write(data(5), partition_by=["p"]) == 0
    expected = sorted(data(5).to_pylist(), key=lambda r: r["id"])
    assert [{k: r[k] for k in ("id", "name", "p", "ts")} for r in rows(t)] == expected
    snap = t.snapshot()
    assert snap.partition_columns == ("p",)
    files = snap.files().to_pylist()
    dirs = sorted({f["path"].rsplit("/", 1)[0] for f in files})
    assert dirs == ["p=100%25", "p=__HIVE_DEFAULT_PARTITION__", "p=a%2Fb", "p=x y"]
    for f in files:
        assert FILE_NAME.match(f["path"].rsplit("/", 1)[1])
        pv = dict(f["partition_values"])
        # partition columns are not stored in the files
        stored = pq.read_schema(os.path.join(tmp_path, f["path"]))
        assert stored.names == ["id", "name", "ts"]
        stats = json.loads(f["stats"])
        assert stats["numRecords"] == pq.read_metadata(os.path.join(tmp_path, f["path"])).num_rows
        assert set(stats["nullCount"]) == {"id", "name", "ts"}
        assert f["size"] == os.path.getsize(os.path.join(tmp_path, f["path"]))
        assert pv["p"] in ("a/b", "x y", "100%", None)
    # the log stores paths URL-encoded (so %2F becomes %252F), like Delta Spark
    add_paths = [a["add"]["path"] for a in t.read_commit(0) if "add" in a]
    assert any(p.startswith("p=a%252Fb/") for p in add_paths)
    assert any(p.startswith("p=x%20y/") for p in add_paths)

    assert t.write(data(3, offset=10)) == 1
    assert [r["id"] for r in rows(t)] == [0, 1, 2, 3, 4, 10, 11, 12]
    info = t.read_commit(1)[0]["commitInfo"]
    assert info["operation"] == "WRITE" and info["operationParameters"] == {"mode": "Append", "partitionBy": '["p"]'}
    assert info["operationMetrics"]["numOutputRows"] == "3" and info["isBlindAppend"] is True

    live_before_overwrite = t.snapshot().files().num_rows
    assert t.write(data(2, offset=100), mode="overwrite") == 2
    assert [r["id"] for r in rows(t)] == [100, 101]
    info = t.read_commit(2)[0]["commitInfo"]
    assert info["operationParameters"]["mode"] == "Overwrite" and info["isBlindAppend"] is False
    assert int(info["operationMetrics"]["numRemovedFiles"]) == live_before_overwrite
    # time travel still sees the old rows
    assert [r["id"] for r in rows(t, 1)] == [0, 1, 2, 3, 4, 10, 11, 12]


def test_rows_per_file_and_empty_writes(tmp_path):
    t = DeltaTable(str(tmp_path))
    t.write(data(10).drop(["p"]), max_rows_per_file=3)
    assert t.snapshot().files().num_rows == 4
    v = t.write(data(0).drop(["p"]))
    assert t.snapshot().version == v and t.snapshot().files().num_rows == 4
    t.write(data(0).drop(["p"]), mode="overwrite")
    assert t.snapshot().files().num_rows == 0 and rows(t) == []


def test_schema_is_conformed_by_name_with_lossless_widening(tmp_path):
    t = DeltaTable(str(tmp_path))
    t.write(pa.table({"id": pa.array([1], pa.int64()), "f": pa.array([1.0], pa.float64()), "s": ["a"]}))
    # columns out of order, narrower numbers, a missing nullable column
    t.write(pa.table({"f": pa.array([2.5], pa.float32()), "id": pa.array([2], pa.int8())}))
    got = rows(t)
    assert got == [{"id": 1, "f": 1.0, "s": "a"}, {"id": 2, "f": 2.5, "s": None}]
    assert t.snapshot().schema.field("id").type == pa.int64()


@pytest.mark.parametrize("bad, match", [
    (pa.table({"id": [1], "extra": [1]}), "extra"),
    (pa.table({"ID": [1]}), "did you mean 'id'"),
    (pa.table({"id": ["not a number"]}), "schema mismatch"),
    (pa.table({"id": pa.array([1.5], pa.float64())}), "schema mismatch"),
    (pa.table({"req": pa.array([None], pa.int32())}), "not nullable"),
    (pa.table({"id": [1]}), "non-nullable column 'req' is missing"),
])
def test_schema_mismatch_writes_nothing(tmp_path, bad, match):
    t = DeltaTable.create(str(tmp_path), pa.schema([("id", pa.int64()), pa.field("req", pa.int32(), nullable=False)]))
    before = tree(tmp_path)
    with pytest.raises(InvalidArgumentError, match=match):
        t.write(bad)
    assert tree(tmp_path) == before


@pytest.mark.parametrize("kwargs", [
    {"mode": "upsert"},
    {"partition_by": ["id"]},
    {"properties": {"x": "1"}},
    {"overwrite_schema": True},
    {"max_rows_per_file": 0},
])
def test_bad_arguments_write_nothing(tmp_path, kwargs):
    t = DeltaTable(str(tmp_path))
    t.write(pa.table({"id": [1], "v": ["a"]}))
    before = tree(tmp_path)
    with pytest.raises(InvalidArgumentError):
        t.write(pa.table({"id": [2], "v": ["b"]}), **kwargs)
    assert tree(tmp_path) == before


def test_bad_data_for_a_new_table_writes_nothing(tmp_path):
    t = DeltaTable(str(tmp_path / "t"))
    with pytest.raises(InvalidArgumentError):
        t.write({"id": [1]})
    with pytest.raises(InvalidArgumentError):
        t.write(pa.table({"id": [1], "p": [2]}), partition_by=["nope"])
    with pytest.raises(InvalidArgumentError):
        t.write(pa.table({"u": pa.array([1], pa.uint64())}))
    assert not (tmp_path / "t").exists() or tree(tmp_path / "t") == set()


def test_overwrite_schema_replaces_schema_and_partitioning(tmp_path):
    t = DeltaTable(str(tmp_path))
    t.write(data(3), partition_by=["p"])
    table_id = t.snapshot().metadata.id
    t.write(pa.table({"k": ["x", "y"], "v": [1.0, 2.0]}), mode="overwrite", overwrite_schema=True, partition_by=["k"])
    snap = t.snapshot()
    assert snap.schema.names == ["k", "v"] and snap.partition_columns == ("k",)
    assert snap.metadata.id == table_id
    assert sorted(r["k"] for r in snap.to_pyarrow().to_pylist()) == ["x", "y"]


def test_failed_commit_deletes_the_data_files(tmp_path):
    t = DeltaTable(str(tmp_path))
    t.write(pa.table({"id": [1]}))
    before = tree(tmp_path)
    other = DeltaTable(str(tmp_path))
    fired = []

    def clock_that_races():
        # the first tick of our commit: another writer changes the table's metadata first
        if not fired:
            fired.append(1)
            with other.transaction(operation="SET TBLPROPERTIES") as txn:
                txn.set_properties({"owner": "someone else"})
        return 1_800_000_000_000

    with pytest.raises(ConcurrentModificationError) as e:
        t.write(pa.table({"id": [2]}), clock=clock_that_races)
    assert e.value.reason == "metadata_changed"
    after = tree(tmp_path)
    new = after - before
    assert new == {f"_delta_log/{1:020d}.json"}     # only the winner's commit; our parquet file is gone


def test_column_mapping_tables_are_not_written(tmp_path):
    (tmp_path / "_delta_log").mkdir()
    schema = {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {
        "delta.columnMapping.id": 1, "delta.columnMapping.physicalName": "col-1"}}]}
    lines = [{"protocol": {"minReaderVersion": 2, "minWriterVersion": 5}},
             {"metaData": {"id": "cm", "format": {"provider": "parquet", "options": {}},
                           "schemaString": json.dumps(schema), "partitionColumns": [],
                           "configuration": {"delta.columnMapping.mode": "name",
                                             "delta.columnMapping.maxColumnId": "1"}}}]
    (tmp_path / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    before = tree(tmp_path)
    with pytest.raises(UnsupportedFeatureError):
        DeltaTable(str(tmp_path)).write(pa.table({"id": [1]}))
    assert tree(tmp_path) == before


def test_writes_to_ict_tables_carry_in_commit_timestamps(tmp_path):
    t = DeltaTable(str(tmp_path))
    t.write(pa.table({"id": [1]}), properties={"delta.enableInCommitTimestamps": "true"},
            clock=lambda: 1_800_000_000_000)
    t.write(pa.table({"id": [2]}), clock=lambda: 1_700_000_000_000)
    assert t.read_commit(1)[0]["commitInfo"]["inCommitTimestamp"] == 1_800_000_000_001


def test_partition_values_of_typed_columns(tmp_path):
    t = DeltaTable(str(tmp_path))
    tbl = pa.table({"d": pa.array([dt.date(2024, 2, 29), None], pa.date32()), "i": pa.array([7, 7], pa.int32()),
                    "b": [True, False], "x": [1, 2]})
    t.write(tbl, partition_by=["d", "i", "b"])
    pvs = sorted((tuple(sorted(dict(r["partition_values"]).items())) for r in t.snapshot().files().to_pylist()),
                 key=str)
    assert (("b", "true"), ("d", "2024-02-29"), ("i", "7")) in pvs
    assert (("b", "false"), ("d", None), ("i", "7")) in pvs
    got = sorted(t.snapshot().to_pyarrow().to_pylist(), key=lambda r: r["x"])
    assert got == sorted(tbl.to_pylist(), key=lambda r: r["x"])
