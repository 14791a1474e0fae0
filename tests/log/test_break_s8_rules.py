"""Break review of session 8's issue #22 fixes (commit_successor, feature rules, schema rules).

Each finding is a strict xfail: it passes once the defect is fixed.
"""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import AddFile, DeltaTable, InvalidCommittedVersionError
from airflow_provider_delta.log.base.local_files import LocalFiles


def _add(path: str) -> AddFile:
    return AddFile(path, 1, {}, 1, True, json.dumps({"numRecords": 1}))


def _log_dir(t: DeltaTable) -> str:
    return os.path.join(t.uri.removeprefix("file://"), "_delta_log")


class _SkewedNeighbour(LocalFiles):
    """Local files through which, right after our commit file is published, a second writer on
    another host commits the next version: its file gets that host's clock, two seconds behind
    ours (what a client-stamped mount - gcsfuse, s3fs-fuse, some NFS setups - or an NTP step back
    produces). The second writer is a real DeltaTable committing through the ordinary path."""

    def __init__(self, uri: str):
        super().__init__()
        self.uri, self.fired = uri, False

    def put_if_absent(self, target, data):
        landed = super().put_if_absent(target, data)
        if landed and not self.fired and target.endswith(".json") and "_delta_log" in target:
            self.fired = True
            other = DeltaTable(self.uri)
            other.auto_checkpoint = False
            with other.transaction() as txn:
                txn.add_file(_add("neighbour.parquet"))
            v = other.latest_version()
            p = os.path.join(os.path.dirname(target), f"{v:020d}.json")
            back = os.stat(target).st_mtime - 2
            os.utime(p, (back, back))
        return landed


def test_a_skewed_clock_on_the_next_writer_makes_the_committer_delete_a_commit_built_on(tmp_path):
    uri = str(tmp_path / "t")
    t = DeltaTable.create(uri, pa.schema([("id", pa.int64())]))
    t.auto_checkpoint = False
    with t.transaction() as txn:
        txn.add_file(_add("f0.parquet"))
    t.storage.files = _SkewedNeighbour(uri)
    txn = t.transaction()
    txn.add_file(_add("ours.parquet"))
    try:
        txn.commit()
    except InvalidCommittedVersionError:
        pass                                    # before the fix: our version 2 was deleted
    assert t.storage.files.fired
    names = sorted(n for n in os.listdir(_log_dir(t)) if n.endswith(".json"))
    assert names == [f"{v:020d}.json" for v in range(4)], names
    paths = DeltaTable(uri).snapshot().files().column("path").to_pylist()
    assert sorted(paths) == ["f0.parquet", "neighbour.parquet", "ours.parquet"]


def _table_with_a_deleted_row(tmp_path, append_only: str = "false") -> tuple[DeltaTable, dict]:
    """A DV table whose one file has rows 1, 2, 3 and a DV deleting row 1 (Delta Spark's DELETE form)."""
    from dv_encoding import bitmap_array, z85_encode
    schema = pa.schema([("id", pa.int64())])
    table = DeltaTable.create(str(tmp_path / "dv"), schema, properties={
        "delta.enableDeletionVectors": "true", "delta.appendOnly": append_only})
    table.write(pa.table({"id": [1, 2, 3]}, schema=schema))
    row = table.snapshot().files().to_pylist()[0]
    bitmap = bitmap_array([0])
    dv = {"storageType": "i", "pathOrInlineDv": z85_encode(bitmap), "sizeInBytes": len(bitmap), "cardinality": 1}
    if append_only == "false":
        with table.transaction(operation="DELETE") as txn:
            txn.remove_file(row["path"])
            txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True,
                                 json.dumps({**json.loads(row["stats"]), "tightBounds": False}), deletion_vector=dv))
    return table, row


def test_an_add_without_dv_over_a_live_path_with_a_dv_and_no_remove_is_refused(tmp_path):
    """F4b for an add without a DV: it would be a second logical file of the path (the deleted row
    back, the others read twice). Refused from a fresh table object too, whose snapshot has not
    loaded the file list: the cheap pre-test (commit bytes mention a DV) must send it to the check."""
    from airflow_provider_delta.log import InvalidArgumentError
    table, row = _table_with_a_deleted_row(tmp_path)
    assert sorted(DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist()) == [2, 3]
    version = table.latest_version()
    for writer in (table, DeltaTable(table.uri)):
        with pytest.raises(InvalidArgumentError, match="does not remove the live logical file"):
            with writer.transaction() as txn:
                txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, row["stats"]))
    assert DeltaTable(table.uri).latest_version() == version
    assert sorted(DeltaTable(table.uri).snapshot().to_pyarrow().column("id").to_pylist()) == [2, 3]


def test_vacuum_keeps_the_target_of_a_live_file_symlink_inside_the_table(tmp_path):
    from airflow_provider_delta.log.maintenance.vacuum import vacuum
    from live_link_tables import table_with_a_live_link
    real = tmp_path / "t"
    table_with_a_live_link(real, "alias.parquet", lambda root, target: (root / "alias.parquet").symlink_to(target))
    table = DeltaTable(str(real))
    assert table.snapshot().to_pyarrow().num_rows == 4          # the reader opens the live file
    assert "realdir/x.parquet" not in vacuum(table, dry_run=True)["files_deleted"]


