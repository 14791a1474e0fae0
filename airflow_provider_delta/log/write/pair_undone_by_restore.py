"""A writer's exactly-once pair undone by a RESTORE: recorded, so the write is skipped, yet its rows are gone.

A writer that commits ``txn(appId, version)`` with its data skips when the table records that
version of ``appId`` (or a later one): Delta's rule, Delta Spark's ``txnAppId``/``txnVersion``
and ours. A RESTORE commits only adds and removes (Delta Spark's ``RestoreTableCommand`` and
:func:`~.restore.restore_table`): the ``txn`` actions stay as they are. So after a RESTORE to a
version before the pair's commit, the table records the pair but holds none of its rows; a
cleared or retried run finds the pair, skips, and would report success for data that is not
there, and Delta Spark would skip a write with that pair too.

The rule (decided for issue #27): whatever skips because its pair is committed asks
:func:`check_pair_not_undone` first and fails with :class:`PairUndoneByRestoreError` when a
later RESTORE undid the commit; the way out is a new pair (a higher ``app_version``), which the
error says. Whether the commit's files are live after the RESTOREs that followed it:

- a RESTORE to a version before the pair's commit undoes it;
- a RESTORE to the pair's version or later brings back that version's state: the commit is live
  after it if it was live at that version (a RESTORE forward again, past the one that undid it,
  to a version at which it was live, makes it live again);
- a RESTORE that records no version (Delta Spark's ``RESTORE ... TO TIMESTAMP AS OF`` records only
  ``java.sql.Timestamp.toString()``: the JVM's local wall-clock time, no zone, so no instant can be read
  from it) is judged by what it did to the pair commit's added files (Delta Spark's canonical keys):
  it added one (back), or touched none while one of them is live after it: its target holds the commit
  (no version before the commit has its files), live; else it removed one (a ``dataChange`` remove), so it
  went back before the commit: undone; it touched none while none is live (a DELETE or OPTIMIZE rewrote
  them first, a commit that added no files) and the commit was live before it: it cannot be told, and
  :class:`~..base.errors.PairRestoreUndecidedError` says so and what to check (skipping could report
  rows that are gone, writing again could duplicate them);
- a RESTORE that records neither (unreadable parameters) is judged the same way.

Other commits after the pair (deletes, overwrites, OPTIMIZE) are the table's ordinary life, not an
undo of the pair's write: they do not count. A RESTORE that records a version is asked about by that
number only (exact; our :func:`~.restore.restore_table` records it when given one).

The recorded ``txn`` version may be higher than the one asked about (a later run's, ``recorded``):
the skip then rests on that run's commit when no commit holds the asked pair, and the same check
applies to it (:func:`check_pair_not_undone`); the way out names the recorded version.

An incremental consumer's position (:mod:`~..incremental`: ``txn(app_id, v)`` in its output, "the input's
changes up to version ``v`` are in the output") is such a pair too, and the same RESTORE undoes it: the output
holds the restored version's data, yet the position still says ``v``, so the consumer would read nothing
before ``v`` again and the restored-away changes would never be processed. Taking it is refused the same way
(:func:`check_position_not_undone`, :class:`PositionUndoneByRestoreError`); the way out differs, because a
position is the same pair for every run: the consumer starts again under another ``app_id`` with
``initial_version`` set to the input version after the position the restored data holds (the restored
version's own ``txn`` for the id, itself not undone as of that version), which the error names. It is not
resumed from there on its own: a RESTORE of an output may be meant to drop what the consumer wrote, and
under the same id the recorded position (kept by the RESTORE) would make Delta Spark skip a write whose
``txnVersion`` is not above it.

Cost: one listing, then the commits from the latest back to the pair's commit, no further (at most
``max_commits``): each is read once, a ``RESTORE`` or ``txn`` substring test first, and only those
that pass are parsed; a RESTORE without a recorded version that touched none of the pair's files costs
one snapshot of its version. A pair whose commit is not found within that reach (or was cleaned up) is not
known to be undone: the skip stands.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.errors import (DeltaError, PairRestoreUndecidedError, PairUndoneByRestoreError,
                           PositionUndoneByRestoreError, VersionNotFoundError)
from ..base.path_spelling import LOG_PATH_COLUMN, canonical_log_path, encode_path
from ..read.commit_reader import parse_json_lines, read_commit_file
from ..read.commit_timestamps import commit_info_of
from ..read.table_log import TableLog
from .restore import RESTORE_OPERATION, restore_target_of

#: how many commits back from the latest the pair's commit is looked for
DEFAULT_SEARCH_DEPTH = 1000

_RESTORE = f'"{RESTORE_OPERATION}"'.encode()
_TXN = b'"txn"'


@dataclass(frozen=True)
class PairUndone:
    """The pair's commit (``version``) and the RESTORE that undid it (``restore_version``, to ``restored_version``:
    None when it records no version). ``undecided``: whether that RESTORE undid it cannot be told (see the
    module docstring); ``recorded``: the pair's version asked about (the recorded one when the skip rests on it)."""

    version: int
    restore_version: int
    restored_version: int | None
    undecided: bool = field(default=False, kw_only=True)
    app_version: int | None = field(default=None, compare=False, kw_only=True)


