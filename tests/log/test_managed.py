"""Managed commits at the table level: validity rules, backfill, enabling and disabling.

Runs on real tables (DeltaTable.create / write, or hand-written commits where a
table must be in a state our writer refuses to produce) with each commit owner:
in-memory, SQLite file and PostgreSQL.
"""
from __future__ import annotations

import json
import uuid

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.actions import Metadata, Protocol
from airflow_provider_delta.log.base.commit_actions import dumps_actions
from airflow_provider_delta.log.base.commit_owner import InMemoryCommitOwner, SqlCommitOwner
from airflow_provider_delta.log.base.errors import (
    CommitFailedError, CorruptLogError, InvalidArgumentError, InvalidTableStateError)
from airflow_provider_delta.log.base.features import MANAGED_COMMIT_FEATURE as MANAGED_FEATURE
from airflow_provider_delta.log.base.features import MANAGED_OWNER_CONF_PROPERTY as OWNER_CONF_PROP
from airflow_provider_delta.log.base.features import MANAGED_OWNER_PROPERTY as OWNER_PROP
from airflow_provider_delta.log.write.managed import backfill, disable_managed_commits, enable_managed_commits
from airflow_provider_delta.log.read.managed_state import owner_of, validate_managed_state
from airflow_provider_delta.log.base.names import COMMITS_DIR, commit_path
from airflow_provider_delta.log.base.storage import Storage

