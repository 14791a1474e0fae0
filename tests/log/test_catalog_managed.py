"""Catalog-managed tables (corpus E8): ratified staged commits supplied by the catalog."""
from __future__ import annotations

import os

import pytest

from airflow_provider_delta.log import (
    DeltaTable, InvalidArgumentError, StagedCommitsCatalog, TimestampOutOfRangeError, UnsupportedFeatureError,
)

V0, V1, V2 = 1749830855993, 1749830871085, 1749830881799


@pytest.fixture
def catalog_table(corpus):
    path = corpus / "delta-kernel-rs" / "catalog_managed_0"
    names = sorted(os.listdir(path / "_delta_log" / "_staged_commits"))
    catalog = StagedCommitsCatalog({int(n[:20]): n for n in names}, max_ratified_version=2)
    return DeltaTable(str(path), commit_owner=catalog)


def test_latest_snapshot_uses_staged_tail(catalog_table):
    snap = catalog_table.snapshot(version=2)
    assert snap.version == 2
    assert len(snap.segment.commits) == 3
    assert snap.timestamp == V2
    assert snap.protocol.min_reader_version == 3 and snap.protocol.min_writer_version == 7
    assert "catalogManaged" in snap.protocol.reader_features
    assert "inCommitTimestamp" in snap.protocol.writer_features
    rows = sorted((r["part1"], r["col1"]) for r in snap.to_pyarrow().to_pylist())
    assert rows == [(x // 100, x) for x in range(200)]


def test_history_uses_in_commit_timestamps(catalog_table):
    assert [(h["version"], h["timestamp"]) for h in catalog_table.history()] == [(2, V2), (1, V1), (0, V0)]


@pytest.mark.parametrize("ts,expected", [(V0, 0), (V0 + 1, 0), (V1, 1), (V1 + 1, 1), (V2, 2)])
def test_active_commit_at_timestamp(catalog_table, ts, expected):
    assert catalog_table.version_at(ts) == expected
    assert catalog_table.snapshot(timestamp=ts).timestamp == [V0, V1, V2][expected]


def test_timestamps_outside_the_range(catalog_table):
    with pytest.raises(TimestampOutOfRangeError, match="before the earliest"):
        catalog_table.version_at(V0 - 1)
    with pytest.raises(TimestampOutOfRangeError, match="after the latest"):
        catalog_table.version_at(V2 + 1)
    assert catalog_table.version_at(V2 + 1, allow_after_latest=True) == 2


def test_catalog_bounds_the_tail(corpus):
    path = corpus / "delta-kernel-rs" / "catalog_managed_0"
    names = sorted(os.listdir(path / "_delta_log" / "_staged_commits"))
    only_v1 = StagedCommitsCatalog({1: names[0]}, max_ratified_version=1)
    assert DeltaTable(str(path), commit_owner=only_v1).snapshot().version == 1


def test_without_catalog_the_feature_is_refused(corpus):
    with pytest.raises(UnsupportedFeatureError, match="catalogManaged") as e:
        DeltaTable(str(corpus / "delta-kernel-rs" / "catalog_managed_0")).snapshot()
    assert e.value.feature == "catalogManaged"


def test_misnamed_staged_commit_is_refused():
    with pytest.raises(InvalidArgumentError):
        StagedCommitsCatalog({1: "00000000000000000002.4cb9708e-b478-44de-b203-53f9ba9b2876.json"})
