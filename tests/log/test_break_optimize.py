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
