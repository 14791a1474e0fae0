"""E10, E11, E14, E15: delta-rs test tables.

In-commit timestamps that were hand-edited to be non-monotonic (cdc_ict_table),
the table state of delta-rs's CDF tables, a Delta 0.2.0 table with a checkpoint
and tombstones, a table whose early commits were vacuumed, and the "exotic"
broken logs delta-rs must open or refuse. Expected values: README E10-E15.
Timestamp lookups on these tables are in ``test_time_travel_corpus.py`` and
history limits in ``test_history.py``.
"""
from __future__ import annotations

import pytest

from airflow_provider_delta.log import (
    CorruptLogError, DeltaTable, UnsupportedFeatureError, VersionNotFoundError,
)
from corpus_expected import (
    CDC_ICT, CDC_ICT_OPERATIONS, DELTA_020_FILES, E15_EXPECTED, column_values,
)

DRS = "delta-rs"


def _table(corpus, name: str) -> DeltaTable:
    return DeltaTable(str(corpus / DRS / name))


# ---------------------------------------------------------------------------- E10


def test_cdc_ict_table_timestamps_are_the_in_commit_timestamps(corpus):
    """ICT from creation: every version's commit time is its commitInfo.inCommitTimestamp,
    including v1's hand-edited 2023 value (not the 2026 commitInfo.timestamp)."""
    t = _table(corpus, "cdc_ict_table")
    snap = t.snapshot()
    assert snap.in_commit_timestamps_enabled
    assert snap.timestamp == CDC_ICT[3]
    hist = t.history()
    assert [h["version"] for h in hist] == [3, 2, 1, 0]
    for h in hist:
        assert h["timestamp"] == CDC_ICT[h["version"]]
        assert h["operation"] == CDC_ICT_OPERATIONS[h["version"]]
    for v, ict in CDC_ICT.items():
        assert t.snapshot(version=v).timestamp == ict
        assert snap.commit_timestamp(v) == ict
    ci1 = [a["commitInfo"] for a in t.read_commit(1) if "commitInfo" in a][0]
    assert ci1["timestamp"] != CDC_ICT[1]  # history did not fall back to commitInfo.timestamp


def test_cdc_ict_table_exact_ict_lookups(corpus):
    """Exact ICTs of the monotonic part resolve to their version. (The table breaks the
    protocol's monotonic-ICT rule at v1 on purpose; lookups between v0 and v2 may differ
    between a binary search (ours, Delta Spark's) and delta-rs's per-commit filter, so
    they are not asserted.)"""
    t = _table(corpus, "cdc_ict_table")
    assert t.version_at(CDC_ICT[2]) == 2
    assert t.version_at(CDC_ICT[3]) == 3
    assert t.version_at(CDC_ICT[3] - 1) == 2


def test_cdc_ict_table_state(corpus):
    """From the CDF expectations: v1 inserts 4 rows, v2 deletes Dan and Dave, v3 updates
    Kate 36->37 and Steve 40->41 (UPDATE without predicate, 2 rows)."""
    t = _table(corpus, "cdc_ict_table")
    assert t.snapshot(version=0).to_pyarrow().num_rows == 0
    cols = ["name", "age", "birthyear"]

    def rows(v):
        return sorted(tuple(r[c] for c in cols) for r in t.snapshot(version=v).to_pyarrow().to_pylist())

    v2 = [("Kate", 36, 1995), ("Steve", 40, 1986)]
    assert rows(2) == v2
    assert rows(1) == sorted(v2 + [("Dan", 14, 1995), ("Dave", 22, 1995)])
    assert rows(3) == [("Kate", 37, 1995), ("Steve", 41, 1986)]


# ---------------------------------------------------------------------------- E11


