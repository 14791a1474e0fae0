"""In-commit timestamps on the write side: monotonic under any clock, enablement provenance, retries."""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, TimestampOutOfRangeError
from airflow_provider_delta.log.base.actions import Protocol
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.ict import (ENABLEMENT_TIMESTAMP_PROPERTY, ENABLEMENT_VERSION_PROPERTY,
                                            next_timestamp)

SCHEMA = pa.schema([("id", pa.int64())])
ICT_ON = {"delta.enableInCommitTimestamps": "true"}
T0 = 1_800_000_000_000


class Clock:
    """A clock that returns the given values in turn (repeating the last one)."""

    def __init__(self, *values: int):
        self.values = list(values)

    def __call__(self) -> int:
        return self.values.pop(0) if len(self.values) > 1 else self.values[0]


def first_action(table: DeltaTable, version: int) -> dict:
    return table.read_commit(version)[0]


def ict_of(table: DeltaTable, version: int) -> int:
    return first_action(table, version)["commitInfo"]["inCommitTimestamp"]


def append(table: DeltaTable, name: str, **kw) -> int:
    with table.transaction(**kw) as txn:
        txn.add_file(AddFile(name, 1, {}, 1))
    return txn.version


def test_next_timestamp_rule():
    assert next_timestamp(lambda: 100, None) == 100
    assert next_timestamp(lambda: 100, 50) == 100
    assert next_timestamp(lambda: 100, 100) == 101
    assert next_timestamp(lambda: 10, 500) == 501


def test_table_created_with_ict_needs_no_enablement_properties(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, properties=ICT_ON, clock=lambda: T0)
    first = first_action(t, 0)
    assert first["commitInfo"]["inCommitTimestamp"] == T0 == first["commitInfo"]["timestamp"]
    snap = t.snapshot()
    assert snap.protocol == Protocol(1, 7, None, ("appendOnly", "invariants", "inCommitTimestamp"))
    assert ENABLEMENT_VERSION_PROPERTY not in snap.metadata.configuration
    assert snap.timestamp == T0


def test_ict_strictly_increases_when_the_clock_goes_backwards(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, properties=ICT_ON, clock=lambda: T0)
    clocks = [T0 - 1000, T0 + 50, T0 + 49, T0 - 10**9, T0 + 10**6]
    for i, c in enumerate(clocks):
        assert append(t, f"f{i}.parquet", clock=lambda c=c: c) == i + 1
    icts = [ict_of(t, v) for v in range(len(clocks) + 1)]
    assert icts == [T0, T0 + 1, T0 + 50, T0 + 51, T0 + 52, T0 + 10**6]
    assert all(b > a for a, b in zip(icts, icts[1:]))
    # readers see the ICTs as commit timestamps
    assert [h["timestamp"] for h in t.history()] == list(reversed(icts))


def test_commit_info_is_first_action_of_every_ict_commit(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, properties=ICT_ON)
    with t.transaction(operation="DELETE") as txn:
        txn.set_txn("app", 1)
        txn.add_file(AddFile("a.parquet", 1, {}, 1))
    actions = t.read_commit(txn.version)
    assert list(actions[0]) == ["commitInfo"] and "inCommitTimestamp" in actions[0]["commitInfo"]
    assert all("commitInfo" not in a for a in actions[1:])


def test_retry_recomputes_ict_against_the_winner(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, properties=ICT_ON, clock=lambda: T0)
    fast = t.transaction(clock=lambda: T0 + 10_000)
    slow = t.transaction(clock=lambda: T0 + 5)
    assert fast.read_version == slow.read_version == 0
    fast.add_file(AddFile("fast.parquet", 1, {}, 1))
    slow.add_file(AddFile("slow.parquet", 1, {}, 1))
    fast.commit()
    assert slow.commit() == 2 and slow.attempts == 2
    assert ict_of(t, 1) == T0 + 10_000
    assert ict_of(t, 2) == T0 + 10_001


