"""The JSON replay's shortcuts give what the line-by-line parser gives.

``parse_json_logs`` learns which adds carry tags from Arrow's reader (an empty struct
in the schema) instead of scanning the log's bytes, and skips URL-decoding when no
path holds a ``%`` (one scan of the paths' character buffer). Each case here is
replayed by the fast path and by ``_parse_slow`` (``json`` line by line, no
shortcut), and through a real table's ``files()``.
"""
from __future__ import annotations

import json

import pyarrow as pa

from airflow_provider_delta.log import AddFile, DeltaTable
from airflow_provider_delta.log.read.replay import _parse_slow, _scan_paths, parse_json_logs


def _add(path: str, **extra) -> dict:
    return {"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True,
                    **extra}}


def _blob(version: int, actions: list[dict]) -> tuple[int, bytes, str]:
    return version, "".join(json.dumps(a) + "\n" for a in actions).encode(), f"{version:020d}.json"


def _by_path(t: pa.Table) -> dict:
    rows = t.select(["path", "tags", "is_add", "version"]).to_pylist()
    return {r["path"]: (sorted(r["tags"]) if r["tags"] is not None else None, r["is_add"], r["version"])
            for r in rows}


BLOBS = [
    _blob(0, [{"commitInfo": {"operation": "WRITE"}}, _add("a", tags={"k": "v", "n": 1}), _add("b"),
              _add("c", tags=None), _add("d", tags={}), _add("e", tags={"x": None, "nested": "{\"tags\": {}}"})]),
    _blob(1, [_add("f", stats="{\"tags\": {\"q\": 1}}"), _add("g%20h"), _add("i", tags={"only": "me"}),
              {"remove": {"path": "b", "deletionTimestamp": 5, "dataChange": True}}]),
    _blob(2, [_add("j"), _add("k")]),          # a file with no tags at all among files that have them
]


def test_tags_and_paths_match_the_line_by_line_parser():
    fast = _by_path(parse_json_logs(BLOBS, []).file_actions)
    slow = _by_path(_parse_slow(BLOBS, 0).file_actions)
    # an empty tags object: null on the fast path, an empty map line by line (as before this change)
    assert fast.pop("d") == (None, True, 0) and slow.pop("d") == ([], True, 0)
    assert fast == slow
    assert fast["a"][0] == [("k", "v"), ("n", "1")]
    assert fast["i"][0] == [("only", "me")]
    assert fast["b"][0] is None and fast["c"][0] is None and fast["j"][0] is None
    assert fast["f"][0] is None                      # "tags" inside a stats string is not a tags object
    assert "g h" in fast and "g%20h" not in fast      # decoded


def test_no_tags_anywhere_gives_null_tags_not_empty_maps():
    blobs = [_blob(0, [_add("a"), _add("b%2Fc")]), _blob(1, [_add("d")])]
    t = parse_json_logs(blobs, []).file_actions
    assert t.column("tags").null_count == t.num_rows
    assert sorted(t.column("path").to_pylist()) == ["a", "b/c", "d"]


def test_the_path_scan_looks_only_inside_the_array_slice():
    arr = pa.array(["x%y", "plain", "more"], pa.string())
    assert _scan_paths(arr) == (False, False, True)
    assert _scan_paths(arr.slice(1)) == (False, False, False)     # the '%' lies in the buffer, before the slice
    assert _scan_paths(pa.array([], pa.string())) == (False, False, False)
    assert _scan_paths(pa.array(["a", "b%"]).slice(1)) == (False, False, True)
    assert _scan_paths(pa.array(["./a", "b"]).slice(1)) == (False, False, False)
    assert _scan_paths(pa.array(["a", "./b"]).slice(1)) == (True, False, False)
    long = ["x" * 1000] * 3000                 # 3 MB of characters: several scan steps
    assert _scan_paths(pa.array(long)) == (False, False, False)
    assert _scan_paths(pa.array(long + ["late%", "q?", "a//b"])) == (True, True, True)
    step_end = ["y" * ((1 << 20) - 1) + "/", ".z"]            # '/.' across two values and a step boundary
    assert _scan_paths(pa.array(step_end))[0]
    assert _scan_paths(pa.array(["s3://b/t/x", "file:///t/x"])) == (False, False, False)
    assert _scan_paths(pa.array(["a"], pa.large_string())) is None   # not read: every value is checked


def test_table_with_tagged_and_percent_paths(tmp_path):
    uri = str(tmp_path / "t")
    schema = pa.schema([("id", pa.int64())])
    t = DeltaTable.create(uri, schema)
    with t.transaction() as tx:
        tx.add_file(AddFile("p q.parquet", 10, tags={"owner": "x"}))    # written URL-encoded
        tx.add_file(AddFile("plain.parquet", 10))
    got = {r["path"]: r["tags"] for r in DeltaTable(uri).snapshot().files().to_pylist()}
    assert got == {"p q.parquet": [("owner", "x")], "plain.parquet": None}


def _metadata(partition_columns: list[str]) -> dict:
    fields = [{"name": c, "type": "string", "nullable": True, "metadata": {}} for c in ("a", "b")]
    return {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                         "schemaString": json.dumps({"type": "struct", "fields": fields}),
                         "partitionColumns": partition_columns, "configuration": {}}}


def test_partition_keys_of_older_metadata_in_the_commits_are_read():
    """Partitioning changed inside the replayed commits: the adds written before the change
    keep their partition values although the caller named only today's keys."""
    blobs = [_blob(0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, _metadata(["a"]),
                       {"add": {"path": "x", "partitionValues": {"a": "1"}, "size": 1, "modificationTime": 1,
                                "dataChange": True}}]),
             _blob(1, [_metadata(["b"]),
                       {"add": {"path": "y", "partitionValues": {"b": "2"}, "size": 1, "modificationTime": 1,
                                "dataChange": True}}])]
    told_today = parse_json_logs(blobs, ["b"]).file_actions
    told_all = parse_json_logs(blobs, ["b", "a"]).file_actions

    def values(t):
        return {r["path"]: dict(r["partition_values"]) for r in t.to_pylist()}
    assert values(told_today) == values(told_all)
    assert values(told_today)["x"]["a"] == "1" and values(told_today)["y"]["b"] == "2"