@dataclass(frozen=True)
class _Restore:
    """A RESTORE after the pair: its version, its recorded target version (None: none recorded), and the
    canonical keys of the files it removed (``dataChange``) and added (read only when no target is recorded)."""

    version: int
    target: int | None
    removed: frozenset[str] = frozenset()
    added: frozenset[str] = frozenset()


#: a commit's state after a RESTORE that cannot be told from the log
_UNKNOWN = None


def pair_undone_by_restore(table: TableLog, app_id: str, app_version: int,
                           max_commits: int = DEFAULT_SEARCH_DEPTH, at: int | None = None) -> PairUndone | None:
    """How the commit holding ``txn(app_id, app_version)`` was undone by a later RESTORE (``undecided`` when
    that cannot be told), or None (it was not, no RESTORE came after it, or the commit is not found among the
    newest ``max_commits``).

    ``at``: as of that version (default: the latest); only the commits up to it are read."""
    return _search(table, app_id, app_version, max_commits, at)[1]


def _search(table: TableLog, app_id: str, app_version: int, max_commits: int,
            at: int | None) -> tuple[bool, PairUndone | None]:
    """(whether the commit holding the pair was found, how a later RESTORE undid it or None)."""
    listing = table.listing()
    latest = listing.latest
    if latest is None:
        return False, None
    if at is not None:
        latest = min(latest, at)
    restores: list[_Restore] = []                        # newest first
    for v in range(latest, max(-1, latest - max_commits), -1):
        lf = listing.commits.get(v)
        if lf is None:
            return False, None                            # cleaned up (or a checkpoint-only past): not known
        try:
            blob = read_commit_file(table.storage, lf)
        except VersionNotFoundError:
            return False, None
        if _RESTORE in blob:
            info = commit_info_of(blob) or {}
            if info.get("operation") == RESTORE_OPERATION:
                restores.append(_restore_of(table, v, blob, lf.path, info.get("operationParameters")))
        if _TXN in blob:
            added = _pair_commit_adds(blob, lf.path, app_id, app_version)
            if added is not None:
                return True, _undone(table, v, added, restores[::-1], app_version)
    return False, None


def check_pair_not_undone(table: TableLog, app_id: str, app_version: int,
                          max_commits: int = DEFAULT_SEARCH_DEPTH, recorded: int | None = None,
                          version_parameter: str = "app_version") -> None:
    """Raise :class:`PairUndoneByRestoreError` when a later RESTORE undid the commit holding the pair
    (see :func:`pair_undone_by_restore`): a skip would report a write whose rows are not in the table;
    :class:`PairRestoreUndecidedError` when whether it did cannot be told.

    ``recorded``: the ``txn`` version the table records for ``app_id`` (the skip's reason), when the caller
    has read it: when it is higher and no commit holds ``app_version``, the skip rests on the commit of the
    recorded version, which is checked the same way; the message's way out names it. ``version_parameter``:
    the caller's name for the pair's version (``app_version`` of the Spark operators, ``txn_version`` of the
    hook), which the way out tells the user to raise."""
    found, undone = _search(table, app_id, app_version, max_commits, None)
    if not found and recorded is not None and recorded > app_version:
        found, undone = _search(table, app_id, recorded, max_commits, None)
    if undone is None:
        return
    top = max(app_version, recorded if recorded is not None else app_version)
    rests = ("" if undone.app_version == app_version else
             f" (no commit holds txnVersion={app_version}: the skip rests on the recorded txnVersion={top})")
    if undone.undecided:
        raise PairRestoreUndecidedError(
            f"{table.uri} records txnAppId={app_id!r} txnVersion={top}, so this write (txnVersion={app_version}) "
            f"would be skipped{rests}, but the RESTORE at version {undone.restore_version}, which records no "
            f"version, came after the commit at version {undone.version} holding txnVersion={undone.app_version}, "
            "and what it did does not tell whether that commit's rows are still in the table (none of the files "
            "it added is live, none was removed or added back by the RESTORE). Nothing was written. Check: "
            f"compare the table's rows with that commit's (DESCRIBE HISTORY, version {undone.version}). Rows "
            f"there: mark this task successful. Rows gone: re-run with a higher {version_parameter} (more than {top}: a "
            "version up to the recorded one counts as committed)",
            version=undone.version, restore_version=undone.restore_version, restored_version=None)
    target = ("a version before it: the RESTORE removed the files it added" if undone.restored_version is None
              else f"version {undone.restored_version}")
    whose = "the run's commit" if undone.app_version == app_version else f"the commit of txnVersion={top}"
    raise PairUndoneByRestoreError(
        f"{table.uri} records txnAppId={app_id!r} txnVersion={top}, so this write (txnVersion={app_version}) would "
        f"be skipped{rests}, but {whose} at version {undone.version} was undone by the RESTORE at version "
        f"{undone.restore_version} (to {target}): the table holds none of its rows. A RESTORE keeps the table's txn records, so Delta Spark would skip a write with the same pair too. "
        f"Nothing was written. To write the data again, re-run with a higher {version_parameter} (more than {top}: a "
        "version up to the recorded one counts as committed); if the rollback was meant to drop this run's data, "
        "mark the task successful instead",
        version=undone.version, restore_version=undone.restore_version, restored_version=undone.restored_version)