def test_enable_mid_history(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    append(t, "a.parquet")
    append(t, "b.parquet")
    # the previous commit's file claims a time later than our clock: ICT must still exceed it
    last = tmp_path / "_delta_log" / f"{2:020d}.json"
    future_s = time.time() + 3600
    os.utime(last, (future_s, future_s))
    now = int(time.time() * 1000)
    v = t.enable_in_commit_timestamps(clock=lambda: now)
    assert v == 3
    actions = t.read_commit(3)
    ict = actions[0]["commitInfo"]["inCommitTimestamp"]
    assert ict > int(future_s * 1000) - 1 and ict > now
    assert actions[0]["commitInfo"]["operation"] == "SET TBLPROPERTIES"
    proto = next(a["protocol"] for a in actions if "protocol" in a)
    # the legacy (1, 4) features are listed explicitly when moving to writer 7
    assert proto == {"minReaderVersion": 1, "minWriterVersion": 7,
                     "writerFeatures": ["appendOnly", "invariants", "checkConstraints", "changeDataFeed",
                                        "generatedColumns", "inCommitTimestamp"]}
    conf = next(a["metaData"] for a in actions if "metaData" in a)["configuration"]
    assert conf["delta.enableInCommitTimestamps"] == "true"
    assert conf[ENABLEMENT_VERSION_PROPERTY] == "3"
    assert conf[ENABLEMENT_TIMESTAMP_PROPERTY] == str(ict)
    assert conf["delta.enableChangeDataFeed"] == "true"
    snap = t.snapshot()
    assert snap.in_commit_timestamps_enabled and snap.timestamp == ict
    assert tuple(snap.ict_enablement) == (3, ict)
    # later commits keep increasing and keep the enablement provenance
    v4 = append(t, "c.parquet", clock=lambda: now - 5000)
    assert ict_of(t, v4) == ict + 1
    assert t.snapshot().metadata.configuration[ENABLEMENT_VERSION_PROPERTY] == "3"
    # enabling again commits nothing and reports where ICT started
    assert t.enable_in_commit_timestamps() == 3
    assert t.latest_version() == v4


def test_enablement_retried_after_a_concurrent_append_records_the_new_version(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA)
    enabler = t.transaction(operation="SET TBLPROPERTIES")
    assert enabler.read_version == 0
    enabler.set_properties(ICT_ON)
    append(t, "racer.parquet")
    assert enabler.commit() == 2
    conf = t.snapshot().metadata.configuration
    assert conf[ENABLEMENT_VERSION_PROPERTY] == "2"
    assert conf[ENABLEMENT_TIMESTAMP_PROPERTY] == str(ict_of(t, 2))
    assert ict_of(t, 2) > t.storage.mtime_ms(f"_delta_log/{1:020d}.json")


def test_rfc_feature_spelling_is_honoured(tmp_path):
    (tmp_path / "_delta_log").mkdir()
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
    lines = [
        {"commitInfo": {"timestamp": T0, "inCommitTimestamp": T0, "operation": "CREATE TABLE"}},
        {"protocol": {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["inCommitTimestamps"]}},
        {"metaData": {"id": "abc", "format": {"provider": "parquet", "options": {}}, "schemaString": schema,
                      "partitionColumns": [], "configuration": ICT_ON}},
    ]
    (tmp_path / "_delta_log" / f"{0:020d}.json").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    t = DeltaTable(str(tmp_path))
    assert t.enable_in_commit_timestamps() == 0
    v = append(t, "x.parquet", clock=lambda: T0 - 100)
    assert ict_of(t, v) == T0 + 1
    assert t.snapshot().protocol.writer_features == ("inCommitTimestamps",)   # not duplicated


def test_disabling_drops_enablement_provenance(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA)
    t.enable_in_commit_timestamps()
    with t.transaction() as txn:
        txn.set_properties({"delta.enableInCommitTimestamps": "false"})
    conf = t.snapshot().metadata.configuration
    assert ENABLEMENT_VERSION_PROPERTY not in conf and ENABLEMENT_TIMESTAMP_PROPERTY not in conf
    v = append(t, "after.parquet")
    assert "inCommitTimestamp" not in first_action(t, v)["commitInfo"]


def test_time_travel_by_timestamp_uses_our_icts(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, properties=ICT_ON, clock=lambda: T0)
    for i in range(1, 5):
        append(t, f"f{i}.parquet", clock=lambda i=i: T0 + 1000 * i)
    for v in range(5):
        assert t.version_at(T0 + 1000 * v) == v
        if v < 4:
            assert t.version_at(T0 + 1000 * v + 999) == v
    assert t.snapshot(timestamp=T0 + 2500).version == 2
    with pytest.raises(TimestampOutOfRangeError):
        t.version_at(T0 - 1)
