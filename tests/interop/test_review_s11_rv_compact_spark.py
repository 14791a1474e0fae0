"""Review s11 (report-only) of the s11-compact merge: Delta Spark skips files on the statistics of our
OPTIMIZE/Z-order output when each new file is larger than the dictionary probe (8,192 rows; the probe
and arrow_kernels/arrow_build paths run), with time zones, decimals, binary and a struct field."""
from __future__ import annotations

import datetime
import decimal

import numpy as np
import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark


def test_delta_spark_skips_files_on_our_zorder_statistics(spark, tmp_path):
    path = str(tmp_path / "t")
    table = DeltaTable(path)
    n = 20_000
    for part in range(4):
        i = np.arange(part * n, (part + 1) * n)
        table.write(pa.table({
            "id": pa.array(i, pa.int64()),
            "ts": pa.array([1_700_000_000_000_000 + int(x) * 1_000_003 for x in i], pa.timestamp("us", "UTC")),
            "dec": pa.array([decimal.Decimal(int(x)) / 100 if x % 9 else None for x in i], pa.decimal128(12, 2)),
            "bin": pa.array([int(x).to_bytes(4, "big") for x in i], pa.binary()),
            "st": pa.array([{"a": int(x), "b": f"b{x % 7}"} for x in i],
                           pa.struct([("a", pa.int64()), ("b", pa.string())])),
        }))
    total = sum(table.snapshot().files().column("size").to_pylist())
    m = table.optimize(z_order_by=["ts", "st.a"], target_size=max(1, total // 4))
    assert m["numFilesAdded"] >= 3
    files = table.snapshot().files().num_rows
    t0 = datetime.datetime.fromtimestamp(1_700_000_000 + 1_000 * 1.000003, datetime.timezone.utc)
    for cond in (f"ts < timestamp'{t0:%Y-%m-%d %H:%M:%S}'", "st.a < 1000", "dec < 10", "id < 1000"):
        df = spark.read.format("delta").load(path).where(cond)
        got = sorted(r.id for r in df.select("id").collect())
        expect = [x for x in range(1000) if x % 9] if cond.startswith("dec") else list(range(1000))
        assert got == expect, cond
        assert len(df.inputFiles()) < files, (cond, len(df.inputFiles()), files)
