"""Checkpoints that carry only ``stats_parsed`` (writeStatsAsJson=false) still give JSON stats."""
from __future__ import annotations

import json

import pytest

from airflow_provider_delta.log import DeltaTable

TABLES = ["v1-single-part-struct-stats-only", "v1-multi-part-struct-stats-only",
          "v1-multi-part-partitioned-struct-stats-only", "v2-classic-parquet-struct-stats-only",
          "v2-json-sidecars-struct-stats-only", "v2-parquet-sidecars-struct-stats-only"]


@pytest.mark.parametrize("name", TABLES)
def test_stats_rebuilt_from_stats_parsed(corpus, name):
    files = DeltaTable(str(corpus / "delta-kernel-rs" / name)).snapshot().files()
    stats = [json.loads(s) for s in files.column("stats").to_pylist()]
    assert len(stats) == 5
    assert sum(s["numRecords"] for s in stats) == 5
    ids = sorted(s["minValues"]["id"] for s in stats)
    assert ids == [1, 2, 3, 4, 5]
    for s in stats:
        assert s["minValues"]["id"] == s["maxValues"]["id"]
        assert s["minValues"]["value"] == f"value_{s['minValues']['id']}"
        assert s["nullCount"] == {"id": 0, "value": 0}
