"""DeltaTable.restore: Delta Spark's RESTORE on our log (interop with Delta Spark in tests/interop).

Concurrent commits are real commits by a second table object, made at the moment the
restore has read its snapshot and is about to commit (through the transaction's clock,
which the commit path calls after the read): the retry rule (blind appends kept,
anything else a conflict) is checked deterministically. kill -9 of a process that
restores in a loop is in ``test_kill_nine_during_restore``.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time

import deltalake
import pyarrow as pa
import pytest

from airflow_provider_delta.log import (ConcurrentModificationError, DataFileNotFoundError, DeltaTable,
                                        InMemoryCommitOwner, InvalidArgumentError, Metadata, TimestampOutOfRangeError,
                                        UnexpectedVersionError, VersionNotFoundError, schema_string)

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string())])


def ids(table: DeltaTable, version: int | None = None) -> list[int]:
    return sorted(table.snapshot(version=version).to_pyarrow().column("id").to_pylist())


def log_files(path) -> list[str]:
    return sorted(os.listdir(os.path.join(DeltaTable(path).storage.root, "_delta_log")))


def commit_actions(table: DeltaTable, version: int) -> dict[str, list]:
    out: dict[str, list] = {}
    for action in table.read_commit(version):
        (kind, body), = action.items()
        out.setdefault(kind, []).append(body)
    return out


@pytest.fixture
def table(tmp_path):
    """v0 create, v1 append [1, 2], v2 append [3], v3 overwrite [9]."""
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["p"])
    t.write(pa.table({"id": [1, 2], "p": ["a", "b"]}))
    t.write(pa.table({"id": [3], "p": ["a"]}))
    t.write(pa.table({"id": [9], "p": ["z"]}), mode="overwrite")
    return t


def test_restore_makes_the_files_those_of_the_version(table, tmp_path):
    before = table.snapshot(version=2).files()
    version = table.restore(2)
    assert version == 4 and ids(table) == [1, 2, 3]
    acts = commit_actions(table, 4)
    info = acts["commitInfo"][0]
    assert info["operation"] == "RESTORE"
    assert info["operationParameters"] == {"version": 2, "timestamp": None}   # Delta Spark's JSON values
    assert info["readVersion"] == 3 and info["isBlindAppend"] is False
    assert info["isolationLevel"] == "Serializable"          # Delta Spark's commitLarge records it so
    assert info["operationMetrics"] == {
        "numRestoredFiles": "3", "restoredFilesSize": str(sum(before.column("size").to_pylist())),
        "numRemovedFiles": "1", "removedFilesSize": str(table.snapshot(version=3).files().column("size")[0].as_py()),
        "numOfFilesAfterRestore": "3", "tableSizeAfterRestore": str(sum(before.column("size").to_pylist()))}
    assert all(a["dataChange"] is True for a in acts["add"]) and all(r["dataChange"] is True for r in acts["remove"])
    # the adds are the ones version 2 recorded: same stats and modification times
    old = {r["path"]: r for r in before.to_pylist()}
    for a in acts["add"]:
        assert a["stats"] == old[a["path"]]["stats"] and a["modificationTime"] == old[a["path"]]["modification_time"]
    assert "metaData" not in acts and "protocol" not in acts   # unchanged, so not rewritten
    # deltalake reads the same rows at every version
    for v in range(5):
        assert sorted(deltalake.DeltaTable(table.uri, version=v).to_pyarrow_table().column("id").to_pylist()) == \
            ids(table, v)


def test_restore_by_timestamp_names_it_in_the_parameters(table):
    ts = table.snapshot(version=1).timestamp
    version = table.restore(timestamp=ts)
    assert ids(table) == [1, 2]
    params = table.history(1)[0]["operationParameters"]
    assert params["version"] is None and params["timestamp"].startswith(
        time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(ts // 1000)))
    assert table.snapshot(version=version).version == 4


def test_restore_arguments_are_checked_and_nothing_is_written(table, tmp_path):
    files = log_files(table.uri)
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        table.restore()
    with pytest.raises(InvalidArgumentError, match="exactly one"):
        table.restore(1, timestamp=table.snapshot(version=1).timestamp)
    with pytest.raises(VersionNotFoundError):
        table.restore(7)
    with pytest.raises(VersionNotFoundError):
        table.restore(-1)
    with pytest.raises(InvalidArgumentError):
        table.restore("1")
    with pytest.raises(TimestampOutOfRangeError):
        table.restore(timestamp=table.snapshot(version=0).timestamp - 60_000)
    with pytest.raises(TimestampOutOfRangeError):       # after the latest commit: Delta Spark refuses too
        table.restore(timestamp=table.snapshot().timestamp + 60_000)
    assert log_files(table.uri) == files


def test_restore_to_the_latest_version_commits_nothing(table):
    files = log_files(table.uri)
    assert table.restore(3) == 3
    assert log_files(table.uri) == files


def test_restore_to_an_older_version_with_the_same_files_commits_an_empty_restore(table):
    table.restore(1)                               # v4: files of v1
    assert table.restore(1) == 5                   # v5: nothing differs, Delta Spark still commits
    acts = commit_actions(table, 5)
    assert set(acts) == {"commitInfo"}
    metrics = acts["commitInfo"][0]["operationMetrics"]
    assert metrics["numRestoredFiles"] == "0" and metrics["numRemovedFiles"] == "0"
    assert ids(table) == [1, 2]


def test_restore_refuses_when_a_file_of_the_version_was_vacuumed(table):
    table.vacuum(retention_hours=0, enforce_retention=False, dry_run=False)   # v1/v2 files are gone
    files = log_files(table.uri)
    with pytest.raises(DataFileNotFoundError, match="gone") as e:
        table.restore(2)
    assert e.value.path and e.value.path.startswith("p=")
    assert log_files(table.uri) == files and table.latest_version() == 3 and ids(table) == [9]


def test_restore_beyond_the_deleted_file_retention_is_refused_unless_asked(table):
    week_later = table.snapshot().timestamp + 8 * 24 * 3_600_000
    with pytest.raises(InvalidArgumentError, match="deletedFileRetentionDuration"):
        table.restore(1, now_ms=week_later)
    assert table.latest_version() == 3
    assert table.restore(1, now_ms=week_later, enforce_retention=False) == 4 and ids(table) == [1, 2]


def test_restore_brings_back_the_metadata_and_never_downgrades_the_protocol(tmp_path):
    t = DeltaTable.create(str(tmp_path / "m"), pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))                                          # v1
    with t.transaction(operation="SET TBLPROPERTIES") as txn:               # v2: CDF on (writer 4)
        txn.set_properties({"delta.enableChangeDataFeed": "true"})
    t.write(pa.table({"id": [2], "x": ["new column"]}), mode="overwrite", overwrite_schema=True)   # v3
    protocol = t.snapshot().protocol
    assert protocol.min_writer_version >= 4
    t.restore(1)
    snap = t.snapshot()
    assert snap.metadata.schema_string == t.snapshot(version=1).metadata.schema_string
    assert "delta.enableChangeDataFeed" not in snap.configuration
    assert snap.protocol == protocol                                        # kept, not downgraded
    assert "metaData" in commit_actions(t, 4)
    assert snap.to_pyarrow().to_pylist() == [{"id": 1}]


# ------------------------------------------------------------------------ concurrency
class CommitOnce:
    """A transaction clock that lets another writer commit first, once: the restore has
    read its snapshot by then and loses the race for the next version."""

    def __init__(self, commit):
        self.commit, self.done = commit, False

    def __call__(self) -> int:
        if not self.done:
            self.done = True
            self.commit()
        return int(time.time() * 1000)


def test_concurrent_blind_append_is_kept_and_the_restore_retries(table):
    other = DeltaTable(table.uri)
    clock = CommitOnce(lambda: other.write(pa.table({"id": [42], "p": ["a"]})))
    version = table.restore(2, clock=clock)
    assert clock.done and version == 5                       # v4 the append, v5 the restore
    assert ids(table) == [1, 2, 3, 42]                        # the appended row stays (documented rule)
    assert table.history(1)[0]["readVersion"] == 3
    assert table.history(1)[0]["isolationLevel"] == "WriteSerializable"   # the level that let the append through
    assert sorted(deltalake.DeltaTable(table.uri).to_pyarrow_table().column("id").to_pylist()) == [1, 2, 3, 42]
    table.restore(2)                                          # run again, it sees the append and removes it
    assert ids(table) == [1, 2, 3]


def test_expected_version_guard_restores_only_when_the_callers_commit_is_the_latest(table, tmp_path):
    log = sorted(os.listdir(os.path.join(table.storage.root, "_delta_log")))
    with pytest.raises(UnexpectedVersionError) as e:
        table.restore(1, expected_version=2)                 # v3 came after "our" v2: it would be undone too
    assert (e.value.expected, e.value.latest) == (2, 3)
    assert sorted(os.listdir(os.path.join(table.storage.root, "_delta_log"))) == log
    with pytest.raises(InvalidArgumentError):
        table.restore(1, expected_version="3")              # a version is an integer
    assert table.restore(2, expected_version=3) == 4 and ids(table) == [1, 2, 3]


def test_expected_version_guard_keeps_a_blind_append_racing_the_restore(table):
    other = DeltaTable(table.uri)
    clock = CommitOnce(lambda: other.write(pa.table({"id": [42], "p": ["a"]})))
    assert table.restore(2, expected_version=3, clock=clock) == 5
    assert ids(table) == [1, 2, 3, 42]                       # the racing append is not undone


@pytest.mark.parametrize("winner", ["overwrite", "delete", "metadata"])
def test_conflicting_concurrent_commit_fails_the_restore_cleanly(table, winner):
    other = DeltaTable(table.uri)

    def commit():
        if winner == "overwrite":
            other.write(pa.table({"id": [77], "p": ["q"]}), mode="overwrite")
        elif winner == "delete":
            with other.transaction(operation="DELETE") as txn:
                txn.remove_files(txn.read_files()["path"].to_pylist())
        else:
            with other.transaction(operation="SET TBLPROPERTIES") as txn:
                txn.set_properties({"delta.logRetentionDuration": "interval 60 days"})
    with pytest.raises(ConcurrentModificationError) as e:
        table.restore(2, clock=CommitOnce(commit))
    assert e.value.winning_version == 4
    assert table.latest_version() == 4                        # the winner only; the restore wrote nothing
    assert table.history(1)[0]["operation"] != "RESTORE"


def test_concurrent_append_conflicts_when_the_restore_changes_the_schema(tmp_path):
    t = DeltaTable.create(str(tmp_path / "s"), pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    t.write(pa.table({"id": [2], "x": ["y"]}), mode="overwrite", overwrite_schema=True)   # v2: new schema
    other = DeltaTable(t.uri)
    with pytest.raises(ConcurrentModificationError, match="ConcurrentAppend"):
        t.restore(1, clock=CommitOnce(lambda: other.write(pa.table({"id": [3], "x": ["z"]}))))
    assert t.latest_version() == 3 and sorted(t.snapshot().to_pyarrow().column("id").to_pylist()) == [2, 3]


def test_serializable_table_makes_a_concurrent_append_a_conflict(table):
    with table.transaction(operation="SET TBLPROPERTIES") as txn:             # v4
        txn.set_properties({"delta.isolationLevel": "Serializable"})
    other = DeltaTable(table.uri)
    with pytest.raises(ConcurrentModificationError):
        table.restore(2, clock=CommitOnce(lambda: other.write(pa.table({"id": [5], "p": ["a"]}))))
    assert table.latest_version() == 5


# ------------------------------------------------------------------------ kill -9
KILLS = int(os.environ.get("DELTA_KILLS", "2"))

RESTORER = textwrap.dedent("""
    import sys
    from airflow_provider_delta.log import DeltaTable
    table = DeltaTable(sys.argv[1])
    print("ready", flush=True)
    i = 0
    while True:
        i += 1
        table.restore(1 if i % 2 else 2)
