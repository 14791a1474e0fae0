"""Helpers and expected answers shared by the read-path corpus tests.

The expected values here are transcribed from ``shared/corpus/README.md``, which quotes
the upstream projects' own tests (Delta Spark, kernel-java, delta-kernel-rs, delta-rs).
The helpers exist so that every test compares rows the same way (order-insensitive,
as the DAT reader rules say) and prepares file times the same way (git does not keep
them, so time-travel tests must set them on a private copy of a table).
"""
from __future__ import annotations

import os
import stat
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Iterable

import pyarrow as pa
import pyarrow.parquet as pq

#: Same location as the ``corpus`` fixture in tests/conftest.py (needed at collection time
#: for parametrization; the fixture still fails loudly if the corpus is missing).
CORPUS = (Path(__file__).resolve().parents[2].parent / "shared" / "corpus").resolve()

# --------------------------------------------------------------------------- helpers


def sort_key(row: Any) -> str:
    """A total order over arbitrary pylist rows (None, nested dicts, maps as pair lists)."""
    return repr(row)


def sorted_rows(table: pa.Table, columns: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Rows as dicts, in a canonical order, so two tables compare regardless of file order."""
    if columns is not None:
        table = table.select(list(columns))
    return sorted(table.to_pylist(), key=sort_key)


def column_values(table: pa.Table, column: str) -> list[Any]:
    """One column's values, sorted (None last), for multiset comparisons."""
    vals = table.column(column).to_pylist()
    return sorted(vals, key=lambda v: (v is None, v if v is not None else 0))


def make_writable(root: Path) -> None:
    """Corpus files are read-only; copies keep the mode, so open them up before editing."""
    for dirpath, dirnames, filenames in os.walk(root):
        os.chmod(dirpath, os.stat(dirpath).st_mode | stat.S_IWUSR | stat.S_IXUSR | stat.S_IRUSR)
        for f in filenames:
            p = os.path.join(dirpath, f)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR | stat.S_IRUSR)


def set_mtime(path: Path | str, epoch_ms: int) -> None:
    """Set a file's modification time (and access time) to ``epoch_ms``."""
    os.utime(path, ns=(epoch_ms * 1_000_000, epoch_ms * 1_000_000))


def commit_file(table_root: Path, version: int) -> Path:
    return Path(table_root) / "_delta_log" / f"{version:020d}.json"