@dataclass(frozen=True)
class PositionUndone(PairUndone):
    """A consumer's position (``position``) whose commit (``version``) the RESTORE at ``restore_version`` undid.

    ``held``: the position the restored data holds (None: none of the consumer's output, or not readable);
    ``restart_from``: the input version to start again from, ``held + 1`` (``initial_version`` when it holds
    none; None when that cannot be read: a version no longer in the log, a RESTORE target not resolvable)."""

    position: int = 0
    held: int | None = None
    restart_from: int | None = None


#: how many RESTOREs back a position the restored data holds is followed (each may have undone the one before)
_MAX_HOPS = 100


def position_undone_by_restore(table: TableLog, app_id: str, position: int, initial_version: int = 0,
                                max_commits: int = DEFAULT_SEARCH_DEPTH) -> PositionUndone | None:
    """How the commit recording ``app_id``'s position ``position`` was undone by a later RESTORE, or None."""
    undone = pair_undone_by_restore(table, app_id, position, max_commits)
    if undone is None:
        return None
    held, restart_from = _held_position(table, app_id, undone.restored_version, initial_version, max_commits)
    return PositionUndone(undone.version, undone.restore_version, undone.restored_version, undecided=undone.undecided,
                          app_version=position, position=position, held=held, restart_from=restart_from)


def check_position_not_undone(table: TableLog, app_id: str, position: int, initial_version: int = 0,
                              max_commits: int = DEFAULT_SEARCH_DEPTH) -> None:
    """Raise :class:`PositionUndoneByRestoreError` when a later RESTORE undid the commit recording the consumer's
    position: taking it would skip the restored-away changes for good."""
    undone = position_undone_by_restore(table, app_id, position, initial_version, max_commits)
    if undone is None:
        return
    if undone.undecided:
        raise PairRestoreUndecidedError(
            f"{table.uri} records the position of the incremental consumer {app_id!r} (txn version {position}), "
            f"but the RESTORE at version {undone.restore_version}, which records no version, came after its commit "
            f"at version {undone.version}, and what it did does not tell whether the output still holds that "
            "commit's rows. Nothing was read or written. Check the output's rows against that commit (DESCRIBE "
            "HISTORY); then run the consumer under another app_id with the initial_version the output's data holds",
            version=undone.version, restore_version=undone.restore_version, restored_version=None)
    target = ("a version before it: the RESTORE removed the files it added" if undone.restored_version is None
              else f"version {undone.restored_version}")
    if undone.restart_from is None:
        holds = ("which input version the restored data holds cannot be read (a version no longer in the log, a "
                 "RESTORE that records no version): "
                 "find it in the output's rows or history")
        restart = "initial_version=<the input version after the one the restored data holds>"
    else:
        holds = ("the restored data holds none of this consumer's output" if undone.held is None
                 else f"the restored data holds the input's changes up to version {undone.held} only")
        restart = f"initial_version={undone.restart_from}"
    raise PositionUndoneByRestoreError(
        f"{table.uri} records the position of the incremental consumer {app_id!r} (txn version {position}: the "
        f"input's changes up to version {position} processed), but its commit at version {undone.version} was "
        f"undone by the RESTORE at version {undone.restore_version} (to {target}): {holds}. Taking the position "
        "would skip the restored-away changes for good, so nothing was read or written. A RESTORE keeps the "
        f"table's txn records, so {app_id!r} keeps this position (and Delta Spark would skip a write recording "
        f"txnVersion {position} or lower). To process those changes again, run the consumer under another "
        f"app_id with {restart}; to leave them out for good, another app_id with initial_version={position + 1}",
        version=undone.version, restore_version=undone.restore_version, restored_version=undone.restored_version,
        app_id=app_id, position=position, restart_from=undone.restart_from)