""")


@pytest.mark.parametrize("kill", range(KILLS))
def test_kill_nine_during_restore_leaves_a_readable_table(table, kill):
    """SIGKILL a process restoring back and forth: every version reads as one of the two states."""
    proc = subprocess.Popen([sys.executable, "-c", RESTORER, table.uri], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env={**os.environ})
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        deadline = time.time() + 60                   # the first restore has landed, then a random moment
        while DeltaTable(table.uri).latest_version() < 4 and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(random.uniform(0.0, 1.0))
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    fresh = DeltaTable(table.uri)
    latest = fresh.latest_version()
    assert latest >= 4
    states = ({1, 2}, {1, 2, 3})
    for v in range(4, latest + 1):
        assert set(ids(fresh, v)) in states
        assert set(deltalake.DeltaTable(table.uri, version=v).to_pyarrow_table().column("id").to_pylist()) \
            == set(ids(fresh, v))
    # the next writer commits normally
    assert fresh.restore(3) == latest + 1 and ids(fresh) == [9]
    json.dumps(fresh.history(1))


# ------------------------------------------------------------------------ a real concurrent appender
APPENDER = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    from airflow_provider_delta.log import DeltaTable
    table = DeltaTable(sys.argv[1])
    table.auto_checkpoint = False
    print("ready", flush=True)
    sys.stdin.readline()
    done = {}
    for i in range(int(sys.argv[2])):
        done[1000 + i] = table.write(pa.table({"id": [1000 + i], "p": ["a"]}))
    print(json.dumps(done), flush=True)
""")

