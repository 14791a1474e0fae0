"""V2 spec checkpoints: UUID-named, one checkpointMetadata action, file actions in sidecars."""
from __future__ import annotations

import json
import os
import time

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.log.base.names import commit_path

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])
LOG = "_delta_log"


def make(tmp_path, commits=4, **props):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"],
                          properties={"delta.checkpointPolicy": "v2", "delta.feature.domainMetadata": "supported", **props})
    t.auto_checkpoint = False
    for i in range(commits):
        t.write(pa.table({"id": [i, 100 + i], "p": ["a", "b"]}))
    with t.transaction() as txn:
        txn.set_txn("app", 7)
        txn.set_domain_metadata("user.domain", '{"k": 1}')
    return t


def drop_commits_before(path, version):
    for f in os.listdir(path / LOG):
        if f.endswith(".json") and f[:20].isdigit() and "checkpoint" not in f and int(f[:20]) < version:
            os.remove(path / LOG / f)


@pytest.mark.parametrize("fmt,sidecars", [("parquet", 1), ("parquet", 3), ("json", 2)])
def test_v2_checkpoint_holds_the_whole_state_in_sidecars(tmp_path, fmt, sidecars):
    t = make(tmp_path)
    path = tmp_path / "t"
    expected = t.snapshot()
    v = t.checkpoint(sidecars=sidecars, v2_format=fmt)
    assert v == expected.version
    names = [f for f in os.listdir(path / LOG) if ".checkpoint." in f]
    assert len(names) == 1 and names[0].startswith(f"{v:020d}.checkpoint.") and names[0].endswith(f".{fmt}")
    side = sorted(os.listdir(path / LOG / "_sidecars"))
    assert len(side) == sidecars
    for s in side:    # sidecars hold only file actions
        assert set(pq.read_schema(path / LOG / "_sidecars" / s).names) == {"add", "remove"}
    last = json.loads((path / LOG / "_last_checkpoint").read_text())
    assert last["version"] == v and last["v2Checkpoint"]["path"] == names[0] and last["numOfAddFiles"] == 8
    if fmt == "json":
        actions = [json.loads(line) for line in (path / LOG / names[0]).read_text().splitlines()]
        assert list(actions[0]) == ["checkpointMetadata"] and actions[0]["checkpointMetadata"]["version"] == v
        assert sorted(a["sidecar"]["path"] for a in actions if "sidecar" in a) == side
    drop_commits_before(path, v + 1)
    got = DeltaTable(str(path)).snapshot()
    assert got.segment.checkpoint_version == v and not got.segment.commits
    assert sorted(got.files()["path"].to_pylist()) == sorted(expected.files()["path"].to_pylist())
    assert got.transaction_version("app") == 7 and got.domain_metadata() == {"user.domain": '{"k": 1}'}
    assert sorted(got.to_pyarrow()["id"].to_pylist()) == sorted(expected.to_pyarrow()["id"].to_pylist())
    theirs = deltalake.DeltaTable(str(path))          # delta-rs reads the log (not v2 rows yet)
    assert theirs.version() == v and len(theirs.file_uris()) == 8


def test_automatic_checkpoints_of_a_v2_table_are_v2(tmp_path):
    t = make(tmp_path, commits=0, **{"delta.checkpointInterval": "2"})
    t.auto_checkpoint = True
    t.write(pa.table({"id": [1], "p": ["a"]}))
    t.write(pa.table({"id": [2], "p": ["a"]}))
    names = [f for f in os.listdir(tmp_path / "t" / LOG) if ".checkpoint." in f]
    assert len(names) == 1 and names[0].count(".") == 3   # <v>.checkpoint.<uuid>.parquet


def test_classic_checkpoints_and_the_rules_around_them(tmp_path):
    t = make(tmp_path)
    with pytest.raises(InvalidArgumentError, match="multi-part"):
        t.checkpoint(parts=2, v2=False)
    assert t.checkpoint(v2=False) == t.latest_version()     # classic single file: allowed on v2 tables
    assert os.path.exists(tmp_path / "t" / LOG / f"{t.latest_version():020d}.checkpoint.parquet")
    plain = DeltaTable.create(str(tmp_path / "plain"), SCHEMA)
    before = sorted(os.listdir(tmp_path / "plain" / LOG))
    with pytest.raises(InvalidArgumentError, match="v2Checkpoint table feature"):
        plain.checkpoint(v2=True)
    with pytest.raises(InvalidArgumentError, match="v2_format"):
        t.checkpoint(v2_format="avro")
    with pytest.raises(InvalidArgumentError, match="sidecars"):
        t.checkpoint(sidecars=0)
    assert sorted(os.listdir(tmp_path / "plain" / LOG)) == before


def test_cleanup_keeps_the_sidecars_a_remaining_checkpoint_names(tmp_path):
    t = make(tmp_path, commits=2)
    path = tmp_path / "t"
    t.checkpoint(1)
    t.checkpoint(3)
    old = time.time() - 60 * 86_400
    for v in range(4):
        os.utime(path / commit_path(v), (old + v, old + v))
    for f in os.listdir(path / LOG):
        if ".checkpoint." in f:
            os.utime(path / LOG / f, (old + int(f[:20]), old + int(f[:20])))
    for f in os.listdir(path / LOG / "_sidecars"):
        os.utime(path / LOG / "_sidecars" / f, (old, old))
    t.write(pa.table({"id": [9], "p": ["a"]}))
    referenced_by_3 = {json.loads((path / LOG / "_last_checkpoint").read_text())["version"]}
    assert referenced_by_3 == {3}
    result = t.cleanup_metadata()
    assert result["checkpoint_version"] == 3
    assert len(result["sidecars"]) == 1                      # checkpoint 1's sidecar went with it
    left = os.listdir(path / LOG / "_sidecars")
    assert len(left) == 1
    assert DeltaTable(str(path)).snapshot(version=3).files().num_rows == 4
