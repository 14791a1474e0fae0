"""E6 and E14: time travel by version and by timestamp on real tables.

Without in-commit timestamps a commit's time is its file's modification time, which
git does not keep: each test copies its table and sets the mtimes the upstream tests
use. Where implementations differ the reference is Delta Spark: a timestamp before
the earliest reconstructable commit is an error (delta-rs clamps it to the earliest
version instead), and so is one after the latest commit unless the caller opts into
``allow_after_latest=True``, which then returns the latest version.
"""
from __future__ import annotations

import os
from datetime import datetime, timezone

import pytest

from airflow_provider_delta.log import (
    DeltaTable, TimestampOutOfRangeError, VersionNotFoundError,
)
from airflow_provider_delta.log.base.timeutil import format_ms
from corpus_expected import (
    CHECKPOINTS_VACUUMED_MTIMES, E6_MTIMES, E6_START, SIMPLE_TABLE_BEFORE_EARLIEST,
    SIMPLE_TABLE_MTIMES, SIMPLE_TABLE_QUERIES, column_values, commit_file, make_writable, pdt,
    set_mtime,
)

MIN = 60_000


@pytest.fixture
def tt_table(copy_table):
    """time-travel-start-start20-start40 with mtimes start, start+20min, start+40min."""
    root = copy_table("delta-golden/time-travel-start-start20-start40")
    make_writable(root)
    for v, ms in enumerate(E6_MTIMES):
        set_mtime(commit_file(root, v), ms)
    return root


# ------------------------------------------------------------------ E6: by version


@pytest.mark.parametrize("version,prefix_table,n", [
    (0, "time-travel-start", 10), (1, "time-travel-start-start20", 20), (2, "time-travel-start-start20-start40", 30),
])
def test_by_version_matches_each_generation_step(tt_table, corpus, version, prefix_table, n):
    snap = DeltaTable(str(tt_table)).snapshot(version=version)
    expected_files = DeltaTable(str(corpus / "delta-golden" / prefix_table)).snapshot().files()
    assert set(snap.files().column("path").to_pylist()) == set(expected_files.column("path").to_pylist())
    assert column_values(snap.to_pyarrow(), "id") == list(range(n))


@pytest.mark.parametrize("version", [3, -1])
def test_by_version_out_of_range(tt_table, version):
    with pytest.raises(VersionNotFoundError) as ei:
        DeltaTable(str(tt_table)).snapshot(version=version)
    e = ei.value
    assert (e.version, e.earliest, e.latest) == (version, 0, 2)
    assert str(version) in str(e) and "0" in str(e) and "2" in str(e)


def test_by_version_after_first_commit_deleted(tt_table):
    """noReproducibleHistoryFound: without 0.json (and no checkpoint) nothing can be rebuilt."""
    os.remove(commit_file(tt_table, 0))
    t = DeltaTable(str(tt_table))
    for v in (0, 1, 2):
        with pytest.raises(VersionNotFoundError):
            t.snapshot(version=v)


# ---------------------------------------------------------------- E6: by timestamp


@pytest.mark.parametrize("offset_min,expected", [(10, 0), (30, 1), (0, 0), (20, 1), (40, 2)])
def test_by_timestamp(tt_table, offset_min, expected):
    t = DeltaTable(str(tt_table))
    ts = E6_START + offset_min * MIN
    assert t.version_at(ts) == expected
    snap = t.snapshot(timestamp=ts)
    assert snap.version == expected
    assert snap.timestamp == E6_MTIMES[expected]


def test_by_timestamp_accepts_iso_strings_and_datetimes(tt_table):
    t = DeltaTable(str(tt_table))
    ts = E6_START + 30 * MIN
    dt = datetime.fromtimestamp(ts / 1000, tz=timezone.utc)
    assert t.version_at(dt) == 1
    assert t.version_at(dt.isoformat()) == 1
    assert t.version_at(format_ms(ts)) == 1
    assert t.snapshot(timestamp=dt).version == 1


def test_by_timestamp_after_latest_is_an_error_by_default(tt_table):
    t = DeltaTable(str(tt_table))
    ts = E6_START + 50 * MIN
    with pytest.raises(TimestampOutOfRangeError) as ei:
        t.version_at(ts)
    e = ei.value
    assert e.timestamp == ts and e.latest == E6_MTIMES[2]
    # timestampLaterThanTableLastCommit(start+50m, start+40m): both times in the message
    assert format_ms(ts) in str(e) and format_ms(E6_MTIMES[2]) in str(e)
    with pytest.raises(TimestampOutOfRangeError):
        t.snapshot(timestamp=ts)
    assert t.version_at(ts, allow_after_latest=True) == 2


def test_by_timestamp_before_earliest_is_an_error(tt_table):
    t = DeltaTable(str(tt_table))
    with pytest.raises(TimestampOutOfRangeError) as ei:
        t.version_at(E6_START - 1)
    assert ei.value.earliest == E6_START
    assert format_ms(E6_START) in str(ei.value)
    # opting into "after latest" does not relax the before-earliest rule
    with pytest.raises(TimestampOutOfRangeError):
        t.version_at(E6_START - 1, allow_after_latest=True)


