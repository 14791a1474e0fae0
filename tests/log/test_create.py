"""DeltaTable.create: version 0, the protocol its features need, and refusals that write nothing."""
from __future__ import annotations

import json
import threading
import uuid

import pyarrow as pa
import pytest

from airflow_provider_delta.log import (DeltaTable, InMemoryCommitOwner, InvalidArgumentError,
                                        TableAlreadyExistsError, UnsupportedFeatureError)
from airflow_provider_delta.log.base.actions import Protocol
from airflow_provider_delta.log.base.features import is_downgrade, protocol_with_features
from airflow_provider_delta.log.base.schema import schema_string

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string()), ("day", pa.date32())])


def log_lines(path, version: int) -> list[dict]:
    text = (path / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_create_writes_version_0_with_protocol_metadata_and_commit_info(tmp_path):
    t = DeltaTable.create(str(tmp_path), SCHEMA, partition_by=["day"], properties={"foo": "bar"},
                          name="orders", description="test table", clock=lambda: 1_700_000_000_000,
                          job={"dag_id": "d", "task_id": "t"}, user_metadata="hello")
    actions = log_lines(tmp_path, 0)
    assert list(actions[0]) == ["commitInfo"]
    info = actions[0]["commitInfo"]
    assert info["operation"] == "CREATE TABLE"
    assert info["timestamp"] == 1_700_000_000_000
    assert info["operationParameters"]["partitionBy"] == '["day"]'
    assert json.loads(info["operationParameters"]["properties"]) == {"foo": "bar"}
    assert info["engineInfo"].startswith("airflow-provider-delta/")
    assert info["job"] == {"dag_id": "d", "task_id": "t"} and info["userMetadata"] == "hello"
    uuid.UUID(info["txnId"])
    assert "readVersion" not in info
    proto = next(a["protocol"] for a in actions if "protocol" in a)
    assert proto == {"minReaderVersion": 1, "minWriterVersion": 2}
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    uuid.UUID(meta["id"])
    assert meta["schemaString"] == schema_string(SCHEMA)
    assert meta["partitionColumns"] == ["day"]
    assert meta["configuration"] == {"foo": "bar"}
    assert meta["createdTime"] == 1_700_000_000_000
    assert meta["name"] == "orders" and meta["description"] == "test table"
    snap = t.snapshot()
    assert snap.version == 0 and snap.schema.names == SCHEMA.names and snap.partition_columns == ("day",)
    assert snap.files().num_rows == 0


P12 = {"minReaderVersion": 1, "minWriterVersion": 2}


@pytest.mark.parametrize("schema, props, expected", [
    (SCHEMA, {}, P12),
    (SCHEMA, {"delta.appendOnly": "true"}, P12),
    (SCHEMA, {"delta.constraints.positive": "id > 0"}, {"minReaderVersion": 1, "minWriterVersion": 3}),
    (SCHEMA, {"delta.enableChangeDataFeed": True}, {"minReaderVersion": 1, "minWriterVersion": 4}),
    (SCHEMA, {"delta.enableInCommitTimestamps": "true"},
     {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "invariants", "inCommitTimestamp"]}),
    (SCHEMA, {"delta.enableChangeDataFeed": "true", "delta.enableInCommitTimestamps": "true"},
     {"minReaderVersion": 1, "minWriterVersion": 7,
      "writerFeatures": ["appendOnly", "invariants", "changeDataFeed", "inCommitTimestamp"]}),
    (pa.schema([("ts", pa.timestamp("us"))]), {},
     {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["timestampNtz"],
      "writerFeatures": ["appendOnly", "invariants", "timestampNtz"]}),
    (SCHEMA, {"delta.enableDeletionVectors": "true"},
     {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
      "writerFeatures": ["appendOnly", "invariants", "deletionVectors"]}),
    (SCHEMA, {"delta.minWriterVersion": "7"},
     {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "invariants"]}),
    (SCHEMA, {"delta.minReaderVersion": "3", "delta.minWriterVersion": "7"},
     {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": [],
      "writerFeatures": ["appendOnly", "invariants"]}),
    (SCHEMA, {"delta.feature.inCommitTimestamp": "supported"},
     {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["appendOnly", "invariants", "inCommitTimestamp"]}),
])
def test_protocol_follows_features_in_use(tmp_path, schema, props, expected):
    DeltaTable.create(str(tmp_path), schema, properties=props)
    actions = log_lines(tmp_path, 0)
    assert next(a["protocol"] for a in actions if "protocol" in a) == expected
    conf = next(a["metaData"] for a in actions if "metaData" in a)["configuration"]
    # protocol requests are not table properties (as in Delta Spark)
    assert not any(k.startswith("delta.feature.") or k.startswith("delta.min") for k in conf)


def test_generated_column_metadata_needs_writer_4(tmp_path):
    field = pa.field("g", pa.int64(), metadata={b"delta.metadata": b'{"delta.generationExpression":"id + 1"}'})
    DeltaTable.create(str(tmp_path), pa.schema([("id", pa.int64()), field]))
    proto = log_lines(tmp_path, 0)[1]["protocol"]
    assert proto == {"minReaderVersion": 1, "minWriterVersion": 4}


def nothing_written(path) -> bool:
    return not (path / "_delta_log").exists() or not any((path / "_delta_log").iterdir())