def test_checkpoint_cdf_table_state(corpus):
    """Commits 0-2 removed, checkpoint at 3: v3 is cdf-table's v3 (id 7 deleted), v4 inserts
    ids 11-14, v5 updates those rows (ids move to 12-15). Versions 0-2 are gone."""
    t = _table(corpus, "checkpoint-cdf-table")
    base = [1, 2, 3, 4, 5, 6, 8, 9, 10]
    assert column_values(t.snapshot(version=3).to_pyarrow(), "id") == base
    assert column_values(t.snapshot(version=4).to_pyarrow(), "id") == base + [11, 12, 13, 14]
    latest = t.snapshot()
    assert latest.version == 5
    ids = column_values(latest.to_pyarrow(), "id")
    assert len(ids) == 13 and ids[:9] == base and all(11 <= i <= 15 for i in ids[9:])
    for v in (0, 1, 2):
        with pytest.raises(VersionNotFoundError) as ei:
            t.snapshot(version=v)
        assert (ei.value.earliest, ei.value.latest) == (3, 5)


# ---------------------------------------------------------------------------- E14


@pytest.mark.parametrize("version", sorted(DELTA_020_FILES))
def test_delta_020_files(corpus, version):
    t = _table(corpus, "delta-0.2.0")
    snap = t.snapshot(version=None if version == 3 else version)
    assert snap.version == version
    assert set(snap.files().column("path").to_pylist()) == DELTA_020_FILES[version]


def test_delta_020_checkpoint_and_tombstones(corpus):
    t = _table(corpus, "delta-0.2.0")
    snap = t.snapshot()
    assert snap.segment.checkpoint_version == 3
    (latest_ci,) = [a["commitInfo"] for a in t.read_commit(3) if "commitInfo" in a]
    # seen from the time of the last commit there are 4 unexpired tombstones ...
    assert snap.tombstones(now_ms=latest_ci["timestamp"]).num_rows == 4
    # ... which expire after delta.deletedFileRetentionDuration (default 1 week)
    assert snap.tombstones(now_ms=latest_ci["timestamp"] + 8 * 24 * 3600 * 1000).num_rows == 0
    assert snap.tombstones().num_rows == 0  # the table is from 2019


def test_checkpoints_vacuumed_latest_and_earliest(corpus):
    t = _table(corpus, "checkpoints_vacuumed")
    snap = t.snapshot()
    assert snap.version == 12
    assert snap.segment.checkpoint_version == 10
    assert t.snapshot(version=5).segment.checkpoint_version == 5
    for v in (0, 4):
        with pytest.raises(VersionNotFoundError) as ei:
            t.snapshot(version=v)
        assert (ei.value.earliest, ei.value.latest) == (5, 12)
        assert "5" in str(ei.value) and "12" in str(ei.value)


# ---------------------------------------------------------------------------- E15


@pytest.mark.parametrize("name", sorted(E15_EXPECTED))
def test_exotic_logs_open_or_fail(corpus, name):
    # table_g (stray 9999.json + 9999.checkpoint) is not asserted upstream either.
    expected = E15_EXPECTED[name]
    t = DeltaTable(str(corpus / DRS / "data_err_logs" / name))
    if expected is None:
        snap = t.snapshot()
        assert snap.version == 13
        assert snap.segment.checkpoint_version == 10
    elif expected == "gap":
        with pytest.raises(CorruptLogError) as ei:
            t.snapshot()
        assert "12" in str(ei.value) and "not contiguous" in str(ei.value)
    else:
        with pytest.raises(UnsupportedFeatureError) as ei:
            t.snapshot()
        assert ei.value.feature == expected
        assert expected in str(ei.value)


def test_exotic_table_b_missing_commit_before_checkpoint(corpus):
    """7.json is missing, but version 13 only needs checkpoint 10 and commits 11-13;
    versions below 10 cannot be rebuilt across the hole at 7."""
    t = DeltaTable(str(corpus / DRS / "data_err_logs" / "table_b"))
    assert t.snapshot(version=10).version == 10
    assert t.snapshot(version=6).version == 6  # commits 0..6 are contiguous
    with pytest.raises((CorruptLogError, VersionNotFoundError)):
        t.snapshot(version=8)
