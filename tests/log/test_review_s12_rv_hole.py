"""Review s12 (report-only) of the post-put hole check (write/commit_successor.py: landed_below_newer_log, _judge,
check_caught_up_log) and CommitOutcomeUnknownError. Each test is an open finding, a strict xfail until fixed.
Set-ups: tests/log/built_on_store.py, and the store wrappers below (another writer's commits, checkpoint and a
cleanup that runs inside our commit put, before it lands)."""
from __future__ import annotations

import os
from typing import Any, Callable

import pyarrow as pa

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import DeltaError
from built_on_store import BeforeTheNextPut, HoleBeforeThePut
from test_hole_evidence import _table

SCHEMA = pa.schema([("id", pa.int64())])


def _log_dir(t: DeltaTable) -> str:
    return os.path.join(t.storage.root, "_delta_log")


def _ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


def _append(n: int) -> Callable[[DeltaTable], Any]:
    return lambda other: other.write(pa.table({"id": [n]}))


def _outcome(fn: Callable[[], Any]) -> str:
    try:
        fn()
        return "committed"
    except DeltaError as e:
        return type(e).__name__


def CleanupRacesThePut(inner, uri: str, others: list[Callable[[DeltaTable], Any]],
                       gone: Callable[[int, int], range], checkpoint_ahead_ms: int | None = None) -> HoleBeforeThePut:
    """The table's own store; right before our next commit put (version v) lands, another writer commits v and
    on (``others``), checkpoints its last version C, and a cleanup deletes ``gone(v, C)`` - the versions whose
    commit files are removed by the time our put lands. ``checkpoint_ahead_ms``: after our put, the checkpoint's
    file time is set that far past our commit file's (the cleaner's clock ahead of ours, on a store whose file
    times are the writers' clocks - the skew the module docstring itself allows for, the other way round)."""
    return HoleBeforeThePut(inner, uri, others, gone=gone, checkpoint_ahead_ms=checkpoint_ahead_ms)


# ------------------------------------------------------------------ wrong "committed" (a lost write reported done)
def test_a_commit_into_a_hole_left_by_a_cleanup_out_of_version_order_is_not_reported_committed(tmp_path):
    t = _table(tmp_path)                                      # v0 create, v1 (id 1), v2 (id 2); we read v2
    t.storage.files = CleanupRacesThePut(t.storage.files, t.uri, [_append(50), _append(60), _append(70)],
                                         gone=lambda ours, top: range(ours, top))     # 3, 4 gone; 2 not yet
    outcome = _outcome(lambda: t.write(pa.table({"id": [3]})))   # lands as v3 below checkpoint 5
    assert _ids(t.uri) == [1, 2, 50, 60, 70]                  # our row is not in the table
    assert outcome != "committed"


def test_a_commit_in_a_hole_below_a_newer_looking_checkpoint_is_not_reported_committed(tmp_path):
    t = _table(tmp_path)
    t.storage.files = CleanupRacesThePut(t.storage.files, t.uri, [_append(50), _append(60), _append(70)],
                                         gone=lambda ours, top: range(0, ours + 1), checkpoint_ahead_ms=2_000)
    outcome = _outcome(lambda: t.write(pa.table({"id": [3]})))   # lands as v3 below checkpoint 5
    assert _ids(t.uri) == [1, 2, 50, 60, 70]
    assert outcome != "committed"


# ------------------------------------------------------------------ a writer catching up through a hole
def _parquet_add(t: DeltaTable, name: str, ids: list[int]):
    import json
    import time

    import pyarrow.parquet as pq

    from airflow_provider_delta.log.base.commit_actions import AddFile
    data = os.path.join(t.storage.root, name)
    pq.write_table(pa.table({"id": ids}, schema=SCHEMA), data)
    return AddFile(name, os.path.getsize(data), {}, int(time.time() * 1000), True,
                   json.dumps({"numRecords": len(ids)}))


def test_a_writer_catching_up_through_a_hole_commit_does_not_skip_the_cleaned_up_winner(tmp_path):
    t = _table(tmp_path)                                       # v1 (id 1: file F), v2 (id 2)
    root = t.uri
    f_path = DeltaTable(root).snapshot(version=1).files().column("path")[0].as_py()      # the file of id 1

    def delete_f(other: DeltaTable) -> None:
        with other.transaction(operation="DELETE") as txn:
            txn.remove_file(f_path)

    def _txn_only(n: int):
        def commit(other: DeltaTable) -> None:
            with other.transaction(operation="STREAMING UPDATE") as txn:
                txn.set_txn("other-job", n)
        return commit

    x = DeltaTable(root)
    x.auto_checkpoint = False
    x_txn = x.transaction()
    x_txn.__enter__()                                          # X reads version 2
    x_outcome: list[str] = []

    def x_into_the_hole() -> None:
        """Right before Y's put: X's txn-only commit lands at v3 while cleanup empties 0..3 below checkpoint 5."""
        x.storage.files = CleanupRacesThePut(x.storage.files, root, [delete_f, _txn_only(1), _txn_only(2)],
                                             gone=lambda ours, top: range(0, ours + 1))   # 0..3 gone
        x_txn.set_txn("x-job", 1)
        x_outcome.append(_outcome(lambda: x_txn.__exit__(None, None, None)))

    y = DeltaTable(root)
    y.auto_checkpoint = False
    y_txn = y.transaction(operation="UPDATE")
    y_txn.__enter__()                                          # Y reads version 2
    y_txn.remove_file(f_path)
    y_txn.add_file(_parquet_add(y, "f-rewritten.parquet", [11]))
    y.storage.files = BeforeTheNextPut(y.storage.files, x_into_the_hole)
    y_outcome = _outcome(lambda: y_txn.__exit__(None, None, None))
    assert x_outcome == ["CommitOutcomeUnknownError"]          # X's txn-only commit left at v3, in the hole
    assert _ids(root) in ([2], [2, 11])
    assert y_outcome != "committed"
    assert _ids(root) == [2]                                   # the DELETE's row does not come back