def _held_position(table: TableLog, app_id: str, restored: int | None, initial_version: int,
                   max_commits: int) -> tuple[int | None, int | None]:
    """(position, input version to start again from) of the data of version ``restored``: its ``txn`` for
    ``app_id``, unless a RESTORE before it undid that one's commit too (then the position of the version that
    RESTORE went back to, and so on); (None, ``initial_version``) when it holds none; (None, None) when a
    version cannot be read."""
    for _ in range(_MAX_HOPS):
        if restored is None:
            return None, None
        try:
            held = table.snapshot(version=restored).transaction_version(app_id)
        except DeltaError:
            return None, None
        if held is None:
            return None, initial_version
        earlier = pair_undone_by_restore(table, app_id, held, max_commits, at=restored)
        if earlier is None:
            return held, held + 1
        restored = earlier.restored_version
    return None, None


def _restore_of(table: TableLog, version: int, blob: bytes, path: str, params: Any) -> _Restore:
    """A RESTORE commit: its recorded target version when it records one (a number: exact), else the keys
    of the files it removed and added (its timestamp is not read: see the module docstring)."""
    recorded = params.get("version") if isinstance(params, dict) else None
    if recorded is not None:
        target = restore_target_of(table, {"version": recorded})
        if target is not None:
            return _Restore(version, target)
    removed: set[str] = set()
    added: set[str] = set()
    for action in parse_json_lines(blob, path):
        if not isinstance(action, dict):
            continue
        r, a = action.get("remove"), action.get("add")
        if isinstance(r, dict) and isinstance(r.get("path"), str) and r.get("dataChange") is not False:
            removed.add(canonical_log_path(r["path"]))
        elif isinstance(a, dict) and isinstance(a.get("path"), str):
            added.add(canonical_log_path(a["path"]))
    return _Restore(version, None, frozenset(removed), frozenset(added))


def _live_at(table: TableLog, version: int, keys: frozenset[str]) -> bool:
    """Whether any of ``keys`` (canonical) is a live file of ``version``."""
    files = table.snapshot(version=version).files()
    if LOG_PATH_COLUMN in files.column_names:
        live = files.column(LOG_PATH_COLUMN).to_pylist()
    else:
        live = [canonical_log_path(encode_path(p)) for p in files.column("path").to_pylist()]
    return not keys.isdisjoint(live)


def _undone(table: TableLog, version: int, added: frozenset[str], restores: list[_Restore],
            app_version: int) -> PairUndone | None:
    """Whether the commit at ``version`` (which added ``added``) is live after ``restores`` (oldest first), by the
    rules above: the RESTORE that left it undone (``undecided`` when that cannot be told), or None when it is
    live at the latest version."""
    after: list[tuple[int, bool | None]] = []             # (RESTORE version, live after it), ascending

    def state_at(v: int) -> bool | None:
        state: bool | None = True
        for r, live in after:
            if r > v:
                break
            state = live
        return state
    undoing: _Restore | None = None
    for restore in restores:
        before = state_at(restore.version - 1)
        live: bool | None
        if restore.target is not None:
            live = False if restore.target < version else state_at(restore.target)
        elif added & restore.added:
            live = True                                   # a file of the commit added (back): its target holds
        elif added & restore.removed:                     # it (checked first: a file's DV change re-adds its path)
            live = False                                  # it went back before the commit
        elif before is False:
            live = False                                  # touched nothing of an undone commit: still undone
        elif added and _live_at(table, restore.version, added):
            live = True                                   # a file of the commit live and kept: its target holds it
        else:
            live = _UNKNOWN
        after.append((restore.version, live))
        if live is True:
            undoing = None
        elif undoing is None or live is not before:       # the RESTORE that undid it (or left it unknown)
            undoing = restore
    final = state_at(restores[-1].version) if restores else True
    if final is True or undoing is None:
        return None
    return PairUndone(version, undoing.version, undoing.target, undecided=final is _UNKNOWN,
                      app_version=app_version)


def _pair_commit_adds(blob: bytes, path: str, app_id: str, app_version: int) -> frozenset[str] | None:
    """The canonical keys of the files a commit holding ``txn(app_id, app_version)`` added, or None when it
    does not hold the pair."""
    holds = False
    added: set[str] = set()
    for action in parse_json_lines(blob, path):
        if not isinstance(action, dict):
            continue
        t, a = action.get("txn"), action.get("add")
        if isinstance(t, dict) and t.get("appId") == app_id and t.get("version") == app_version:
            holds = True
        elif isinstance(a, dict) and isinstance(a.get("path"), str):
            added.add(canonical_log_path(a["path"]))
    return frozenset(added) if holds else None
