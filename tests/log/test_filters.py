"""Tuple filters (read/filters.py) mean what SQL means, for reads and OPTIMIZE's partition filters alike.

A partitioned table with a null partition (``__HIVE_DEFAULT_PARTITION__``) and a nullable
data column: negations never select nulls (SQL: unknown), None is selected only by the
explicit ``is`` / ``=`` None forms, and atoms with no SQL meaning are refused before any
file is read.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError


@pytest.fixture
def table(tmp_path) -> DeltaTable:
    t = DeltaTable(str(tmp_path / "t"))
    for i in range(2):      # two files per partition: OPTIMIZE has something to compact in each
        t.write(pa.table({"p": pa.array(["a", "b", None]), "x": pa.array([1, None, 3 + i], pa.int64()),
                          "i": pa.array([3 * i, 3 * i + 1, 3 * i + 2], pa.int64())}),
                partition_by=["p"] if i == 0 else None)
    return t


def _ids(table: DeltaTable, filter) -> list[int]:
    return sorted(table.snapshot().to_pyarrow(filter=filter).column("i").to_pylist())


@pytest.mark.parametrize("filter, ids", [
    ([("p", "=", "a")], [0, 3]),
    ([("p", "!=", "a")], [1, 4]),                       # NULL <> 'a' is unknown: not selected
    ([("p", "not in", ["a"])], [1, 4]),                 # NULL NOT IN ('a') is unknown: not selected
    ([("p", "not in", ("a", "b"))], []),
    ([("p", "in", {"a", "b"})], [0, 1, 3, 4]),
    ([("p", "is", None)], [2, 5]),                      # IS NULL: the null partition
    ([("p", "=", None)], [2, 5]),
    ([("p", "is not", None)], [0, 1, 3, 4]),
    ([("p", "!=", None)], [0, 1, 3, 4]),
    ([[("p", "is", None)], [("p", "=", "a")]], [0, 2, 3, 5]),    # OR: the way to add nulls to a list
    ([("x", "!=", 1)], [2, 5]),                          # data column: a null x is not selected either
    ([("x", "not in", [1])], [2, 5]),
    ([("x", "is", None)], [1, 4]),
])
def test_reads_follow_sql_three_valued_logic(table, filter, ids):
    assert _ids(table, filter) == ids


@pytest.mark.parametrize("atom, message", [
    (("p", "in", "ab"), "list of values.*one value"),   # a string is not a list of characters
    (("p", "not in", "a"), "list of values"),
    (("p", "in", 5), "list of values"),
    (("p", "in", ["a", None]), "None in the list never matches"),
    (("p", "not in", ["a", None]), "None in the list never matches"),
    (("p", "<", None), "never true"),
    (("p", "is", "a"), "takes None only"),
    (("p", "like", "a"), "unsupported filter operator"),
])
def test_atoms_without_sql_meaning_are_refused_even_on_an_empty_table(tmp_path, table, atom, message):
    with pytest.raises(InvalidArgumentError, match=message):
        table.snapshot().to_pyarrow(filter=[atom])
    empty = DeltaTable.create(str(tmp_path / "empty"), pa.schema([("p", pa.string()), ("i", pa.int64())]),
                              partition_by=["p"])
    with pytest.raises(InvalidArgumentError, match=message):
        empty.snapshot().to_pyarrow(filter=[atom])
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match=message):
        table.optimize(partition_filter=[atom])
    assert table.latest_version() == version


@pytest.mark.parametrize("partition_filter, partitions, predicate", [
    ([("p", "not in", ["a"])], [{"p": "b"}], ["NOT 'p IN (a)"]),
    ([("p", "is", None)], [{"p": None}], ["isnull('p)"]),
    ([("p", "!=", None)], [{"p": "a"}, {"p": "b"}], ["isnotnull('p)"]),
])
def test_optimize_selects_partitions_by_the_same_rule(table, partition_filter, partitions, predicate):
    before = _ids(table, None)
    m = table.optimize(partition_filter=partition_filter)
    assert m["partitionsOptimized"] == len(partitions)
    commit = table.history(1)[0]
    assert json.loads(commit["operationParameters"]["predicate"]) == predicate
    log = os.path.join(table.storage.path("_delta_log"), f"{commit['version']:020d}.json")
    with open(log) as f:
        actions = [json.loads(line) for line in f if line.strip()]
    added = [a["add"]["partitionValues"] for a in actions if "add" in a]
    removed = [a["remove"]["partitionValues"] for a in actions if "remove" in a]
    assert sorted(added, key=str) == sorted(partitions, key=str)
    assert sorted(removed, key=str) == sorted(partitions * 2, key=str)     # two files per partition
    assert _ids(table, None) == before
