"""The rule of register row C12e (read/action_lines.py): a line is the action ``kind`` when it parses as a
JSON object whose top-level ``kind`` is not null, wherever the key stands in the object; the string
``"protocol"`` anywhere else (a nested key, a partition column so named, text) is no action.

Through the public API: another writer's commit on our table, read back by ``DeltaTable``.
"""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import CorruptLogError, DeltaError
from airflow_provider_delta.log.read.action_lines import action_lines, first_action

SCHEMA = pa.schema([("id", pa.int64())])
FOO = {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["fooBarFeature"],
       "writerFeatures": ["fooBarFeature"]}
PLAIN = {"minReaderVersion": 1, "minWriterVersion": 2}


def _table_with_commit(tmp_path, *lines: str) -> str:
    """Our table of rows 1, 2, 3, then another writer's version 2 of a commitInfo and ``lines`` (raw)."""
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA).write(pa.table({"id": [1, 2, 3]}, schema=SCHEMA))
    with open(os.path.join(uri, "_delta_log", f"{2:020d}.json"), "w") as f:
        f.write("\n".join([json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}), *lines]) + "\n")
    return uri


def _ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


@pytest.mark.parametrize("line", [
    {"commitInfo": {"operation": "WRITE", "operationParameters": {"protocol": {"x": 1}}}},   # a nested key
    {"commitInfo": {"operation": "WRITE", "userMetadata": '"protocol": {"minReaderVersion": 3}'}},  # text
    {"txn": {"appId": "protocol", "version": 1}},                                           # a value
    {"domainMetadata": {"domain": "d", "configuration": json.dumps({"protocol": FOO}), "removed": False}},
    {"commitInfo": None, "protocol": None},                                                  # null: no action
])
def test_the_word_protocol_elsewhere_in_a_line_is_no_protocol_action(tmp_path, line):
    uri = _table_with_commit(tmp_path, json.dumps(line))
    assert DeltaTable(uri).snapshot().protocol.min_reader_version == 1
    assert _ids(uri) == [1, 2, 3]


def test_a_protocol_after_a_null_key_with_whitespace_around_the_colon_is_the_protocol(tmp_path):
    uri = _table_with_commit(tmp_path, '{"add" : null ,  "protocol"  :  ' + json.dumps(FOO) + "}")
    with pytest.raises(DeltaError, match="fooBarFeature"):
        DeltaTable(uri).snapshot().to_pyarrow()


@pytest.mark.parametrize("line, refused", [
    ('{"commitInfo": null, "protocol": %s, "protocol": %s}' % (json.dumps(FOO), json.dumps(PLAIN)), False),
    ('{"protocol": %s, "protocol": %s}' % (json.dumps(PLAIN), json.dumps(FOO)), True),
    ('{"protocol": %s, "protocol": null}' % json.dumps(FOO), False),
])
def test_a_line_naming_the_protocol_twice_is_the_last_ones(tmp_path, line, refused):
    """Malformed JSON; Jackson (Delta Spark's JSON reader) and Python's json take the last value."""
    uri = _table_with_commit(tmp_path, line)
    if refused:
        with pytest.raises(DeltaError, match="fooBarFeature"):
            DeltaTable(uri).snapshot().to_pyarrow()
    else:
        assert _ids(uri) == [1, 2, 3]


def test_two_protocol_lines_in_one_commit_are_refused_whatever_their_key_order(tmp_path):
    uri = _table_with_commit(tmp_path, json.dumps({"protocol": PLAIN}), json.dumps({"commitInfo": None, "protocol": PLAIN}))
    with pytest.raises(CorruptLogError, match="more than one protocol"):
        DeltaTable(uri).snapshot()


def test_a_partition_column_named_protocol_is_no_protocol_action(tmp_path):
    schema = pa.schema([("id", pa.int64()), ("protocol", pa.string())])
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, schema, partition_by=["protocol"])
    table.write(pa.table({"id": [1, 2], "protocol": ["tcp", None]}, schema=schema))
    snap = DeltaTable(uri).snapshot()
    assert snap.protocol.min_reader_version == 1
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2]


def test_action_lines_and_first_action_take_the_action_wherever_its_key_stands():
    data = (b'{"commitInfo": null, "add": null, "metaData": {"id": "a"}}\n'
            b'{"add": {"path": "metaData", "stats": "{\\"metaData\\": 1}"}}\n'
            b'{"commitInfo": {"metaData": {"id": "nested"}}}\n'
            b'{"metaData": null}\n'
            b'  {"metaData" : {"id": "b"}}\n')
    assert [a["metaData"]["id"] for a in action_lines(data, "metaData")] == ["a", "b"]
    assert first_action(data, "metaData") == {"id": "a"}
    assert first_action(data, "commitInfo") == {"metaData": {"id": "nested"}}
    assert action_lines(data, "metaData", data.index(b"\n") + 1) == [{"metaData": {"id": "b"}}]


@pytest.mark.parametrize("line", [
    {"txn": None, "commitInfo": {"operation": "WRITE"}},
    {"domainMetadata": None, "txn": {"appId": "app", "version": 4}},
    {"commitInfo": None, "txn": {"appId": "app", "version": 4}},
])
def test_a_txn_or_domain_line_with_a_null_action_key_is_read_as_its_action(tmp_path, line):
    """The replay's other actions by the same rule: a null key is no action (it was taken for a txn or a
    domainMetadata and the table refused as corrupt)."""
    uri = _table_with_commit(tmp_path, json.dumps(line))
    snap = DeltaTable(uri).snapshot()
    assert snap.transaction_version("app") == (4 if line.get("txn") else None)
    assert _ids(uri) == [1, 2, 3]


def test_a_log_compaction_takes_actions_with_null_keys_before_them(tmp_path):
    """Log compaction reconciles another writer's lines by the same rule and writes each action alone."""
    uri = _table_with_commit(tmp_path, json.dumps({"add": None, "txn": {"appId": "app", "version": 4}}),
                             json.dumps({"commitInfo": None, "protocol": PLAIN}))
    path = DeltaTable(uri).compact_log(1, 2)
    with open(path if os.path.isabs(path) else os.path.join(uri, "_delta_log", os.path.basename(path))) as f:
        lines = [json.loads(line) for line in f if line.strip()]
    assert {"txn": {"appId": "app", "version": 4}} in lines
    assert {"protocol": PLAIN} in lines
    assert DeltaTable(uri).snapshot().transaction_version("app") == 4
    assert _ids(uri) == [1, 2, 3]


@pytest.mark.parametrize("text", [b'"protocol": "tcp"', b'"protocol" :  null', b'"protocol":"x"'])
def test_a_string_or_null_valued_key_sends_no_line_to_the_parser(text):
    """The fast path stays fast on a table partitioned by a column named ``protocol``: its add lines are
    not parsed (whitespace before the value must not let the pattern through)."""
    from airflow_provider_delta.log.read.action_lines import key_pattern
    assert key_pattern("protocol").search(b'{"add": {"partitionValues": {' + text + b'}}}') is None
    assert key_pattern("protocol").search(b'{"commitInfo": null, "protocol" : {"minReaderVersion": 1}}')