APPENDS = int(os.environ.get("DELTA_RESTORE_APPENDS", "20"))


def test_restores_while_another_process_appends(table):
    """A process appends (blind appends) while we restore back and forth. Every restore commit holds
    exactly the restored version's rows plus those appended between its read and its commit, and an
    appended row is gone at the end only if a restore that saw it removed it: nothing lost silently."""
    table.auto_checkpoint = False
    proc = subprocess.Popen([sys.executable, "-c", APPENDER, table.uri, str(APPENDS)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        restores = 0
        while proc.poll() is None or restores < 2:
            table.restore(1 if restores % 2 == 0 else 2)
            restores += 1
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    appended = {int(k): v for k, v in json.loads(out.strip().splitlines()[-1]).items()}
    fresh = DeltaTable(table.uri)
    history = {h["version"]: h for h in fresh.history()}
    restore_versions = [v for v, h in history.items() if h["operation"] == "RESTORE"]
    assert len(restore_versions) == restores
    base = {1: {1, 2}, 2: {1, 2, 3}}
    for v in restore_versions:
        h = history[v]
        read = h["readVersion"]
        between = {i for i, av in appended.items() if read < av < v}
        assert set(ids(fresh, v)) == base[h["operationParameters"]["version"]] | between, f"restore at v{v}"
    final = set(ids(fresh))
    for i, av in appended.items():
        seen_by_a_restore = any(history[v]["readVersion"] >= av for v in restore_versions)
        assert (i in final) == (not seen_by_a_restore), f"row {i} appended at v{av}"


def test_restore_of_a_managed_commit_table_keeps_its_owner(tmp_path):
    owner = InMemoryCommitOwner()
    t = DeltaTable.create(str(tmp_path / "managed"), SCHEMA, commit_owner=owner)
    t.write(pa.table({"id": [1], "p": ["a"]}))
    with t.transaction(operation="SET TBLPROPERTIES") as txn:                       # v2: a metadata change
        txn.set_properties({"delta.logRetentionDuration": "interval 60 days"})
    t.write(pa.table({"id": [2], "p": ["a"]}))                                     # v3
    assert t.restore(1) == 4
    snap = t.snapshot()
    assert snap.commits_are_coordinated and snap.in_commit_timestamps_enabled
    assert "delta.logRetentionDuration" not in snap.configuration and ids(t) == [1]
    assert ids(DeltaTable(t.uri, commit_owner=owner)) == [1]


def test_restore_to_before_in_commit_timestamps_takes_that_versions_metadata(tmp_path):
    t = DeltaTable.create(str(tmp_path / "ict"), SCHEMA)
    t.write(pa.table({"id": [1], "p": ["a"]}))                                     # v1
    t.enable_in_commit_timestamps()                                                # v2
    t.restore(1)                                                                   # v3: v1's metadata
    snap = t.snapshot()
    assert not snap.in_commit_timestamps_enabled
    assert snap.protocol.has_writer_feature("inCommitTimestamp")                  # the protocol keeps it
    assert [t.snapshot(version=v).version for v in range(4)] == [0, 1, 2, 3]


def test_restore_to_before_an_added_column_keeps_the_older_files(tmp_path):
    """v1's file stays live and the schema goes back to v1's: the layout rule of ordinary commits
    (no column dropped while files hold it) does not apply, as every kept file predates the column."""
    t = DeltaTable.create(str(tmp_path / "cols"), pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))                                                 # v1
    m = t.snapshot().metadata
    with t.transaction(operation="ADD COLUMNS") as txn:                            # v2: nullable column x
        txn.set_metadata(Metadata(m.id, schema_string(pa.schema([("id", pa.int64()), ("x", pa.string())])),
                                  m.partition_columns, m.configuration, created_time=m.created_time))
    t.write(pa.table({"id": [2], "x": ["a"]}))                                    # v3
    assert t.restore(1) == 4
    assert t.snapshot().to_pyarrow().to_pylist() == [{"id": 1}]
    assert deltalake.DeltaTable(t.uri).to_pyarrow_table().to_pylist() == [{"id": 1}]
    with pytest.raises(InvalidArgumentError, match="dropped"):                    # an ordinary commit still may not
        with t.transaction(operation="WRITE") as txn:
            txn.set_metadata(Metadata(m.id, schema_string(pa.schema([("y", pa.int64())])), (), m.configuration,
                                      created_time=m.created_time))


def test_same_files_and_rows_as_deltalakes_restore(table, tmp_path):
    """deltalake's own restore of a copy of the same table ends at the same live files and rows."""
    theirs = str(tmp_path / "theirs")
    shutil.copytree(table.storage.root, theirs)
    table.restore(2)
    metrics = deltalake.DeltaTable(theirs).restore(2)
    ours_files = set(table.snapshot().files().column("path").to_pylist())
    assert ours_files == set(DeltaTable(theirs).snapshot().files().column("path").to_pylist())
    assert ids(table) == ids(DeltaTable(theirs))
    assert (metrics["numRestoredFile"], metrics["numRemovedFile"]) == (3, 1)
    ours = table.history(1)[0]["operationMetrics"]
    assert (ours["numRestoredFiles"], ours["numRemovedFiles"]) == ("3", "1")


@pytest.mark.parametrize("target", [0, 1])
def test_restore_of_metadata_over_deletion_vector_files_passes_the_restored_files_check(copy_table, target):
    """The RESTORE exemption holds only when the commit leaves exactly the restored version's logical
    files live (:mod:`log.write.restored_version`): keyed by (path, DV unique id), offsets included.
    Delta Spark's table-with-dv-small: version 1 gives the one file a DV (storage 'u', with an offset);
    version 2 changes a property, so the restore sets metadata and the check runs - over the same
    files (target 1) and over the file without its DV (target 0: remove (p, dv), add (p, none))."""
    path = copy_table("delta-rs/table-with-dv-small")
    table = DeltaTable(str(path))
    expected = sorted(table.snapshot(version=target).to_pyarrow().column("value").to_pylist())
    with table.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.logRetentionDuration": "interval 60 days"})
    assert table.restore(version=target, enforce_retention=False) == 3
    snap = DeltaTable(str(path)).snapshot()
    assert snap.metadata.configuration.get("delta.logRetentionDuration") is None
    assert sorted(snap.to_pyarrow().column("value").to_pylist()) == expected


def test_restored_metadata_with_a_file_of_another_version_kept_is_refused(tmp_path):
    """The metadata is version 1's and the commit removes version 2's file - but adds a file that
    version 1 never had: not version 1's files, so no exemption (nothing written)."""
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.string())]))
    v1 = t.write(pa.table({"id": ["a"]}))
    of_v1 = t.snapshot(version=v1)
    t.write(pa.table({"id": pa.array([7], pa.int64())}), mode="overwrite", overwrite_schema=True)
    [live] = t.snapshot().files().to_pylist()
    before = t.latest_version()
    from airflow_provider_delta.log import AddFile
    with pytest.raises(InvalidArgumentError, match="exactly that version's files"):
        with t.transaction(operation="RESTORE") as txn:
            txn.set_metadata(of_v1.metadata, of_restored_version=of_v1)
            for row in of_v1.files().to_pylist():
                txn.add_file(AddFile(row["path"], row["size"], {}, row["modification_time"], True, row["stats"]))
            txn.add_file(AddFile("stranger.parquet", 1, {}, 1, True))
            txn.remove_file(live["path"])
    assert DeltaTable(t.uri).latest_version() == before
    assert DeltaTable(t.uri).snapshot().files().column("path").to_pylist() == [live["path"]]


def test_of_restored_version_takes_only_a_snapshot_of_this_table(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    other = DeltaTable.create(str(tmp_path / "o"), SCHEMA)
    with pytest.raises(InvalidArgumentError, match="snapshot of this table"):
        with t.transaction(operation="RESTORE") as txn:
            txn.set_metadata(other.snapshot().metadata, of_restored_version=other.snapshot())
    assert DeltaTable(t.uri).latest_version() == 0
