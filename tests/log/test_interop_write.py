"""Interop with delta-rs (``deltalake``): it reads what we write, we append to what it wrote."""
from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pytest

deltalake = pytest.importorskip("deltalake")

from airflow_provider_delta.log import DeltaTable  # noqa: E402


def sample(n: int, offset: int = 0) -> pa.Table:
    ids = list(range(offset, offset + n))
    return pa.table({
        "id": pa.array(ids, pa.int64()),
        "small": pa.array([i % 100 for i in ids], pa.int16()),
        "price": pa.array([decimal.Decimal(i) / 4 for i in ids], pa.decimal128(12, 2)),
        "ratio": pa.array([i / 3 for i in ids], pa.float64()),
        "name": [None if i % 7 == 0 else f"name-{i}-" + "x" * (i % 40) for i in ids],
        "day": pa.array([dt.date(2024, 1, 1) + dt.timedelta(days=i % 3) for i in ids], pa.date32()),
        "at": pa.array([dt.datetime(2024, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=i) for i in ids],
                       pa.timestamp("us", tz="UTC")),
        "region": [["eu/west", "us", None][i % 3] for i in ids],
        "tags": [[f"t{i}"] for i in ids],
        "nested": [{"a": i, "b": str(i)} for i in ids],
    })


def sorted_rows(t: pa.Table, columns: list[str]) -> list[dict]:
    return sorted(t.select(columns).to_pylist(), key=lambda r: r["id"])


def their_rows(uri: str, version: int | None = None) -> pa.Table:
    dl = deltalake.DeltaTable(uri, version=version) if version is not None else deltalake.DeltaTable(uri)
    return dl.to_pyarrow_table()


@pytest.mark.parametrize("partition_by", [None, ["region"], ["region", "day"]])
def test_delta_rs_reads_what_we_write(tmp_path, partition_by):
    uri = str(tmp_path)
    ours = DeltaTable(uri)
    cols = sample(1).column_names
    ours.write(sample(20), partition_by=partition_by)
    ours.write(sample(15, offset=100))
    ours.write(sample(5, offset=1000), mode="overwrite")
    ours.write(sample(3, offset=2000))
    dl = deltalake.DeltaTable(uri)
    assert dl.version() == ours.latest_version() == 3
    expected = pa.concat_tables([sample(5, offset=1000), sample(3, offset=2000)])
    assert sorted_rows(dl.to_pyarrow_table(), cols) == sorted_rows(expected, cols)
    assert sorted_rows(their_rows(uri, 1), cols) == sorted_rows(
        pa.concat_tables([sample(20), sample(15, offset=100)]), cols)
    assert [h["operation"] for h in dl.history()] == [h["operation"] for h in ours.history()] == ["WRITE"] * 4
    assert list(dl.metadata().partition_columns) == list(partition_by or [])


def test_delta_rs_parses_our_statistics(tmp_path):
    uri = str(tmp_path)
    DeltaTable(uri).write(sample(30), max_rows_per_file=10)
    adds = pa.table(deltalake.DeltaTable(uri).get_add_actions(flatten=True)).to_pylist()
    assert len(adds) == 3
    ours = {f["path"]: json.loads(f["stats"]) for f in DeltaTable(uri).snapshot().files().to_pylist()}
    for a in adds:
        s = ours[a["path"]]
        assert a["num_records"] == s["numRecords"] == 10
        assert a["min.id"] == s["minValues"]["id"] and a["max.id"] == s["maxValues"]["id"]
        assert a["null_count.name"] == s["nullCount"]["name"]
        assert a["min.nested.a"] == s["minValues"]["nested"]["a"]


def test_delta_rs_reads_our_in_commit_timestamp_table(tmp_path):
    uri = str(tmp_path)
    ours = DeltaTable(uri)
    ours.write(sample(4), properties={"delta.enableInCommitTimestamps": "true"})
    ours.write(sample(4, offset=10))
    ours.write(sample(2, offset=20))
    ours.enable_in_commit_timestamps()  # already on: no commit
    dl = deltalake.DeltaTable(uri)
    assert dl.version() == 2
    assert dl.to_pyarrow_table().num_rows == 10


def test_we_append_to_a_delta_rs_table_and_it_reads_the_result(tmp_path):
    uri = str(tmp_path)
    first = pa.table({"id": pa.array([1, 2, 3], pa.int64()), "p": ["a", "b", "a"], "v": [1.5, 2.5, None]})
    deltalake.write_deltalake(uri, first, partition_by=["p"])
    ours = DeltaTable(uri)
    assert ours.write(pa.table({"id": [4, 5], "p": ["c", "a"], "v": [4.0, 5.0]})) == 1
    dl = deltalake.DeltaTable(uri)
    assert dl.version() == 1
    got = sorted(dl.to_pyarrow_table().select(["id", "p", "v"]).to_pylist(), key=lambda r: r["id"])
    assert got == [{"id": 1, "p": "a", "v": 1.5}, {"id": 2, "p": "b", "v": 2.5}, {"id": 3, "p": "a", "v": None},
                   {"id": 4, "p": "c", "v": 4.0}, {"id": 5, "p": "a", "v": 5.0}]
    # and back: delta-rs appends after us, we read it
    deltalake.write_deltalake(uri, pa.table({"id": [6], "p": ["b"], "v": [6.0]}), mode="append")
    assert ours.latest_version() == 2
    assert sorted(r["id"] for r in ours.snapshot().to_pyarrow().to_pylist()) == [1, 2, 3, 4, 5, 6]
    # overwrite by us removes delta-rs's files for delta-rs too
    ours.write(pa.table({"id": [7], "p": ["z"], "v": [7.0]}), mode="overwrite")
    assert deltalake.DeltaTable(uri).to_pyarrow_table().select(["id"]).to_pylist() == [{"id": 7}]


def test_transaction_removes_are_honoured_by_delta_rs(tmp_path):
    uri = str(tmp_path)
    ours = DeltaTable(uri)
    ours.write(pa.table({"id": [1, 2]}))
    ours.write(pa.table({"id": [3]}))
    victim = [f["path"] for f in ours.snapshot().files().to_pylist()
              if json.loads(f["stats"])["minValues"]["id"] == 3][0]
    with ours.transaction(operation="DELETE", operation_parameters={"predicate": ["id = 3"]}) as txn:
        txn.remove_file(victim)
    dl = deltalake.DeltaTable(uri)
    assert sorted(r["id"] for r in dl.to_pyarrow_table().to_pylist()) == [1, 2]
    assert dl.history()[0]["operation"] == "DELETE"
