"""Which action a log line is, read the way Delta Spark reads it in each place (register rows C12f-C12j):
state reconstruction drops an add/remove without a path before ``SingleAction.unwrap``; the change feed
and history read a commit's lines by ``Action.fromJson`` (unwrap, action_lines.action_kind)."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from airflow_provider_delta.log import DeltaTable

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_review_s12_rv_lines import NOW, _commit, _idless_metadata, _two_file_table  # noqa: E402

REMOVE_A = {"path": "a.parquet", "deletionTimestamp": NOW, "dataChange": True}


@pytest.mark.parametrize("line", [{"add": {}}, {"add": {"path": None, "size": 3}}, {"remove": {"deletionTimestamp": 1}},
                                  {"remove": {}, "add": None}], ids=["add-empty", "add-path-null", "remove", "both"])
def test_a_pathless_file_action_alone_on_its_line_is_no_action(tmp_path, line):
    root = str(tmp_path / "t")
    _two_file_table(root)
    _commit(root, 1, [line])
    snap = DeltaTable(root).snapshot()
    assert snap.version == 1 and sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2]


def test_a_pathless_add_beside_a_txn_is_the_txn(tmp_path):
    root = str(tmp_path / "t")
    _two_file_table(root)
    _commit(root, 1, [{"add": {"path": None}, "txn": {"appId": "app", "version": 7, "lastUpdated": NOW}}])
    snap = DeltaTable(root).snapshot()
    assert snap.transaction_version("app") == 7
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2]


def test_a_pathless_add_beside_a_remove_survives_our_checkpoint(tmp_path):
    """The remove is applied; our checkpoint of that state reads the same (and holds no pathless row)."""
    root = str(tmp_path / "t")
    sizes = _two_file_table(root)
    _commit(root, 1, [{"add": {}, "remove": REMOVE_A},
                      {"add": {"path": "b.parquet", "partitionValues": {}, "size": sizes["b"],
                               "modificationTime": NOW, "dataChange": True}}])
    table = DeltaTable(root)
    table.checkpoint()
    os.remove(os.path.join(root, "_delta_log", f"{0:020d}.json"))
    os.remove(os.path.join(root, "_delta_log", f"{1:020d}.json"))
    snap = DeltaTable(root).snapshot()
    assert snap.version == 1 and snap.to_pyarrow().column("id").to_pylist() == [3]
    assert snap.tombstones().column("path").to_pylist() == ["a.parquet"]


def test_a_non_string_path_is_still_a_corrupt_log(tmp_path):
    from airflow_provider_delta.log.base.errors import CorruptLogError
    root = str(tmp_path / "t")
    _two_file_table(root)
    _commit(root, 1, [{"add": {"path": {"x": 1}, "size": 1}}])
    with pytest.raises(CorruptLogError):
        DeltaTable(root).snapshot().files()


@pytest.mark.parametrize("spelled", ["plain", "key-after", "escaped"])
def test_history_takes_the_commit_info_only_from_a_line_that_is_one(tmp_path, spelled):
    """``{"add": A, "commitInfo": C}`` (either key order, a key escaped) is the add for history, as for
    Delta Spark's getCommitInfoOpt; ``{"txn": null, "commitInfo": C2}`` on a later line is the commitInfo."""
    root = str(tmp_path / "t")
    sizes = _two_file_table(root)
    add = {"path": "b.parquet", "partitionValues": {}, "size": sizes["b"], "modificationTime": NOW, "dataChange": True}
    first = {"add": add, "commitInfo": {"timestamp": NOW, "operation": "MERGE"}}
    line = json.dumps(first if spelled == "plain" else dict(reversed(list(first.items()))))
    if spelled == "escaped":
        line = line.replace('"commitInfo"', '"commit\\u0049nfo"')
    with open(os.path.join(root, "_delta_log", f"{1:020d}.json"), "w") as f:
        f.write(line + "\n")
        f.write(json.dumps({"txn": None, "commitInfo": {"timestamp": NOW, "operation": "UPDATE"}}) + "\n")
    table = DeltaTable(root)
    assert sorted(table.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]
    assert next(h for h in table.history() if h["version"] == 1)["operation"] == "UPDATE"


@pytest.mark.parametrize("without", ["absent", "null"])
def test_an_idless_metadata_beside_the_commits_real_one_is_not_a_second_metadata(tmp_path, without):
    """Only metadata with an id counts (Delta Spark's P&M reconstruction): a commit holding it and a real
    metaData is no 'two metadata actions' corruption, and the real one is the table's."""
    root = str(tmp_path / "t")
    _two_file_table(root)
    real = {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(
        {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}),
        "partitionColumns": [], "configuration": {"user.real": "1"}, "createdTime": NOW}
    _commit(root, 1, [{"metaData": real}, {"metaData": _idless_metadata(without)}])
    meta = DeltaTable(root).snapshot().metadata
    assert meta.configuration == {"user.real": "1"}


@pytest.mark.parametrize("without", ["absent", "null"])
def test_a_log_compaction_and_a_checkpoint_keep_what_replay_reads_of_odd_lines(tmp_path, without):
    """Our log compaction and checkpoint of commits holding a pathless add beside a remove and an id-less
    metaData read as the commits do: the remove applied, the earlier metadata in effect."""
    root = str(tmp_path / "t")
    sizes = _two_file_table(root)
    _commit(root, 1, [{"add": {"path": "b.parquet", "partitionValues": {}, "size": sizes["b"],
                               "modificationTime": NOW, "dataChange": True}}])
    _commit(root, 2, [{"add": {}, "remove": REMOVE_A}, {"metaData": _idless_metadata(without)}])
    table = DeltaTable(root)

    def state(t):
        s = t.snapshot()
        return sorted(s.to_pyarrow().column("id").to_pylist()), s.schema.names, dict(s.metadata.configuration)

    expected = ([3], ["id"], {})
    assert state(table) == expected
    table.compact_log(1, 2)
    assert state(DeltaTable(root)) == expected
    table.checkpoint()
    for v in (0, 1, 2):
        os.remove(os.path.join(root, "_delta_log", f"{v:020d}.json"))
    assert state(DeltaTable(root)) == expected


def test_a_metadata_beside_an_add_is_read_not_refused(tmp_path):
    """Register row C12j (a known difference): Delta Spark's full state check refuses such a table; we read
    the metaData as the table's and the add as live."""
    root = str(tmp_path / "t")
    sizes = _two_file_table(root)
    real = {"id": "t", "format": {"provider": "parquet", "options": {}}, "schemaString": json.dumps(
        {"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]}),
        "partitionColumns": [], "configuration": {"user.k": "v"}, "createdTime": NOW}
    _commit(root, 1, [{"add": {"path": "b.parquet", "partitionValues": {}, "size": sizes["b"],
                               "modificationTime": NOW, "dataChange": True}, "metaData": real}])
    snap = DeltaTable(root).snapshot()
    assert snap.metadata.configuration == {"user.k": "v"}
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2, 3]
