"""Log compaction files: content as the protocol defines it, equivalence with replay, safety."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import (
    DeltaTable, InMemoryCommitOwner, InvalidArgumentError, InvalidTableStateError,
)
from airflow_provider_delta.log.read.replay import parse_json_logs, reconcile

LOG = "_delta_log"


def _commit(root, v, actions):
    os.makedirs(root / LOG, exist_ok=True)
    (root / LOG / f"{v:020d}.json").write_text("\n".join(json.dumps(a) for a in actions) + "\n")


def _add(path):
    return {"add": {"path": path, "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}}


def _remove(path):
    return {"remove": {"path": path, "deletionTimestamp": 1, "dataChange": True}}


def test_protocol_example(tmp_path):
    """The example of the protocol's 'Log Compaction Files' section, commits 4..6."""
    schema = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True,
                                                       "metadata": {}}]})
    _commit(tmp_path, 0, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}},
                          {"metaData": {"id": "t", "format": {"provider": "parquet", "options": {}},
                                        "schemaString": schema, "partitionColumns": [], "configuration": {}}},
                          _add("f1")])
    for v in (1, 2, 3):
        _commit(tmp_path, v, [{"commitInfo": {"operation": "X"}}])
    app = "3ae45b72-24e1-865a-a211-34987ae02f2a"
    _commit(tmp_path, 4, [{"commitInfo": {}}, _add("f2"), _remove("f1")])
    _commit(tmp_path, 5, [{"commitInfo": {}}, _add("f3"), _add("f4"), {"txn": {"appId": app, "version": 4389}}])
    _commit(tmp_path, 6, [{"commitInfo": {}}, _remove("f3"), {"txn": {"appId": app, "version": 4390}}])
    path = DeltaTable(str(tmp_path)).compact_log(4, 6)
    assert os.path.basename(path) == "00000000000000000004.00000000000000000006.compacted.json"
    lines = [json.loads(x) for x in open(path).read().splitlines()]
    assert not any("commitInfo" in a for a in lines)
    assert sorted(a["add"]["path"] for a in lines if "add" in a) == ["f2", "f4"]
    assert sorted(a["remove"]["path"] for a in lines if "remove" in a) == ["f1", "f3"]
    assert [a["txn"] for a in lines if "txn" in a] == [{"appId": app, "version": 4390}]


def _random_history(root):
    """Appends, an overwrite, txns, a property change and a schema change, written by us."""
    t = DeltaTable.create(str(root), pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_by=["p"])
    t.auto_checkpoint = False
    for i in range(6):
        t.write(pa.table({"id": [i, i + 100], "p": ["a", "b"]}), mode="overwrite" if i == 3 else "append")
        with t.transaction(operation="SET TXN") as txn:
            txn.set_txn("app", i)
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.appendOnly": "false", "custom.key": "v"})
    t.write(pa.table({"id": [999], "p": ["c"]}))
    return t


@pytest.mark.parametrize("start,end", [(1, 4), (2, 9), (0, 13), (5, 12)])
def test_replay_with_compaction_equals_replay_of_commits(tmp_path, start, end):
    t = _random_history(tmp_path / "t")
    latest = t.latest_version()
    assert end <= latest
    comp = t.compact_log(start, end)
    snap = t.snapshot()

    def blob(v):
        p = t.storage.path(f"{LOG}/{v:020d}.json")
        return (v, open(p, "rb").read(), p)

    blobs = [blob(v) for v in range(start)] + [(end, open(comp, "rb").read(), comp)] + \
        [blob(v) for v in range(end + 1, latest + 1)]
    parsed = parse_json_logs(blobs, ["p"])
    state = reconcile(None, parsed.file_actions)
    live = sorted(state.filter(state.column("is_add")).column("path").to_pylist())
    assert live == sorted(snap.files().column("path").to_pylist())
    txn = [o["txn"] for _, o in parsed.others if "txn" in o][-1]
    assert (txn["appId"], txn["version"]) == ("app", snap.transaction_version("app")) == ("app", 5)
    meta = [o["metaData"] for _, o in parsed.others if "metaData" in o][-1]
    assert meta["configuration"] == snap.metadata.configuration


def test_readers_give_the_same_answers_with_a_compaction_present(tmp_path):
    import deltalake
    t = _random_history(tmp_path / "t")
    before = sorted(t.snapshot().to_pyarrow().column("id").to_pylist())
    t.compact_log(0, t.latest_version())
    assert sorted(DeltaTable(t.uri).snapshot().to_pyarrow().column("id").to_pylist()) == before
    theirs = deltalake.DeltaTable(str(tmp_path / "t"))
    assert theirs.version() == t.latest_version()
    assert sorted(theirs.to_pyarrow_table().column("id").to_pylist()) == before


def test_idempotent_and_bad_ranges_change_nothing(tmp_path):
    t = _random_history(tmp_path / "t")
    first = t.compact_log(1, 3)
    content = open(first, "rb").read()
    assert t.compact_log(1, 3) == first and open(first, "rb").read() == content
    listing = sorted(os.listdir(tmp_path / "t" / LOG))
    for start, end in [(3, 3), (4, 2), (-1, 2), (0, 999), ("0", 2)]:
        with pytest.raises(InvalidArgumentError):
            t.compact_log(start, end)
    assert sorted(os.listdir(tmp_path / "t" / LOG)) == listing


def test_managed_table_compacts_only_backfilled_commits(tmp_path):
    owner = InMemoryCommitOwner(backfill_batch_size=10)
    t = DeltaTable.create(str(tmp_path / "m"), pa.schema([("id", pa.int64())]), commit_owner=owner)
    for i in range(4):
        t.write(pa.table({"id": [i]}))
    assert DeltaTable(str(tmp_path / "m")).latest_version() < 4      # not all backfilled yet
    listing = sorted(os.listdir(tmp_path / "m" / LOG))
    with pytest.raises(InvalidTableStateError, match="backfill"):
        t.compact_log(0, 4)
    assert sorted(os.listdir(tmp_path / "m" / LOG)) == listing
    t.backfill()
    path = t.compact_log(0, 4)
    assert os.path.exists(path)