# ------------------------------------------------------------------ the outcome resolver after an unknown outcome
def undecided_hole_table(tmp_path) -> DeltaTable:
    """v0..v2 (ids 1, 2); our next commit (v3) lands in a hole below checkpoint 4 (another writer's v3, v4; 0..3
    cleaned up inside our put) that the check cannot decide: ``delta.deletedFileRetentionDuration`` is 1 hour."""
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, SCHEMA, properties={"delta.deletedFileRetentionDuration": "interval 1 hour"})
    t.auto_checkpoint = False
    t.write(pa.table({"id": [1]}))
    t.write(pa.table({"id": [2]}))
    t.storage.files = CleanupRacesThePut(t.storage.files, root, [_append(50), _append(60)],
                                         gone=lambda ours, top: range(0, ours + 1))   # 0..3 gone, checkpoint 4
    return t


def test_landed_version_does_not_report_a_commit_left_in_a_hole_as_landed(tmp_path):
    t = undecided_hole_table(tmp_path)
    root = t.storage.root
    txn = t.transaction()
    txn.__enter__()
    txn.add_file(_parquet_add(t, "x.parquet", [3]))
    assert _outcome(txn.commit) == "CommitOutcomeUnknownError"
    assert os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))      # left in the hole
    assert _ids(root) == [1, 2, 50, 60]                                       # not in the table
    assert txn.landed_version() is None


class DeleteRefused:
    """The table's own store, refusing to delete (a store without delete permission for this writer, a
    transient 503): the withdrawal of a commit proven in a hole fails and its file stays."""

    def __init__(self, inner):
        self.inner = inner

    def delete(self, path: str) -> None:
        raise PermissionError(f"delete of {path} refused")

    def __getattr__(self, name):
        return getattr(self.inner, name)


def test_landed_version_does_not_report_a_commit_proven_in_a_hole_whose_withdrawal_failed(tmp_path):
    t = _table(tmp_path)                                     # default retentions: the check proves the hole
    t.storage.files = CleanupRacesThePut(DeleteRefused(t.storage.files), t.uri, [_append(50), _append(60)],
                                         gone=lambda ours, top: range(0, ours + 1))
    txn = t.transaction()
    txn.__enter__()
    txn.add_file(_parquet_add(t, "x.parquet", [3]))
    assert _outcome(txn.commit) == "InvalidCommittedVersionError"
    assert os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))      # withdrawal failed: left in the hole
    assert _ids(t.uri) == [1, 2, 50, 60]
    assert txn.landed_version() is None


# ------------------------------------------------------------------ an unknown outcome with no cleanup at all
def test_a_live_commit_after_a_lost_race_built_on_at_once_is_not_reported_unknown(tmp_path):
    from built_on_store import BeforeTheNextPut, BuiltOnAtOnce
    t = _table(tmp_path)                                       # v0..v2, not aged: no cleanup removes anything
    other = DeltaTable(t.uri)
    other.auto_checkpoint = False
    t.storage.files = BuiltOnAtOnce(BeforeTheNextPut(t.storage.files, lambda: other.write(pa.table({"id": [50]}))),
                                    t.uri)

    def set_property() -> None:
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_metadata(t.snapshot().metadata.with_configuration({"delta.appendOnly": "false"}))
    outcome = _outcome(set_property)
    names = sorted(os.listdir(_log_dir(t)))
    assert all(f"{v:020d}.json" in names for v in range(6))    # nothing cleaned up
    assert DeltaTable(t.uri).snapshot().metadata.configuration.get("delta.appendOnly") == "false"
    assert outcome == "committed"


def test_landed_version_does_not_take_the_committing_tables_cached_snapshot_for_the_txn_record(tmp_path):
    """The other side of landed_version's txn-record proof: the committing DeltaTable's cached snapshot, updated
    incrementally from the read version, replays the commit file left in the hole and shows its txn record; a
    fresh load (readers start at the checkpoint) does not. landed_version reads the latter: None."""
    t = undecided_hole_table(tmp_path)
    root = t.storage.root
    txn = t.transaction()
    txn.__enter__()
    txn.set_txn("job", 1)
    txn.add_file(_parquet_add(t, "x.parquet", [3]))
    assert _outcome(txn.commit) == "CommitOutcomeUnknownError"
    assert DeltaTable(root).snapshot().transaction_version("job") is None
    assert txn.landed_version() is None
    assert not txn.surely_not_committed()                    # its file is there: the data files are kept



def test_the_committing_tables_updated_snapshot_matches_a_fresh_load_after_a_hole_commit(tmp_path):
    t = undecided_hole_table(tmp_path)
    t.snapshot()                                             # cached at version 2
    txn = t.transaction()
    txn.__enter__()
    txn.set_txn("job", 1)
    txn.add_file(_parquet_add(t, "x.parquet", [3]))
    assert _outcome(txn.commit) == "CommitOutcomeUnknownError"
    fresh = DeltaTable(t.storage.root).snapshot()
    assert fresh.transaction_version("job") is None
    assert t.snapshot().transaction_version("job") == fresh.transaction_version("job")
