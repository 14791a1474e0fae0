"""The read path's own Arrow plumbing against pyarrow's public API.

``arrow_kernels`` calls compute kernels by name (no ``pyarrow.compute`` import),
``arrow_build.with_validity`` sets nulls without ``from_arrays(mask=)``, and
``parquet_file.ParquetFile`` reads through the compiled reader: each must give what
the pyarrow call it stands for gives. This test process may import pyarrow.compute
and pyarrow.parquet freely to compare.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base import arrow_build as ab
from airflow_provider_delta.log.base import arrow_kernels as ak
from airflow_provider_delta.log.base.parquet_file import ParquetFile

STRINGS = pa.array(["a", None, "b%c", "", "a", "zz"])
INTS = pa.array([3, None, -1, 7, 3, 0], pa.int64())
FLOATS = pa.array([1.5, float("nan"), None, -2.0, 1.5, 0.0])
MASK = pa.array([True, False, None, True, False, True])


@pytest.mark.parametrize("ours, theirs", [
    (lambda: ak.filter(STRINGS, MASK), lambda: STRINGS.filter(MASK)),
    (lambda: ak.filter(pa.table({"s": STRINGS, "i": INTS}), MASK),
     lambda: pa.table({"s": STRINGS, "i": INTS}).filter(MASK)),
    (lambda: ak.take(STRINGS, pa.array([5, 0, 1])), lambda: STRINGS.take(pa.array([5, 0, 1]))),
    (lambda: ak.cast(INTS, pa.string()), lambda: INTS.cast(pa.string())),
    (lambda: ak.is_valid(STRINGS), lambda: pc.is_valid(STRINGS)),
    (lambda: ak.is_null(FLOATS), lambda: pc.is_null(FLOATS)),
    (lambda: ak.invert(MASK), lambda: pc.invert(MASK)),
    (lambda: ak.and_kleene(MASK, pc.invert(MASK)), lambda: pc.and_kleene(MASK, pc.invert(MASK))),
    (lambda: ak.or_(MASK, pc.invert(MASK)), lambda: pc.or_(MASK, pc.invert(MASK))),
    (lambda: ak.fill_null(INTS, ab.scalar(9, pa.int8())), lambda: pc.fill_null(INTS, 9)),
    (lambda: ak.if_else(MASK, INTS, ab.scalar(0, pa.int64())), lambda: pc.if_else(MASK, INTS, 0)),
    (lambda: ak.indices_nonzero(pc.fill_null(MASK, False)), lambda: pc.indices_nonzero(pc.fill_null(MASK, False))),
    (lambda: ak.is_in(STRINGS, pa.array(["a", None])), lambda: pc.is_in(STRINGS, value_set=pa.array(["a", None]))),
    (lambda: ak.index_in(STRINGS, pa.array(["zz", "a"])), lambda: pc.index_in(STRINGS, value_set=pa.array(["zz", "a"]))),
    (lambda: ak.min_max(INTS), lambda: pc.min_max(INTS)),
    (lambda: ak.unique(STRINGS), lambda: pc.unique(STRINGS)),
    (lambda: ak.dictionary_encode(STRINGS), lambda: pc.dictionary_encode(STRINGS)),
    (lambda: ak.equal(INTS, ab.scalar(3, pa.int64())), lambda: pc.equal(INTS, 3)),
    (lambda: ak.greater(INTS, ab.scalar(0, pa.int64())), lambda: pc.greater(INTS, 0)),
    (lambda: ak.is_nan(FLOATS), lambda: pc.is_nan(FLOATS)),
    (lambda: ak.match_substring(STRINGS, "%"), lambda: pc.match_substring(STRINGS, "%")),
    (lambda: ak.match_substring_regex(STRINGS, "^a$"), lambda: pc.match_substring_regex(STRINGS, "^a$")),
    (lambda: ak.utf8_lower(pa.array(["TRUE", None])), lambda: pc.utf8_lower(pa.array(["TRUE", None]))),
    (lambda: ak.replace_with_mask(STRINGS, pc.fill_null(MASK, False), pa.array(["x", "y", "w"])),
     lambda: pc.replace_with_mask(STRINGS, pc.fill_null(MASK, False), pa.array(["x", "y", "w"]))),
    (lambda: ak.join_element_wise(STRINGS, STRINGS, separator=ab.scalar("-")),
     lambda: pc.binary_join_element_wise(STRINGS, STRINGS, "-")),
    (lambda: ak.map_lookup(pa.array([[("k", "v")], None, []], pa.map_(pa.string(), pa.string())), ab.scalar("k")),
     lambda: pc.map_lookup(pa.array([[("k", "v")], None, []], pa.map_(pa.string(), pa.string())), "k", "first")),
])
def test_kernels_match_pyarrow_compute(ours, theirs):
    assert ours().equals(theirs())


def test_aggregates_as_python_values():
    assert ak.any_true(MASK) is True and ak.any_true(pa.array([False, None])) is False
    assert ak.sum_of(INTS) == 12 and ak.sum_of(pa.nulls(2, pa.int64())) is None
    assert ak.min_of(INTS) == -1


def test_cast_refuses_a_lossy_value_unless_told():
    with pytest.raises(pa.ArrowInvalid):
        ak.cast(pa.array([300]), pa.int8())
    assert ak.cast(pa.array([1.7]), pa.int64(), safe=False).to_pylist() == [1]


def test_filter_each_equals_one_by_one_and_raises_a_workers_error():
    chunks = [(pa.array(range(i, i + 1000)), pa.array([k % 3 == 0 for k in range(1000)])) for i in range(7)]
    assert [a.to_pylist() for a in ak.filter_each(chunks)] == [d.filter(m).to_pylist() for d, m in chunks]
    bad = chunks[:3] + [(pa.array([1, 2]), pa.array([True]))]   # mask of the wrong length
    with pytest.raises(pa.ArrowInvalid):
        ak.filter_each(bad)


@pytest.mark.parametrize("arr", [
    pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": None}, {"a": 3, "b": "z"}]),
    pa.array([{"a": 1, "b": "x"}, {"a": 2, "b": None}, {"a": 3, "b": "z"}, {"a": 4, "b": "q"}]).slice(1),
    pa.array([[1, 2], [], [3]], pa.list_(pa.int64())),
    pa.array([[("k", "v")], [], [("a", None)]], pa.map_(pa.string(), pa.string())),
])
def test_with_validity_sets_exactly_the_given_nulls(arr):
    valid = pa.array([True, False, True])
    out = ab.with_validity(arr, valid)
    assert out.type == arr.type
    assert out.to_pylist() == [v if ok else None for v, ok in zip(arr.to_pylist(), valid.to_pylist())]
    out.validate(full=True)
    assert ab.with_validity(arr, None) is arr


def test_parquet_file_reads_dotted_prefixes_like_pyarrow_parquet(tmp_path):
    t = pa.table({
        "add": pa.array([{"path": "p1", "dv": {"o": 1, "s": "x"}, "size": 3}, None]),
        "meta": pa.array([None, {"id": "m"}]),
    })
    path = str(tmp_path / "c.parquet")
    pq.write_table(t, path)
    theirs = pq.ParquetFile(path)
    with open(path, "rb") as f:      # local path (memory-mapped) and file object alike
        for source in (path, f):
            ours = ParquetFile(source)
            assert ours.schema_arrow == theirs.schema_arrow and ours.num_rows == 2
            for cols in (["add.path"], ["add.dv", "meta"], ["add.dv.s"], ["add"], None, ["nope"]):
                assert ours.read(columns=cols).equals(theirs.read(columns=cols)), cols


def test_parquet_file_refuses_a_file_that_is_not_parquet(tmp_path):
    p = tmp_path / "x.parquet"
    p.write_bytes(b"not parquet at all")
    with pytest.raises(pa.ArrowInvalid):
        ParquetFile(str(p))


def test_row_groups_with_values_by_null_counts(tmp_path):
    path = str(tmp_path / "g.parquet")
    with pq.ParquetWriter(path, pa.schema([("meta", pa.struct([("id", pa.string())])), ("n", pa.int64())])) as w:
        w.write_table(pa.table({"meta": pa.array([{"id": "m"}, None]), "n": [1, 2]}))   # group 0: a value
        w.write_table(pa.table({"meta": pa.nulls(3, pa.struct([("id", pa.string())])), "n": [3, 4, 5]}))
    no_stats = str(tmp_path / "s.parquet")
    pq.write_table(pa.table({"meta": pa.nulls(2, pa.struct([("id", pa.string())])), "n": [1, 2]}), no_stats,
                   write_statistics=False)
    f = ParquetFile(path)
    assert f.row_groups_with_values(["meta"]) == [0]
    assert f.row_groups_with_values(["n"]) == [0, 1]
    assert f.read(["meta"], row_groups=[0]).column("meta").to_pylist() == [{"id": "m"}, None]
    assert ParquetFile(no_stats).row_groups_with_values(["meta"]) == [0]   # unknown: read it


def test_our_checkpoint_keeps_the_non_file_rows_in_a_row_group_of_their_own(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    for i in range(3):
        t.write(pa.table({"id": [i]}), mode="append")
    t.checkpoint()
    f = ParquetFile(str(tmp_path / "t" / "_delta_log" / "00000000000000000003.checkpoint.parquet"))
    assert f.row_groups_with_values(["protocol", "metaData"]) == [0]
    first = f.read(["protocol", "metaData", "add"], row_groups=[0])
    assert first.column("add").null_count == first.num_rows        # no file rows in it
    assert f.read(["add"]).column("add").null_count < f.num_rows
    assert DeltaTable(str(tmp_path / "t")).snapshot().files().num_rows == 3


def test_our_checkpoint_stores_every_column_without_a_dictionary(tmp_path):
    """Paths and stats are unique per file: a dictionary would only fill up and fall back."""
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_by=["p"])
    for i in range(3):
        t.write(pa.table({"id": [i, i + 10], "p": ["a", "b"]}), mode="append")
    t.checkpoint()
    meta = pq.ParquetFile(str(tmp_path / "t" / "_delta_log" / "00000000000000000003.checkpoint.parquet")).metadata
    chunks = [meta.row_group(g).column(i) for g in range(meta.num_row_groups) for i in range(meta.num_columns)]
    assert {c.path_in_schema for c in chunks} >= {"add.path", "add.stats", "add.partitionValues.key_value.value"}
    assert [c.path_in_schema for c in chunks if c.has_dictionary_page] == []
    assert {c.compression for c in chunks} == {"SNAPPY"}
    assert sorted(DeltaTable(str(tmp_path / "t")).snapshot().files().column("partition_values").to_pylist(),
                  key=str) == sorted([[("p", "a")], [("p", "b")]] * 3, key=str)
