"""Break review of the late s8 fixes (issues #22-#25, #27): findings as strict xfails.

Each test builds a real table on disk and asserts what Delta Spark / deltalake / the docs promise."""
from __future__ import annotations

import datetime
import json
import os
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import AddFile, DeltaTable, InvalidCommittedVersionError
from live_link_tables import table_with_a_live_link

LOG = "_delta_log"


def _add(path: str) -> AddFile:
    return AddFile(path, 1, {}, 1, True, json.dumps({"numRecords": 1}))


def _four_commits_and_checkpoint(tmp_path):
    """Our writer's table: version 0 (create), four one-file commits (1-4), a checkpoint at 4;
    returns the table, its root and its log directory."""
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, pa.schema([("id", pa.int64())]))
    t.auto_checkpoint = False
    for i in range(4):
        with t.transaction() as txn:
            txn.add_file(_add(f"f{i}.parquet"))
    t.checkpoint()
    log_dir = os.path.join(root, LOG)
    return t, root, log_dir


def _orphan_below_checkpoint(tmp_path):
    """The state bafbf34 leaves on purpose: commits 0-3 written two hours ago, checkpoint 4, a
    transaction pinned to version 0 whose put of version 1 raced the cleanup of 0-3 (the committer
    raised InvalidCommittedVersionError); its commit file is withdrawn (it stayed below checkpoint 4
    after bafbf34, where it skewed time travel).
    Returns the table's root and the epoch-ms time just after commit 4."""
    t, root, log_dir = _four_commits_and_checkpoint(tmp_path)
    base = time.time() - 7200
    for name in os.listdir(log_dir):
        if name[:20].isdigit():
            v = int(name[:20])
            os.utime(os.path.join(log_dir, name), (base + v * 60, base + v * 60))
    loser = t.transaction(read_version=0)
    loser.add_file(_add("late.parquet"))
    import airflow_provider_delta.log.write.committer as committer_module
    real_check = committer_module.check_commit_follows_log

    def cleanup_races_the_put(storage, version):
        real_check(storage, version)
        for v in (0, 1, 2, 3):
            os.remove(os.path.join(log_dir, f"{v:020d}.json"))
    committer_module.check_commit_follows_log = cleanup_races_the_put
    try:
        with pytest.raises(InvalidCommittedVersionError):
            loser.commit()
    finally:
        committer_module.check_commit_follows_log = real_check
    assert f"{1:020d}.json" not in os.listdir(log_dir)
    return root, int((base + 4 * 60 + 5) * 1000)


def test_commits_since_does_not_deliver_the_refused_commit_left_below_the_checkpoint(tmp_path):
    root, _ = _orphan_below_checkpoint(tmp_path)
    t = DeltaTable(root)
    assert [c.version for c in t.commits_since(-1).commits] == [4]


def test_version_at_is_wrong_while_a_refused_commit_sits_below_the_checkpoint(tmp_path):
    root, after_4 = _orphan_below_checkpoint(tmp_path)
    assert DeltaTable(root).version_at(after_4, allow_after_latest=True) == 4


def test_deltalake_time_travel_breaks_on_a_refused_commit_below_the_checkpoint(tmp_path):
    import deltalake
    root, after_4 = _orphan_below_checkpoint(tmp_path)
    dt = deltalake.DeltaTable(root)
    dt.load_as_version(datetime.datetime.fromtimestamp(after_4 / 1000, datetime.timezone.utc))
    assert dt.version() == 4


def test_a_hole_in_the_same_second_as_the_checkpoint_is_missed(tmp_path):
    from airflow_provider_delta.log.write.commit_successor import landed_below_newer_log
    t, root, log_dir = _four_commits_and_checkpoint(tmp_path)
    for v in (0, 1, 2, 3):                      # cleanup below checkpoint 4, oldest first
        os.remove(os.path.join(log_dir, f"{v:020d}.json"))
    with open(os.path.join(log_dir, f"{1:020d}.json"), "w") as f:   # the racing put of version 1
        f.write(json.dumps({"add": _add("late.parquet").to_json()["add"]}) + "\n")
    second = float(int(time.time()))            # what a store with 1-second mtimes reports for all three
    for name in (f"{1:020d}.json", f"{4:020d}.checkpoint.parquet", f"{4:020d}.json"):
        os.utime(os.path.join(log_dir, name), (second, second))
    newer = landed_below_newer_log(t.storage, 1, frozenset({"late.parquet"}))
    assert (newer.version, newer.undecided) == (4, False)       # the checkpoint names none of our new files
    newer = landed_below_newer_log(t.storage, 1)                # a commit without adds: commits 2 and 3, above
    assert (newer.version, newer.undecided) == (4, False)       # ours, are gone - no cleanup removes a commit
    for v in (2, 3):                            # with them there (as built on ours), nothing tells
        with open(os.path.join(log_dir, f"{v:020d}.json"), "w") as f:
            f.write(json.dumps({"commitInfo": {"timestamp": 1, "operation": "WRITE"}}) + "\n")
    newer = landed_below_newer_log(t.storage, 1)
    assert (newer.version, newer.undecided) == (4, True)