def epoch_ms(value: str | datetime) -> int:
    """ISO-8601 (offset or 'Z'; naive means UTC) or datetime -> epoch milliseconds."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value.replace("Z", "+00:00"))
    if value.tzinfo is None:
        value = value.replace(tzinfo=timezone.utc)
    return int(round(value.timestamp() * 1000))


def parquet_num_rows(path: Path | str) -> int:
    """Physical rows of one data file, from its footer."""
    return pq.ParquetFile(path).metadata.num_rows


def dir_state(root: Path) -> dict[str, tuple[int, int, bytes]]:
    """(size, mtime_ns, content) of every file under ``root``: to prove a read changed nothing."""
    out = {}
    for dirpath, _, filenames in os.walk(root):
        for f in filenames:
            p = os.path.join(dirpath, f)
            st = os.stat(p)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns, fh.read())
    return out


# ------------------------------------------------------------ E0: DAT v0.0.3 tables

#: table -> the reader feature its rows need (deletion vectors applied, columns found by physical name).
DAT_FEATURE_TABLES = {
    "column_mapping": "columnMapping",
    "iceberg_compat_v1": "columnMapping",
    "deletion_vectors": "deletionVectors",
}

#: README E0 table: latest version and row counts per expected dir (a cross-check on the fixtures).
DAT_ROW_COUNTS = {
    "all_primitive_types": {"latest": 5},
    "basic_append": {"latest": 5, "v0": 3, "v1": 5},
    "basic_partitioned": {"latest": 6, "v0": 3, "v1": 6},
    "cdf": {"latest": 1},
    "check_constraints": {"latest": 5},
    "column_mapping": {"latest": 10},
    "deletion_vectors": {"latest": 1},
    "generated_columns": {"latest": 5},
    "iceberg_compat_v1": {"latest": 5},
    "multi_partitioned": {"latest": 2, "v0": 3, "v1": 5, "v2": 2},
    "multi_partitioned_2": {"latest": 3},
    "nested_types": {"latest": 5},
    "no_replay": {"latest": 5},
    "no_stats": {"latest": 5},
    "partitioned_with_null": {"latest": 6, "v0": 3, "v1": 6},
    "stats_as_struct": {"latest": 5},
    "timestamp_ntz": {"latest": 5},
    "with_checkpoint": {"latest": 5},
    "with_schema_change": {"latest": 3, "v1": 3},
}

# ------------------------------------------------- E2 / E7: expected rows (column id)

E2_ROWS = {
    "delta-golden/multi-part-checkpoint": (1, [0] + list(range(30))),
    "delta-golden/only-checkpoint-files": (2, list(range(5, 10)) + list(range(20))),
    "delta-golden/corrupted-last-checkpoint-kernel": (11, list(range(100))),
    "delta-golden/basic-with-inserts-deletes-checkpoint": (
        13, [i for lo in (0, 10, 20, 30, 40) for i in range(lo, lo + 5)] + list(range(50, 66))),
    "delta-golden/basic-with-inserts-overwrite-restore": (3, list(range(200))),
}

_SIDECAR_ROWS = [0, 0, 0] + list(range(30)) + list(range(100)) * 2 + list(range(1000))
E7_ROWS = {
    "v2-checkpoints-json-with-sidecars": _SIDECAR_ROWS,
    "v2-checkpoints-parquet-with-sidecars": _SIDECAR_ROWS,
    "v2-checkpoints-json-without-sidecars": list(range(10)) + [2718],
    "v2-checkpoints-parquet-without-sidecars": list(range(10)) + [2718],
    "v2-classic-checkpoint-json": list(range(20)),
    "v2-classic-checkpoint-parquet": list(range(20)),
    "v2-checkpoints-json-with-last-checkpoint": list(range(10)),
    "v2-checkpoints-parquet-with-last-checkpoint": list(range(10)),
}

E7_STRUCT_STATS_ONLY = [
    "v1-single-part-struct-stats-only", "v1-multi-part-struct-stats-only",
    "v1-multi-part-partitioned-struct-stats-only", "v2-json-sidecars-struct-stats-only",
    "v2-parquet-sidecars-struct-stats-only",
]

# ------------------------------------------------------------ E5: snapshot file sets

E5_FILE_COUNTS = {
    "snapshot-data0": (0, 2),
    "snapshot-data1": (1, 4),
    "snapshot-data2": (2, 2),
    "snapshot-data3": (3, 4),
    "snapshot-data2-deleted": (4, 3),
    "snapshot-repartitioned": (5, 2),
    "snapshot-vacuumed": (5, 2),
}

# ------------------------------------------------------- E6: golden time-travel tables

E6_START = 1540415658000
E6_MTIMES = [E6_START, E6_START + 20 * 60_000, E6_START + 40 * 60_000]

# ------------------------------------------------------------- E14: delta-rs tables

DELTA_020_FILES = {
    3: {"part-00000-cb6b150b-30b8-4662-ad28-ff32ddab96d2-c000.snappy.parquet",
        "part-00000-7c2deba3-1994-4fb8-bc07-d46c948aa415-c000.snappy.parquet",
        "part-00001-c373a5bd-85f0-4758-815e-7eb62007a15c-c000.snappy.parquet"},
    0: {"part-00000-b44fcdb0-8b06-4f3a-8606-f8311a96f6dc-c000.snappy.parquet",
        "part-00001-185eca06-e017-4dea-ae49-fc48b973e37e-c000.snappy.parquet"},
    2: {"part-00000-7c2deba3-1994-4fb8-bc07-d46c948aa415-c000.snappy.parquet",
        "part-00001-c373a5bd-85f0-4758-815e-7eb62007a15c-c000.snappy.parquet"},
}

_PDT = timezone(timedelta(hours=-7))


def pdt(day: int, hour: int = 22, minute: int = 47, month: int = 5) -> int:
    """2020-<month>-<day>T<hour>:<minute>:31-07:00 in epoch ms (delta-rs's time-travel fixtures)."""
    return epoch_ms(datetime(2020, month, day, hour, minute, 31, tzinfo=_PDT))


#: simple_table: commit mtimes 2020-05-01..05 22:47:31-07:00
SIMPLE_TABLE_MTIMES = [pdt(d) for d in range(1, 6)]

#: (query timestamp, expected version) from delta-rs time_travel_by_ds. The first row lies
#: BEFORE v0: delta-rs clamps it to v0, Delta Spark (our reference) raises.
SIMPLE_TABLE_QUERIES = [
    (pdt(2), 1), (pdt(2, hour=23), 1), (pdt(3), 2), (pdt(4), 3), (pdt(5, hour=21), 3),
    (pdt(5), 4), (pdt(25), 4),
]
SIMPLE_TABLE_BEFORE_EARLIEST = pdt(1, hour=0)

#: checkpoints_vacuumed: file -> mtime
CHECKPOINTS_VACUUMED_MTIMES = {
    "00000000000000000005.checkpoint.parquet": pdt(1),
    "00000000000000000005.json": pdt(2),
    "00000000000000000006.json": pdt(3),
    "00000000000000000007.json": pdt(4),
    "00000000000000000008.json": pdt(5),
    "00000000000000000009.json": pdt(6),
    "00000000000000000010.checkpoint.parquet": pdt(6),
    "00000000000000000010.json": pdt(8),
    "00000000000000000011.json": pdt(9),
    "00000000000000000012.json": pdt(10),
}

# ------------------------------------------------------ E10: delta-rs cdc_ict_table ICTs

CDC_ICT = {0: 1783874203271, 1: 1683874206883, 2: 1783874212175, 3: 1783874213881}
CDC_ICT_OPERATIONS = {0: "CREATE OR REPLACE TABLE", 1: "WRITE", 2: "DELETE", 3: "UPDATE"}

# -------------------------------------------------------------- E15: exotic broken logs

#: table -> None if it opens, else the reader feature / error kind expected
E15_EXPECTED = {
    "table_a": None,
    "table_b": None,
    "table_c": "gap",
    "table_d": "catalogOwned",
    "table_e": "catalogOwned",
    "table_f": "catalogOwned",
    "table_h": "catalogOwned",
    "table_i": "catalogOwned",
}