@pytest.mark.parametrize("kwargs, error", [
    ({"partition_by": ["nope"]}, InvalidArgumentError),
    ({"partition_by": ["id", "id"]}, InvalidArgumentError),
    ({"partition_by": ["id", "name", "day"]}, InvalidArgumentError),
    ({"properties": {"delta.enableInCommitTimestamps": "yes"}}, InvalidArgumentError),
    ({"properties": {"delta.enableRowTracking": "true"}}, UnsupportedFeatureError),
    ({"properties": {"delta.columnMapping.mode": "name"}}, UnsupportedFeatureError),
    ({"properties": {"delta.feature.someFutureThing": "supported"}}, UnsupportedFeatureError),
    ({"properties": {"delta.minReaderVersion": "3", "delta.minWriterVersion": "5"}}, InvalidArgumentError),
    ({"properties": {"delta.managedCommit.commitOwner": "x"}}, InvalidArgumentError),
])
def test_bad_input_is_a_typed_error_and_writes_nothing(tmp_path, kwargs, error):
    with pytest.raises(error):
        DeltaTable.create(str(tmp_path / "t"), SCHEMA, **kwargs)
    assert nothing_written(tmp_path / "t")


def test_nested_partition_column_and_bad_schemas_are_refused(tmp_path):
    schema = pa.schema([("s", pa.struct([("a", pa.int32())])), ("x", pa.int32())])
    with pytest.raises(InvalidArgumentError, match="primitive"):
        DeltaTable.create(str(tmp_path / "t"), schema, partition_by=["s"])
    with pytest.raises(InvalidArgumentError):
        DeltaTable.create(str(tmp_path / "t"), pa.schema([]))
    with pytest.raises(InvalidArgumentError):
        DeltaTable.create(str(tmp_path / "t"), ["id"])
    with pytest.raises(InvalidArgumentError):
        DeltaTable.create(str(tmp_path / "t"), pa.schema([("a", pa.uint64())]))
    assert nothing_written(tmp_path / "t")


def test_creating_over_an_existing_table_fails_and_changes_nothing(tmp_path):
    DeltaTable.create(str(tmp_path), SCHEMA)
    before = sorted(p.name for p in (tmp_path / "_delta_log").iterdir())
    first = (tmp_path / "_delta_log" / f"{0:020d}.json").read_bytes()
    with pytest.raises(TableAlreadyExistsError):
        DeltaTable.create(str(tmp_path), pa.schema([("other", pa.int32())]))
    assert sorted(p.name for p in (tmp_path / "_delta_log").iterdir()) == before
    assert (tmp_path / "_delta_log" / f"{0:020d}.json").read_bytes() == first


def test_racing_creators_exactly_one_wins(tmp_path):
    results: list[object] = []
    barrier = threading.Barrier(8)

    def create(i):
        barrier.wait()
        try:
            t = DeltaTable.create(str(tmp_path), pa.schema([(f"c{i}", pa.int64())]))
            results.append(t.snapshot().metadata.id)
        except TableAlreadyExistsError as e:
            results.append(e)

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    winners = [r for r in results if isinstance(r, str)]
    assert len(winners) == 1 and len(results) == 8
    assert DeltaTable(str(tmp_path)).snapshot().metadata.id == winners[0]
    assert sorted(p.name for p in (tmp_path / "_delta_log").iterdir()) == [f"{0:020d}.json"]


def test_create_with_commit_owner_registers_a_managed_table(tmp_path):
    owner = InMemoryCommitOwner()
    t = DeltaTable.create(str(tmp_path), SCHEMA, commit_owner=owner)
    actions = log_lines(tmp_path, 0)
    proto = next(a["protocol"] for a in actions if "protocol" in a)
    assert proto["minWriterVersion"] == 7
    assert {"managedCommit", "inCommitTimestamp"} <= set(proto["writerFeatures"])
    meta = next(a["metaData"] for a in actions if "metaData" in a)
    assert meta["configuration"]["delta.managedCommit.commitOwner"] == owner.name
    assert meta["configuration"]["delta.enableInCommitTimestamps"] == "true"
    assert "inCommitTimestamp" in actions[0]["commitInfo"]
    state = owner.describe_table(meta["id"])
    assert state is not None and state.latest_version == 0
    # the next commit goes through the owner
    assert t.write(pa.table({"id": [1], "name": ["a"], "day": [None]})) == 1
    assert owner.describe_table(meta["id"]).latest_version == 1


def test_protocol_upgrades_keep_legacy_features_explicitly():
    assert protocol_with_features(Protocol(1, 2), {"changeDataFeed"}) == Protocol(1, 4)
    p = protocol_with_features(Protocol(2, 5), {"inCommitTimestamp"})
    assert p == Protocol(2, 7, None, ("appendOnly", "invariants", "checkConstraints", "changeDataFeed",
                                      "generatedColumns", "columnMapping", "inCommitTimestamp"))
    p = protocol_with_features(Protocol(2, 5), {"deletionVectors"})
    assert p.min_reader_version == 3 and p.reader_features == ("columnMapping", "deletionVectors")
    assert set(p.reader_features) <= set(p.writer_features)
    same = Protocol(1, 7, None, ("inCommitTimestamps",))     # the RFC spelling counts
    assert protocol_with_features(same, {"inCommitTimestamp"}) is same
    assert is_downgrade(Protocol(1, 4), Protocol(1, 7, None, ("appendOnly",)))
    assert not is_downgrade(Protocol(1, 2), Protocol(1, 7, None, ("appendOnly", "invariants")))
    assert is_downgrade(Protocol(3, 7, ("timestampNtz",), ("timestampNtz",)), Protocol(1, 7, None, ("timestampNtz",)))
