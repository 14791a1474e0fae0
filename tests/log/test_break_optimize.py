"""Break attempts on OPTIMIZE (issue #24) in the log layer: each test is a finding.

Real tables on disk, deltalake (delta-rs) as the second reader; the Delta Spark side of the
same findings is in tests/interop/test_break_optimize_spark.py.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError


def _raw_log(path, version: int) -> list[dict]:
    with open(os.path.join(str(path), "_delta_log", f"{version:020d}.json")) as f:
        return [json.loads(line) for line in f if line.strip()]


def _sorted_rows(rows: list[dict]) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


# ------------------------------------------------------------------ remove paths
def test_remove_of_a_spark_file_with_a_non_ascii_partition_path_keeps_its_spelling(copy_table):
    path = copy_table("dat/multi_partitioned/delta")
    table = DeltaTable(str(path))
    ours_before = _sorted_rows(table.snapshot().to_pyarrow().to_pylist())
    assert _sorted_rows(RsTable(str(path)).to_pyarrow_table().to_pylist()) == ours_before
    live = {a["add"]["path"] for v in range(table.latest_version() + 1) for a in _raw_log(path, v) if "add" in a}
    m = table.optimize(z_order_by=["number"])           # rewrites every file, one per partition
    assert m["numFilesRemoved"] == 2
    removed = [a["remove"]["path"] for a in _raw_log(path, m["version"]) if "remove" in a]
    # Delta Spark writes a remove with the add's own path string (AddFile.removeWithTimestamp)
    assert set(removed) <= live, sorted(set(removed) - live)
    assert _sorted_rows(RsTable(str(path)).to_pyarrow_table().to_pylist()) == ours_before


# ------------------------------------------------------- partitioning changed once
def test_optimize_after_an_overwrite_that_changed_the_partitioning(tmp_path):
    """Found: every OPTIMIZE failed with 'has partition values for ['a', 'b'] but the table is
    partitioned by ['b']' (the replayed partition values carry the old partition column as null)."""
    table = DeltaTable(str(tmp_path / "t"))
    table.write(pa.table({"a": ["x", "y"], "b": ["1", "2"], "v": [1, 2]}), partition_by=["a"])
    table.write(pa.table({"a": ["x", "y"], "b": ["1", "2"], "v": [3, 4]}), mode="overwrite", partition_by=["b"],
                overwrite_schema=True)
    table.write(pa.table({"a": ["x", "y"], "b": ["1", "2"], "v": [5, 6]}))
    before = _sorted_rows(table.snapshot().to_pyarrow().to_pylist())
    m = table.optimize()
    assert (m["numFilesRemoved"], m["numFilesAdded"]) == (4, 2)
    assert _sorted_rows(table.snapshot().to_pyarrow().to_pylist()) == before
    adds = [a["add"] for a in _raw_log(tmp_path / "t", m["version"]) if "add" in a]
    assert all(set(a["partitionValues"]) == {"b"} for a in adds)
    assert _sorted_rows(RsTable(str(tmp_path / "t")).to_pyarrow_table().to_pylist()) == before


# ------------------------------------------------------------- bad partition filter
def test_a_partition_filter_value_of_the_wrong_type_is_a_typed_error(tmp_path):
    """Found: ``[("n", ">", "x")]`` on an int partition column raised pyarrow's ArrowInvalid."""
    table = DeltaTable(str(tmp_path / "t"))
    for i in range(3):
        table.write(pa.table({"n": pa.array([1, 2], pa.int32()), "v": [i, i]}), partition_by=["n"] if i == 0 else None)
    version = table.latest_version()
    listing = sorted(os.listdir(tmp_path / "t" / "n=1"))
    with pytest.raises(InvalidArgumentError, match="'x'"):
        table.optimize(partition_filter=[("n", ">", "x")])
    assert table.latest_version() == version and sorted(os.listdir(tmp_path / "t" / "n=1")) == listing


# ---------------------------------------------------------------- commitInfo text
def test_zorder_by_parameter_is_the_json_text_delta_spark_writes(tmp_path):
    """Found: operationParameters.zOrderBy was '["x", "id"]'; Delta Spark (Jackson) writes '["x","id"]'."""
    table = DeltaTable(str(tmp_path / "t"))
    for i in range(2):
        table.write(pa.table({"id": pa.array([i], pa.int64()), "x": [0.5]}))
    table.optimize(z_order_by=["x", "id"])
    assert table.history(1)[0]["operationParameters"]["zOrderBy"] == '["x","id"]'


# Found: Z-order by a column without statistics was accepted (Delta Spark: DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS).
def test_zorder_by_a_column_without_statistics_is_refused(tmp_path):
    table = DeltaTable(str(tmp_path / "t"))
    table.write(pa.table({"id": pa.array([1, 2], pa.int64()), "x": [0.1, 0.2]}),
                properties={"delta.dataSkippingNumIndexedCols": "1"})
    table.write(pa.table({"id": pa.array([3], pa.int64()), "x": [0.3]}))
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="statistics|stats"):
        table.optimize(z_order_by=["x"])
    assert table.latest_version() == version


# ------------------------------------------------------------------------ memory
MEMORY_CHILD = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    from airflow_provider_delta.log import DeltaTable
    table = DeltaTable(sys.argv[1])
    pool = pa.default_memory_pool()
    z = sys.argv[3].split(",") if len(sys.argv) > 3 else None
    m = table.optimize(target_size=int(sys.argv[2]), max_concurrent=1, z_order_by=z)
    print(json.dumps({"peak": pool.max_memory(), "added": m["numFilesAdded"], "removed": m["numFilesRemoved"]}))
""")


def _compressible_table(uri: str, files: int = 20, rows: int = 10_000) -> DeltaTable:
    table = DeltaTable(uri)
    words = [("w%d" % i) * 250 for i in range(8)]            # about 500 bytes each, 8 distinct values
    for f in range(files):
        table.write(pa.table({"id": pa.array(range(f * rows, (f + 1) * rows), pa.int64()),
                              "s": pa.array([words[(i * 7 + f) % 8] for i in range(rows)])}))
    return table


def _peak(uri: str, target: int, *z_order_by: str) -> dict:
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, uri, str(target), *([",".join(z_order_by)] if
                          z_order_by else [])], capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


# Found: about 300 MB of Arrow data sorted in memory for a 16 MB target (one output file sorted whole).
def test_zorder_memory_follows_the_target_size_for_compressible_data(tmp_path):
    uri = str(tmp_path / "t")
    _compressible_table(uri)
    target = 16 << 20
    result = _peak(uri, target, "id")
    assert (result["removed"], result["added"]) == (20, 1)
    assert result["peak"] < 4 * target, result


# Found: about 220 MB of Arrow data buffered for a 16 MB target (row groups were cut at 1M rows only).
def test_compaction_memory_follows_the_target_size_for_compressible_data(tmp_path):
    uri = str(tmp_path / "t")
    table = _compressible_table(uri)
    target = 16 << 20
    assert sum(table.snapshot().files().column("size").to_pylist()) < target   # one bin: one new file
    result = _peak(uri, target)
    assert (result["removed"], result["added"]) == (20, 1)
    assert result["peak"] < 4 * target, result