def test_the_successor_pre_check_alone_refuses_a_transaction_behind_a_cleanup(tmp_path):
    """C11b's named test for the check before the put passes without that check (the post-put
    check catches the same case and withdraws the file). Here the log left by cleanup carries
    mtimes later than the commit would get (a store whose clock runs ahead), so only the check
    before the put can refuse: nothing may be written."""
    from airflow_provider_delta.log import CommitFailedError
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.auto_checkpoint = False
    loser = t.transaction(read_version=0)
    assert loser.snapshot is not None
    loser.add_file(_add("late.parquet"))
    for i in range(4):
        with t.transaction() as txn:
            txn.add_file(_add(f"f{i}.parquet"))
    t.checkpoint()
    t.cleanup_metadata(now_ms=int(time.time() * 1000) + 400 * 86_400_000)
    ahead = time.time() + 3600
    for name in os.listdir(_log_dir(t)):
        os.utime(os.path.join(_log_dir(t), name), (ahead, ahead))
    before = set(os.listdir(_log_dir(t)))
    assert f"{1:020d}.json" not in before
    with pytest.raises(InvalidCommittedVersionError) as e:
        loser.commit()
    assert isinstance(e.value, CommitFailedError) and e.value.version == 1
    assert set(os.listdir(_log_dir(t))) == before


def test_a_check_constraint_added_while_rows_are_appended_concurrently_is_refused(tmp_path):
    from airflow_provider_delta.log import DeltaError
    schema = pa.schema([("id", pa.int64())])
    t = DeltaTable.create(str(tmp_path / "c"), schema)
    txn = t.transaction()
    txn.set_properties({"delta.constraints.positive": "id > 0"})     # read: an empty table
    DeltaTable(t.uri).write(pa.table({"id": [-1]}, schema=schema))    # the concurrent winner
    with pytest.raises(DeltaError):
        txn.commit()
    snap = DeltaTable(t.uri).snapshot()
    assert "delta.constraints.positive" not in snap.metadata.configuration


@pytest.mark.parametrize("change", ["check_constraint", "type_change"])
def test_set_metadata_of_restored_version_cannot_smuggle_in_what_the_rules_refuse(tmp_path, change):
    from airflow_provider_delta.log import DeltaError
    schema = pa.schema([("id", pa.int64())])
    t = DeltaTable.create(str(tmp_path / "r"), schema)
    t.write(pa.table({"id": [-1, 2]}, schema=schema))
    m = t.snapshot().metadata
    if change == "check_constraint":
        new = m.with_configuration({"delta.constraints.positive": "id > 0"})
    else:
        fields = json.loads(m.schema_string)
        fields["fields"][0]["type"] = "string"
        new = m.with_schema(fields)
    version = t.latest_version()
    with pytest.raises(DeltaError):
        with t.transaction() as txn:
            txn.set_metadata(new, of_restored_version=version)
    assert DeltaTable(t.uri).latest_version() == version


def _mapped_id_v(tmp_path) -> DeltaTable:
    """id, v (data 10, 20) under column mapping (physical names id, v; ids 1, 2)."""
    table = DeltaTable.create(str(tmp_path / "m"), pa.schema([("id", pa.int64()), ("v", pa.int64())]))
    table.write(pa.table({"id": [1, 2], "v": [10, 20]}))
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.columnMapping.mode": "name"})
    return table


@pytest.mark.parametrize("give_id", [False, True])
def test_a_new_column_taking_the_physical_name_of_a_column_dropped_in_the_same_commit_is_refused(tmp_path, give_id):
    """M3b compared a new column's physical path only with the old schema's paths: dropping v and
    adding w under v's physical name in one commit was accepted, and w read v's data back."""
    from airflow_provider_delta.log import InvalidArgumentError
    from airflow_provider_delta.log.base.actions import Metadata
    table = _mapped_id_v(tmp_path)
    snap = table.snapshot()
    fields = json.loads(snap.metadata.schema_string)["fields"]
    v = next(f for f in fields if f["name"] == "v")
    meta = {"delta.columnMapping.physicalName": v["metadata"]["delta.columnMapping.physicalName"]}
    if give_id:
        meta["delta.columnMapping.id"] = 100
    new_fields = [f for f in fields if f["name"] != "v"] + [
        {"name": "w", "type": "long", "nullable": True, "metadata": meta}]
    version = table.latest_version()
    with pytest.raises(InvalidArgumentError, match="brings its own physical name"):
        with table.transaction(operation="CHANGE COLUMN") as txn:
            txn.set_metadata(Metadata(snap.metadata.id, json.dumps({"type": "struct", "fields": new_fields}), (),
                                      dict(snap.metadata.configuration)))
    assert DeltaTable(table.uri).latest_version() == version
    # the legal forms: a rename keeps the id with the physical name; a new column gets a fresh name
    v["name"] = "v2"
    with table.transaction(operation="RENAME COLUMN") as txn:
        txn.set_metadata(Metadata(snap.metadata.id, json.dumps({"type": "struct", "fields": fields}), (),
                                  dict(snap.metadata.configuration)))
    assert [r["v2"] for r in DeltaTable(table.uri).snapshot().to_pyarrow().to_pylist()] == [10, 20]