@pytest.mark.parametrize("ts,expected", [(500, None), (1000, 0), (1500, 0), (3000, 2), (4000, "after")])
def test_generic_before_or_at_rules(tt_table, ts, expected):
    """Standalone DeltaLogSuite: mtimes 1000/2000/3000 for v0/v1/v2."""
    for v, ms in enumerate((1000, 2000, 3000)):
        set_mtime(commit_file(tt_table, v), ms)
    t = DeltaTable(str(tt_table))
    if expected is None:
        with pytest.raises(TimestampOutOfRangeError, match="before the earliest"):
            t.version_at(ts)
    elif expected == "after":
        with pytest.raises(TimestampOutOfRangeError, match="after the latest"):
            t.version_at(ts)
        assert t.version_at(ts, allow_after_latest=True) == 2
    else:
        assert t.version_at(ts) == expected


# ------------------------------------------------------ E6: schema and partition changes


def test_time_travel_to_old_schema(corpus):
    t = DeltaTable(str(corpus / "delta-golden" / "time-travel-schema-changes-b"))
    v0 = t.snapshot(version=0)
    assert v0.schema.names == ["id"]
    a = DeltaTable(str(corpus / "delta-golden" / "time-travel-schema-changes-a")).snapshot()
    assert set(v0.files().column("path").to_pylist()) == set(a.files().column("path").to_pylist())
    assert v0.to_pyarrow().column_names == ["id"]
    assert "part" in t.snapshot().schema.names


def test_time_travel_to_old_partitioning(corpus):
    t = DeltaTable(str(corpus / "delta-golden" / "time-travel-partition-changes-b"))
    v0, latest = t.snapshot(version=0), t.snapshot()
    assert v0.partition_columns == ("part5",) and latest.partition_columns == ("part2",)
    a = DeltaTable(str(corpus / "delta-golden" / "time-travel-partition-changes-a")).snapshot()
    assert set(v0.files().column("path").to_pylist()) == set(a.files().column("path").to_pylist())
    rows = v0.to_pyarrow()
    assert all(r["part5"] == r["id"] % 5 for r in rows.to_pylist())
    rows = latest.to_pyarrow()
    assert all(r["part2"] == r["id"] % 2 for r in rows.to_pylist())


# ------------------------------------------------------------------ E14: simple_table


@pytest.fixture
def simple_table(copy_table):
    root = copy_table("delta-rs/simple_table")
    make_writable(root)
    for v, ms in enumerate(SIMPLE_TABLE_MTIMES):
        set_mtime(commit_file(root, v), ms)
    # a stray uncommitted 5.json in .tmp/ with a later time must be ignored
    set_mtime(root / "_delta_log" / ".tmp" / f"{5:020d}.json", pdt(6))
    return root


@pytest.mark.parametrize("ts,expected", SIMPLE_TABLE_QUERIES)
def test_simple_table_by_timestamp(simple_table, ts, expected):
    t = DeltaTable(str(simple_table))
    assert t.latest_version() == 4
    if ts > SIMPLE_TABLE_MTIMES[-1]:
        # after the last commit: Delta Spark errors by default; opting in gives the latest
        with pytest.raises(TimestampOutOfRangeError):
            t.version_at(ts)
        assert t.version_at(ts, allow_after_latest=True) == expected
    else:
        assert t.version_at(ts) == expected


def test_simple_table_before_first_commit(simple_table):
    """delta-rs clamps 2020-05-01T00:47:31-07:00 to version 0; Delta Spark (our reference)
    raises, because no version existed at that time."""
    with pytest.raises(TimestampOutOfRangeError):
        DeltaTable(str(simple_table)).version_at(SIMPLE_TABLE_BEFORE_EARLIEST)


# --------------------------------------------------------------- E14: checkpoints_vacuumed


@pytest.fixture
def vacuumed(copy_table):
    root = copy_table("delta-rs/checkpoints_vacuumed")
    make_writable(root)
    for name, ms in CHECKPOINTS_VACUUMED_MTIMES.items():
        set_mtime(root / "_delta_log" / name, ms)
    stray = root / "_delta_log" / f"{0:020d}.checkpoint.parquet.tmp8f2c"
    stray.write_bytes(b"not a checkpoint")
    set_mtime(stray, pdt(1, month=4))
    return root


def test_checkpoints_vacuumed_by_timestamp(vacuumed):
    t = DeltaTable(str(vacuumed))
    assert t.latest_version() == 12
    assert t.version_at(pdt(9, hour=0)) == 10
    assert t.version_at(pdt(8)) == 10
    assert t.version_at(pdt(3)) == 6
    assert t.snapshot(timestamp=pdt(9, hour=0)).version == 10


def test_checkpoints_vacuumed_before_earliest_commit(vacuumed):
    """2020-05-02T00:47:31-07:00 lies after checkpoint 5's file time but before 5.json's.
    delta-rs answers v5 (it clamps to the earliest); Delta Spark's rule (ours) is that the
    earliest reconstructable commit, v5 at 2020-05-02T22:47:31, is after the timestamp: error."""
    t = DeltaTable(str(vacuumed))
    with pytest.raises(TimestampOutOfRangeError) as ei:
        t.version_at(pdt(2, hour=0))
    assert ei.value.earliest == pdt(2)
    assert t.version_at(pdt(2)) == 5


def test_checkpoints_vacuumed_after_latest(vacuumed):
    t = DeltaTable(str(vacuumed))
    with pytest.raises(TimestampOutOfRangeError):
        t.version_at(pdt(11))
    assert t.version_at(pdt(11), allow_after_latest=True) == 12
    assert t.version_at(pdt(10), allow_after_latest=False) == 12
