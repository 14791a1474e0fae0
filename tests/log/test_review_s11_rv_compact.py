"""Review s11 (report-only) of OPTIMIZE's dictionary probe (s11-compact merge b803a2b: probe_positions).

The probe of a new file's first row group was a random draw of 8,192 rows; it is now one row per equal
stratum at a golden-ratio offset. _few_distinct reasons about a random draw ("n rows drawn at random
from D distinct values show D * (1 - exp(-n / D))"); a stratified probe of clustered data (rows sorted by
the column, or appended in batches each with values of its own) sees one new value per stratum, i.e.
nearly 8,192 distinct values whenever the row group holds more than 8,192, and the column loses its
dictionary although it holds far fewer than DICTIONARY_MAX_DISTINCT (41,000) values.

Measured (1M rows, 4 files compacted into one; string column 'customer-%08d'):
  sorted, 20,000 values: 4,169,965 bytes before (dictionary) -> 5,091,137 now (plain), +22%
  sorted, 35,000 values: 4,285,110 -> 5,146,660, +20%
  batches of 1,000 rows with 50 values each, 40,000 in all: 4,523,261 -> 5,268,467, +16%
  unchanged: sorted 10,000; cycles of 9k/20k/35k/60k; a 97% head of 100 values with a distinct tail;
  random 20k; periodic with the stride's period; and (types) dictionary-typed input, all-null, decimal,
  timestamp with zone, binary, float32 with NaN, list, map, struct, date32, Z-order on ts/dec/bool/
  float/date/int16/struct field: same sizes, encodings and statistics byte for byte.
"""
from __future__ import annotations

import os

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable

N = 200_000


def _values(case: str, i: np.ndarray) -> np.ndarray:
    if case == "sorted":                       # sorted by the column: 20,000 values, runs of 10 rows
        return i * 20_000 // N
    return (i // 500) * 50 + (i * 7) % 50      # appended in batches of 500 rows, 50 values each: 20,000 in all


@pytest.mark.parametrize("case", ["sorted", "batches"])
def test_clustered_values_below_the_dictionary_limit_keep_their_dictionary(tmp_path, case):
    uri = str(tmp_path / case)
    table = DeltaTable(uri)
    for part in range(2):
        i = np.arange(part * N // 2, (part + 1) * N // 2)
        table.write(pa.table({"id": pa.array(i, pa.int64()),
                              "k": pa.array([f"customer-{v:08d}" for v in _values(case, i)])}))
    table.optimize(target_size=1 << 30)
    (path,) = table.snapshot().files().column("path").to_pylist()
    md = pq.read_metadata(os.path.join(uri, path))
    k = [md.row_group(0).column(c) for c in range(md.num_columns) if md.row_group(0).column(c).path_in_schema == "k"][0]
    assert len(set(_values(case, np.arange(N)))) < 41_000
    assert "RLE_DICTIONARY" in k.encodings, (k.encodings, k.total_compressed_size)