SCHEMA = pa.schema([("id", pa.int64())])
SCHEMA_STRING = json.dumps({"type": "struct", "fields": [
    {"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
ICT_ON = {"delta.enableInCommitTimestamps": "true"}
MANAGED_PROTOCOL = Protocol(1, 7, None, ("appendOnly", "invariants", "inCommitTimestamp", MANAGED_FEATURE))


def meta(conf: dict[str, str]) -> Metadata:
    return Metadata(id=str(uuid.uuid4()), schema_string=SCHEMA_STRING, configuration=conf)


def rows(table: DeltaTable) -> list[int]:
    return sorted(table.snapshot().to_pyarrow().column("id").to_pylist())


def log_versions(table: DeltaTable) -> list[int]:
    return sorted(int(f.name[:20]) for f in table.storage.list_dir("_delta_log") if f.name.endswith(".json"))


def actions_of(table: DeltaTable, version: int) -> list[dict]:
    return [json.loads(line) for line in table.storage.read_bytes(commit_path(version)).splitlines()]


def filesystem_table(tmp_path, name: str = "t", n: int = 2) -> DeltaTable:
    """A plain table (protocol 1/2, no ICT) with ``n`` appends after creation."""
    table = DeltaTable.create(str(tmp_path / name), SCHEMA)
    for i in range(n):
        table.write(pa.table({"id": [i]}))
    return table


# ------------------------------------------------------------------ validity
def test_validate_managed_state_accepts_complete_configurations():
    assert validate_managed_state(Protocol(1, 2), meta({})) is False
    assert validate_managed_state(Protocol(3, 7, (), ("inCommitTimestamp",)), meta(ICT_ON)) is False
    conf = {OWNER_PROP: "sql", OWNER_CONF_PROP: '{"url":"sqlite:////x.db"}', **ICT_ON}
    assert validate_managed_state(MANAGED_PROTOCOL, meta(conf)) is True
    # the RFC's spelling of the ICT feature is accepted when reading
    rfc = Protocol(1, 7, None, ("inCommitTimestamps", MANAGED_FEATURE))
    assert validate_managed_state(rfc, meta({OWNER_PROP: "sql", **ICT_ON})) is True
    assert owner_of(meta(conf)) == ("sql", {"url": "sqlite:////x.db"})
    assert owner_of(meta({})) is None


@pytest.mark.parametrize("protocol,conf,words", [
    (Protocol(1, 7, None, ("inCommitTimestamp",)), {OWNER_PROP: "sql", **ICT_ON}, "does not list"),
    (MANAGED_PROTOCOL, ICT_ON, "no delta.managedCommit.commitOwner"),
    (Protocol(1, 7, None, (MANAGED_FEATURE,)), {OWNER_PROP: "sql", **ICT_ON}, "in-commit timestamps"),
    (MANAGED_PROTOCOL, {OWNER_PROP: "sql"}, "in-commit timestamps"),
    (MANAGED_PROTOCOL, {OWNER_PROP: "sql", "delta.enableInCommitTimestamps": "false"}, "in-commit"),
    (MANAGED_PROTOCOL, {OWNER_PROP: " ", **ICT_ON}, "is empty"),
    (MANAGED_PROTOCOL, {OWNER_PROP: "sql", OWNER_CONF_PROP: '{"token":"abc"}', **ICT_ON}, "secrets"),
    (MANAGED_PROTOCOL, {OWNER_PROP: "sql", OWNER_CONF_PROP: '{"Password":"abc"}', **ICT_ON}, "secrets"),
    (MANAGED_PROTOCOL, {OWNER_PROP: "sql", OWNER_CONF_PROP: "not json", **ICT_ON}, "not valid JSON"),
    (MANAGED_PROTOCOL, {OWNER_PROP: "sql", OWNER_CONF_PROP: '{"n":1}', **ICT_ON}, "strings"),
])
def test_validate_managed_state_rejects_half_configured_tables(protocol, conf, words):
    with pytest.raises(InvalidTableStateError, match=words):
        validate_managed_state(protocol, meta(conf))


def test_reading_a_half_configured_table_fails_clearly(tmp_path):
    """The read path applies the same rules: a property without the feature is invalid."""
    storage = Storage(str(tmp_path / "bad"))
    m = meta({OWNER_PROP: "sql", **ICT_ON})
    storage.put_if_absent(commit_path(0), dumps_actions([
        {"commitInfo": {"timestamp": 1, "inCommitTimestamp": 1, "operation": "CREATE TABLE"}},
        {"protocol": Protocol(1, 7, None, ("inCommitTimestamp",)).to_json()},
        {"metaData": m.to_json()}]))
    with pytest.raises(InvalidTableStateError, match="managedCommit"):
        DeltaTable(str(tmp_path / "bad")).snapshot()


# ------------------------------------------------------------------ backfill
def test_backfill_of_a_managed_table(make_owner, tmp_path):
    owner = make_owner(batch=10)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    for i in range(3):
        table.write(pa.table({"id": [i]}))
    # readers that do not ask the owner see only the backfilled part
    assert DeltaTable(table.uri).latest_version() == 0
    assert table.latest_version() == 3 and rows(table) == [0, 1, 2]
    result = backfill(table, 2)
    assert result["managed"] and result["backfilled"] == [1, 2] and (result["from"], result["to"]) == (1, 2)
    assert result["backfilled_version"] == 2 and result["latest_version"] == 3
    assert DeltaTable(table.uri).latest_version() == 2
    result = table.backfill()
    assert result["backfilled"] == [3] and result["to"] == 3
    assert log_versions(table) == [0, 1, 2, 3]
    assert rows(DeltaTable(table.uri)) == [0, 1, 2]
    again = backfill(table)
    assert again["backfilled"] == [] and again["from"] is None and again["backfilled_version"] == 3
    with pytest.raises(InvalidArgumentError, match="only up to 3"):
        backfill(table, 7)
    with pytest.raises(InvalidArgumentError):
        backfill(table, -1)


def test_backfill_of_a_filesystem_table_is_a_clear_no_op(tmp_path):
    table = filesystem_table(tmp_path)
    before = log_versions(table)
    result = backfill(table)
    assert result["managed"] is False and result["backfilled"] == [] and result["to"] is None
    assert "not a managed-commit table" in result["message"]
    assert log_versions(table) == before


def test_backfill_needs_the_tables_own_owner(make_owner, tmp_path):
    owner = make_owner(batch=10)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    table.write(pa.table({"id": [1]}))
    with pytest.raises(InvalidArgumentError, match="commit_owner="):
        backfill(DeltaTable(table.uri))

    class OtherOwner(InMemoryCommitOwner):
        name = "other"

    with pytest.raises(InvalidArgumentError, match="owned by commit owner"):
        backfill(DeltaTable(table.uri, commit_owner=OtherOwner()))
    assert log_versions(table) == [0]


# ------------------------------------------------------------------- enabling
def test_enable_converts_a_filesystem_table(make_owner, tmp_path):
    owner = make_owner(batch=10)
    table = filesystem_table(tmp_path, n=2)
    prev_mtime = table.storage.mtime_ms(commit_path(2))
    version = enable_managed_commits(table, owner, clock=lambda: 1000)   # a clock far behind
    assert version == 3
    actions = actions_of(table, 3)
    info = actions[0]["commitInfo"]
    assert info["inCommitTimestamp"] == prev_mtime + 1 and info["operation"] == "SET TBLPROPERTIES"
    proto = Protocol.from_json(next(a["protocol"] for a in actions if "protocol" in a))
    assert proto.min_writer_version == 7
    assert {"appendOnly", "invariants", MANAGED_FEATURE, "inCommitTimestamp"} <= set(proto.writer_features)
    conf = Metadata.from_json(next(a["metaData"] for a in actions if "metaData" in a)).configuration
    assert conf[OWNER_PROP] == owner.name
    assert json.loads(conf.get(OWNER_CONF_PROP, "{}")) == owner.owner_conf()
    assert conf["delta.enableInCommitTimestamps"] == "true"
    assert conf["delta.inCommitTimestampEnablementVersion"] == "3"
    assert conf["delta.inCommitTimestampEnablementTimestamp"] == str(info["inCommitTimestamp"])

    snap = table.snapshot()
    assert validate_managed_state(snap.protocol, snap.metadata) and table.commit_owner is owner
    state = owner.describe_table(snap.metadata.id)
    assert (state.state, state.latest_version, state.backfilled_version) == ("active", 3, 3)
    # from now on commits go through the owner
    table.write(pa.table({"id": [7]}))
    assert [c.version for c in owner.get_commits(snap.metadata.id).commits] == [4]
    assert len(table.storage.list_dir(COMMITS_DIR)) == 1 and log_versions(table) == [0, 1, 2, 3]
    assert rows(table) == [0, 1, 7]
    with pytest.raises(InvalidTableStateError, match="already uses managed commits"):
        enable_managed_commits(table, owner)


def test_enable_losing_the_race_forgets_the_proposal(make_owner, tmp_path):
    owner = make_owner()
    table = filesystem_table(tmp_path, n=1)
    competitor = dumps_actions([{"commitInfo": {"timestamp": 5, "operation": "WRITE"}}])

    class RacingStorage(Storage):
        def put_if_absent(self, rel, data):
            if rel == commit_path(2):        # another writer gets there first
                Storage.put_if_absent(self, rel, competitor)
            return super().put_if_absent(rel, data)

    table_id = table.snapshot().metadata.id
    table.storage = RacingStorage(table.storage.root)
    with pytest.raises(CommitFailedError, match="committed concurrently") as ei:
        enable_managed_commits(table, owner)
    assert ei.value.retryable and ei.value.conflict and ei.value.version == 2
    assert owner.describe_table(table_id) is None
    assert table.storage.read_bytes(commit_path(2)) == competitor
    assert table.commit_owner is None


def test_enable_refuses_an_owner_that_would_publish_secrets(tmp_path):
    class LeakyOwner(InMemoryCommitOwner):
        def owner_conf(self):
            return {"endpoint": "https://owner", "authToken": "abc"}

    table = filesystem_table(tmp_path, n=1)
    with pytest.raises(InvalidArgumentError, match="look like secrets"):
        enable_managed_commits(table, LeakyOwner())
    assert log_versions(table) == [0, 1]


def test_ownership_commit_landed_but_client_died_before_registering(tmp_path):
    """The RFC forbids the owner to refuse a table whose ownership commit landed."""
    url = f"sqlite:///{tmp_path}/owner.db"

    class DiesAfterLanding(SqlCommitOwner):
        def register_table(self, *a, **k):
            raise KeyboardInterrupt("client killed")

    table = filesystem_table(tmp_path, n=1)
    with pytest.raises(KeyboardInterrupt):
        enable_managed_commits(table, DiesAfterLanding(url))
    owner = SqlCommitOwner(url)
    reopened = DeltaTable(table.uri, commit_owner=owner)
    assert reopened.write(pa.table({"id": [5]})) == 3
    assert owner.describe_table(reopened.snapshot().metadata.id).state == "active"
    assert rows(reopened) == [0, 5]
    owner.dispose()


# ------------------------------------------------------------------ disabling
def test_disable_backfills_everything_and_removes_the_owner(make_owner, tmp_path):
    owner = make_owner(batch=10)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    for i in range(3):
        table.write(pa.table({"id": [i]}))
    table_id = table.snapshot().metadata.id
    assert log_versions(table) == [0]
    version = disable_managed_commits(table)
    assert version == 4 and log_versions(table) == [0, 1, 2, 3, 4]
    actions = actions_of(table, 4)
    assert actions[0]["commitInfo"]["operation"] == "UNSET TBLPROPERTIES"
    proto = Protocol.from_json(next(a["protocol"] for a in actions if "protocol" in a))
    conf = Metadata.from_json(next(a["metaData"] for a in actions if "metaData" in a)).configuration
    assert MANAGED_FEATURE not in proto.writer_features and "inCommitTimestamp" in proto.writer_features
    assert OWNER_PROP not in conf and OWNER_CONF_PROP not in conf and conf["delta.enableInCommitTimestamps"] == "true"
    # a plain reader now sees everything, and the table is no longer managed
    plain = DeltaTable(table.uri)
    snap = plain.snapshot()
    assert snap.version == 4 and not validate_managed_state(snap.protocol, snap.metadata)
    assert rows(plain) == [0, 1, 2]
    stamps = [h["timestamp"] for h in plain.history()]
    assert stamps == sorted(stamps, reverse=True) and len(set(stamps)) == len(stamps)
    # the owner no longer takes commits; filesystem commits work
    assert owner.describe_table(table_id).state == "closed"
    with pytest.raises(CommitFailedError, match="not accepting"):
        owner.commit(table.storage, table_id, 5, b'{"commitInfo":{}}\n', 1)
    assert plain.write(pa.table({"id": [9]})) == 5
    assert table.storage.list_dir(COMMITS_DIR) and log_versions(table)[-1] == 5


def test_disable_of_a_filesystem_table_or_without_owner_is_refused(make_owner, tmp_path):
    table = filesystem_table(tmp_path, n=1)
    with pytest.raises(InvalidTableStateError, match="does not use managed commits"):
        disable_managed_commits(table)
    owner = make_owner()
    managed = DeltaTable.create(str(tmp_path / "m"), SCHEMA, commit_owner=owner)
    with pytest.raises(InvalidArgumentError, match="commit_owner="):
        disable_managed_commits(DeltaTable(managed.uri))
    assert owner.describe_table(managed.snapshot().metadata.id).state == "active"


def test_disable_failing_before_its_commit_reopens_the_owner(make_owner, tmp_path):
    owner = make_owner(batch=10)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    table.write(pa.table({"id": [1]}))
    table_id = table.snapshot().metadata.id
    # version 1 in _delta_log disagrees with the ratified commit: backfill must fail
    table.storage.put_if_absent(commit_path(1), b'{"commitInfo":{"operation":"rogue"}}\n')
    with pytest.raises(CorruptLogError):
        disable_managed_commits(table)
    assert owner.describe_table(table_id).state == "active"
    assert not table.storage.exists(commit_path(2))


def test_disable_losing_its_version_keeps_the_owner_closed(make_owner, tmp_path):
    owner = make_owner(batch=1)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    table.write(pa.table({"id": [1]}))
    table_id = table.snapshot().metadata.id
    rogue = b'{"commitInfo":{"operation":"rogue"}}\n'

    class RacingStorage(Storage):
        def put_if_absent(self, rel, data):
            if rel == commit_path(2):
                Storage.put_if_absent(self, rel, rogue)
            return super().put_if_absent(rel, data)

    table.storage = RacingStorage(table.storage.root)
    with pytest.raises(CommitFailedError, match="written by another client") as ei:
        disable_managed_commits(table)
    assert ei.value.conflict and not ei.value.retryable
    assert owner.describe_table(table_id).state == "closed"
    assert table.storage.read_bytes(commit_path(2)) == rogue


def test_enable_again_after_disable(make_owner, tmp_path):
    owner = make_owner(batch=10)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=owner)
    table.write(pa.table({"id": [1]}))
    assert disable_managed_commits(table) == 2
    table.write(pa.table({"id": [2]}))
    assert enable_managed_commits(table, owner) == 4
    conf = Metadata.from_json(next(a["metaData"] for a in actions_of(table, 4) if "metaData" in a)).configuration
    assert conf.get("delta.inCommitTimestampEnablementVersion") != "4"  # ICT stayed on: not re-enabled
    table.write(pa.table({"id": [3]}))
    table_id = table.snapshot().metadata.id
    state = owner.describe_table(table_id)
    assert (state.state, state.latest_version) == ("active", 5)
    assert rows(table) == [1, 2, 3]


def test_creator_died_before_registering_the_new_table(tmp_path):
    url = f"sqlite:///{tmp_path}/owner.db"

    class DiesAfterVersion0(SqlCommitOwner):
        def register_table(self, *a, **k):
            raise KeyboardInterrupt("client killed")

    with pytest.raises(KeyboardInterrupt):
        DeltaTable.create(str(tmp_path / "t"), SCHEMA, commit_owner=DiesAfterVersion0(url))
    owner = SqlCommitOwner(url)
    table = DeltaTable(str(tmp_path / "t"), commit_owner=owner)
    assert table.write(pa.table({"id": [1]})) == 1
    assert owner.describe_table(table.snapshot().metadata.id).latest_version == 1
    assert rows(table) == [1]
    owner.dispose()


def test_plain_transaction_cannot_change_ownership(tmp_path):
    """Only the conversion functions may add or remove the owner property."""
    import pyarrow as pa
    from airflow_provider_delta.log import DeltaTable, InMemoryCommitOwner, InvalidArgumentError

    plain = DeltaTable.create(str(tmp_path / "plain"), pa.schema([("id", pa.int64())]))
    with pytest.raises(InvalidArgumentError, match="enable_managed_commits"):
        with plain.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties({"delta.managedCommit.commitOwner": "in-memory"})
    assert plain.latest_version() == 0

    owner = InMemoryCommitOwner()
    managed = DeltaTable.create(str(tmp_path / "managed"), pa.schema([("id", pa.int64())]), commit_owner=owner)
    with pytest.raises(InvalidArgumentError, match="disable_managed_commits"):
        with managed.transaction(operation="UNSET TBLPROPERTIES") as txn:
            txn.set_properties({"delta.managedCommit.commitOwner": None})
    assert managed.latest_version() == 0