def test_vacuum_keeps_every_link_between_a_live_path_and_its_file(tmp_path):
    from airflow_provider_delta.log.maintenance.vacuum import vacuum

    def chain(real, target):
        (real / "mid.parquet").symlink_to(target)
        (real / "alias.parquet").symlink_to(real / "mid.parquet")
    real = tmp_path / "t"
    table_with_a_live_link(real, "alias.parquet", chain)
    table = DeltaTable(str(real))
    assert table.snapshot().to_pyarrow().num_rows == 4
    assert "mid.parquet" not in vacuum(table, dry_run=True, retention_hours=0, enforce_retention=False)["files_deleted"]


def test_vacuum_keeps_a_live_link_to_outside_and_a_dangling_live_link(tmp_path):
    """No finding: a live link leading outside the table is kept and its target untouched; a dangling
    live link is kept (not followed, nothing else deleted for it)."""
    from airflow_provider_delta.log.maintenance.vacuum import vacuum
    outside = tmp_path / "outside"
    outside.mkdir()

    def out(real, target):
        (outside / "o.parquet").write_bytes(target.read_bytes())
        (real / "alias.parquet").symlink_to(outside / "o.parquet")
    real = tmp_path / "t"
    table_with_a_live_link(real, "alias.parquet", out)
    deleted = vacuum(DeltaTable(str(real)), dry_run=False, retention_hours=0, enforce_retention=False)["files_deleted"]
    assert "alias.parquet" not in deleted and (outside / "o.parquet").exists()
    assert os.path.exists(real / "alias.parquet")


def test_a_plain_re_add_of_a_spark_file_keeps_its_spelling(copy_table):
    from deltalake import DeltaTable as RsTable
    devil = ("letter=b/date=1970-01-01/data=😈/"
             "part-00000-b300ccc0-7096-4f4f-acf9-3811211dca3e.c000.snappy.parquet")
    path = copy_table("dat/multi_partitioned/delta")
    table = DeltaTable(str(path))
    rows_before = RsTable(str(path)).to_pyarrow_table().num_rows
    [row] = [r for r in table.snapshot().files().to_pylist() if r["path"] == devil]
    txn = table.transaction(operation="COMPUTE STATS")
    txn.add_file(AddFile(devil, row["size"], dict(row["partition_values"]), row["modification_time"], False, row["stats"]))
    txn.commit()
    assert RsTable(str(path)).to_pyarrow_table().num_rows == rows_before


def test_restored_metadata_over_files_of_another_version_is_refused(tmp_path):
    from airflow_provider_delta.log import InvalidArgumentError
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, pa.schema([("id", pa.string())]))
    v1 = t.write(pa.table({"id": ["a"]}))
    of_v1 = t.snapshot().metadata
    t.write(pa.table({"id": pa.array([7], pa.int64())}), mode="overwrite", overwrite_schema=True)
    before = t.latest_version()
    with pytest.raises(InvalidArgumentError):
        with t.transaction(operation="RESTORE") as txn:
            txn.set_metadata(of_v1, of_restored_version=v1)
    assert DeltaTable(root).latest_version() == before


def test_set_metadata_checks_known_property_values(tmp_path):
    from airflow_provider_delta.log import InvalidArgumentError
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    m = t.snapshot().metadata
    with pytest.raises(InvalidArgumentError):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_metadata(m.with_configuration({"delta.logRetentionDuration": "None"}))
    assert DeltaTable(t.uri).latest_version() == 0


def test_az_and_abfs_are_one_store():
    """adlfs serves abfs://, abfss:// and az:// as one file system (AzureBlobFileSystem.protocol): a log
    path spelled az://c/t/x in the table abfs://c/t is the table's file (vacuum must keep it), and a
    clone at az://c/t/clone lies inside the source abfs://c/t. They were mapped to two stores ('az' and
    'abfs'), so the path was placed outside the table, where vacuum does not protect it."""
    import adlfs
    from airflow_provider_delta.log.base.storage import Storage
    from airflow_provider_delta.log.read.data_paths import store_of_scheme, table_relative
    assert len({store_of_scheme(p) for p in adlfs.AzureBlobFileSystem.protocol}) == 1
    root = Storage("abfs://c/t", {"account_name": "devstoreaccount1", "anon": True})
    assert table_relative(root, "az://c/t/a.parquet") == "a.parquet"
