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
  from it) is judged by what it did to the files carrying the commit's rows, each a logical file
  (canonical path, deletion vector unique id: Delta Spark's key in Action Reconciliation, so a DELETE's
  DV re-adding its file under the same path is another file): the *carriers* are the files the commit
  added and those a ``dataChange=false`` rewrite of a carrier wrote (OPTIMIZE, a DV purge: the same rows);
  the *descendants* are the files a data-changing rewrite (DELETE, UPDATE, MERGE, an overwrite) of a carrier
  or descendant wrote (perhaps some of the rows). It added a carrier (back), or touched none while one is
  live after it: its target holds the commit (no version before the commit has those files), live; it
  removed a carrier (a ``dataChange`` remove) or added back a file the commit removed: it went back before
  the commit, undone, unless a descendant is live after it (then it cannot be told); an empty RESTORE
  changes nothing; it touched no carrier while none is live: after a RESTORE that undid the commit, still
  undone when no descendant is live (no file that may hold the rows came back); otherwise (a commit that
  added no files, a rewrite's files live) it cannot be told, and
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

The pair's commit no longer in the log (metadata cleanup deleted it and everything before the oldest
commit left, ``earliest``), while the table records the pair: the RESTOREs after ``earliest`` are asked
whether they went back before it. One recording a version at or after ``earliest`` went back to a version
after the commit (judged as the pair stood there, not known undone at ``earliest``); one recording an older
version undid it when that version is readable and records the pair's ``txn`` below the asked version,
else it cannot be told; one recording no version went back into the readable log (so after the commit) when
its files afterwards hold one a commit of the readable log (not a RESTORE) wrote with ``dataChange``, a file
that did not exist before that commit, else it cannot be told. Cannot be told is :class:`~..base.errors.PairRestoreUndecidedError`:
never a silent skip over rows a RESTORE may have taken away.

Cost: one listing, then the commits from the latest back to the pair's commit, no further (at most
``max_commits``): each is read once, a ``RESTORE`` or ``txn`` substring test first, and only those
that pass are parsed, and, after a RESTORE, those holding a ``remove`` (to follow the rows); a RESTORE
without a recorded version that touched none of the carriers costs one snapshot of its version. A pair
whose commit is not found within that reach is not known to be undone: the skip stands; one cleaned up costs
a snapshot of the latest version when a RESTORE is in the log after it (and of the RESTORE's version and a
read of the readable log's commits when it records no version).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..base.errors import (DeltaError, PairRestoreUndecidedError, PairUndoneByRestoreError,
                           PositionUndoneByRestoreError, VersionNotFoundError)
from ..base.feature_actions import dv_unique_id
from ..base.path_spelling import LOG_PATH_COLUMN, canonical_log_path, encode_path
from ..read.commit_reader import parse_json_lines, read_commit_file
from ..read.commit_timestamps import commit_info_of
from ..read.table_log import TableLog
from .restore import RESTORE_OPERATION, restore_target_of
from .restored_version import logical_files

#: how many commits back from the latest the pair's commit is looked for
DEFAULT_SEARCH_DEPTH = 1000

_RESTORE = f'"{RESTORE_OPERATION}"'.encode()
_TXN = b'"txn"'
_REMOVE = b'"remove"'

#: a logical file: (canonical log path, deletion vector unique id), Delta Spark's key in Action Reconciliation
Key = tuple[str, "str | None"]


@dataclass(frozen=True)
class PairUndone:
    """The pair's commit (``version``: None when metadata cleanup deleted it) and the RESTORE that undid it
    (``restore_version``, to ``restored_version``: None when it records no version). ``undecided``: whether that
    RESTORE undid it cannot be told (see the module docstring); ``app_version``: the pair's version asked about
    (the recorded one when the skip rests on it)."""

    version: int | None
    restore_version: int
    restored_version: int | None
    undecided: bool = field(default=False, kw_only=True)
    app_version: int | None = field(default=None, compare=False, kw_only=True)


@dataclass(frozen=True)
class _Restore:
    """A RESTORE after the pair: its version, its recorded target version (None: none recorded), and the
    logical files (:data:`Key`) it removed (``dataChange``) and added (read only when no target is recorded)."""

    version: int
    target: int | None
    removed: frozenset[Key] = frozenset()
    added: frozenset[Key] = frozenset()


@dataclass(frozen=True)
class _PairFiles:
    """The logical files of the pair's commit as the table's later life carried them: ``carriers``, the files
    it added and those a ``dataChange=false`` rewrite (OPTIMIZE, a DV purge) of a carrier wrote (the same rows);
    ``descendants``, the files a data-changing rewrite (DELETE, UPDATE, MERGE, an overwrite) of a carrier or
    descendant wrote (perhaps some of its rows); ``removed``, the files the pair's commit removed."""

    carriers: frozenset[Key]
    descendants: frozenset[Key] = frozenset()
    removed: frozenset[Key] = frozenset()


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
    rewrites: list[tuple[bytes, str]] = []               # commits with removes after a RESTORE's, newest first
    for v in range(latest, max(-1, latest - max_commits), -1):
        lf = listing.commits.get(v)
        blob = None
        if lf is not None:
            try:
                blob = read_commit_file(table.storage, lf)
            except VersionNotFoundError:
                blob = None
        if blob is None:                                  # cleaned up (or a checkpoint-only past)
            return False, _cleaned_up(table, listing, app_id, app_version, restores[::-1], v + 1, latest)
        restore = False
        if _RESTORE in blob:
            info = commit_info_of(blob) or {}
            if info.get("operation") == RESTORE_OPERATION:
                restores.append(_restore_of(table, v, blob, lf.path, info.get("operationParameters")))
                restore = True
        if _TXN in blob:
            files = _pair_commit_files(blob, lf.path, app_id, app_version)
            if files is not None:
                if not restores:
                    return True, None
                return True, _undone(table, v, _followed(files, rewrites[::-1]), restores[::-1], app_version)
        if restores and not restore and _REMOVE in blob:  # a rewrite before a RESTORE: may carry the rows on
            rewrites.append((blob, lf.path))
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
        found_recorded, undone_recorded = _search(table, app_id, recorded, max_commits, None)
        if found_recorded or undone is None:
            undone = undone_recorded
    if undone is None:
        return
    top = max(app_version, recorded if recorded is not None else app_version)
    rests = ("" if undone.app_version == app_version else
             f" (no commit holds txnVersion={app_version}: the skip rests on the recorded txnVersion={top})")
    if undone.undecided:
        raise PairRestoreUndecidedError(
            f"{table.uri} records txnAppId={app_id!r} txnVersion={top}, so this write (txnVersion={app_version}) "
            f"would be skipped{rests}, but {_why_undecided(undone, f'txnVersion={undone.app_version}')}. Nothing "
            f"was written. Check: compare the table's rows with that commit's ({_where(undone)}). Rows there: mark "
            f"this task successful. Rows gone: re-run with a higher {version_parameter} (more than {top}: a "
            "version up to the recorded one counts as committed)",
            version=undone.version, restore_version=undone.restore_version, restored_version=None)
    target = ("a version before it: the RESTORE removed the files it added" if undone.restored_version is None
              else f"version {undone.restored_version}")
    whose = "the run's commit" if undone.app_version == app_version else f"the commit of txnVersion={top}"
    raise PairUndoneByRestoreError(
        f"{table.uri} records txnAppId={app_id!r} txnVersion={top}, so this write (txnVersion={app_version}) would "
        f"be skipped{rests}, but {whose} {_at(undone)} was undone by the RESTORE at version "
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
            f"but {_why_undecided(undone, f'txn version {position}')}. Nothing was read or written. Check the "
            f"output's rows against that commit ({_where(undone)}); then run the consumer under another app_id with "
            "the initial_version the output's data holds",
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
        f"input's changes up to version {position} processed), but its commit {_at(undone)} was "
        f"undone by the RESTORE at version {undone.restore_version} (to {target}): {holds}. Taking the position "
        "would skip the restored-away changes for good, so nothing was read or written. A RESTORE keeps the "
        f"table's txn records, so {app_id!r} keeps this position (and Delta Spark would skip a write recording "
        f"txnVersion {position} or lower). To process those changes again, run the consumer under another "
        f"app_id with {restart}; to leave them out for good, another app_id with initial_version={position + 1}",
        version=undone.version, restore_version=undone.restore_version, restored_version=undone.restored_version,
        app_id=app_id, position=position, restart_from=undone.restart_from)


def _why_undecided(undone: PairUndone, pair: str) -> str:
    """Why whether the RESTORE undid the commit holding ``pair`` cannot be told (the undecided messages)."""
    if undone.version is None:
        target = ("records no version" if undone.restored_version is None
                  else f"went back to version {undone.restored_version}")
        return (f"the commit holding {pair} is no longer in the log (metadata cleanup deleted it), and the RESTORE "
                f"at version {undone.restore_version}, which {target}, may have gone back to before it: whether "
                "that commit's rows are still in the table cannot be told from the log")
    return (f"the RESTORE at version {undone.restore_version}, which records no version, came after the commit at "
            f"version {undone.version} holding {pair}, and what it did does not tell whether that commit's rows are "
            "still in the table (no file carrying them is live, none was removed or added back by the RESTORE, or "
            "a DELETE / UPDATE / MERGE rewrote them)")


def _at(undone: PairUndone) -> str:
    """Where the commit holding the pair is."""
    return ("(no longer in the log: metadata cleanup deleted it)" if undone.version is None
            else f"at version {undone.version}")


def _where(undone: PairUndone) -> str:
    """Where the user finds the commit's rows to compare."""
    if undone.version is None:
        return "the run's input, or a copy of the table from before the RESTOREs"
    return f"DESCRIBE HISTORY, version {undone.version}"


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


def _key(action: dict[str, Any]) -> Key:
    """A file action's logical file: (canonical log path, DV unique id)."""
    dv = action.get("deletionVector")
    return canonical_log_path(action["path"]), dv_unique_id(dv if isinstance(dv, dict) else None)


def _file_actions(blob: bytes, path: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
    """A commit's ``txn``, ``add`` and ``remove`` actions (those with a path)."""
    txns: list[dict[str, Any]] = []
    adds: list[dict[str, Any]] = []
    removes: list[dict[str, Any]] = []
    for action in parse_json_lines(blob, path):
        if not isinstance(action, dict):
            continue
        t, a, r = action.get("txn"), action.get("add"), action.get("remove")
        if isinstance(t, dict):
            txns.append(t)
        elif isinstance(a, dict) and isinstance(a.get("path"), str):
            adds.append(a)
        elif isinstance(r, dict) and isinstance(r.get("path"), str):
            removes.append(r)
    return txns, adds, removes


def _restore_of(table: TableLog, version: int, blob: bytes, path: str, params: Any) -> _Restore:
    """A RESTORE commit: its recorded target version when it records one (a number: exact), else the logical
    files it removed and added (its timestamp is not read: see the module docstring)."""
    recorded = params.get("version") if isinstance(params, dict) else None
    if recorded is not None:
        target = restore_target_of(table, {"version": recorded})
        if target is not None:
            return _Restore(version, target)
    _, adds, removes = _file_actions(blob, path)
    return _Restore(version, None, frozenset(_key(r) for r in removes if r.get("dataChange") is not False),
                    frozenset(_key(a) for a in adds))


def _live_keys(table: TableLog, version: int) -> frozenset[Key]:
    """The logical files live at ``version``."""
    files = table.snapshot(version=version).files()
    if LOG_PATH_COLUMN in files.column_names:
        return frozenset(logical_files(files, LOG_PATH_COLUMN))
    return frozenset((canonical_log_path(encode_path(p)), d) for p, d in logical_files(files))


def _followed(files: _PairFiles, rewrites: list[tuple[bytes, str]]) -> _PairFiles:
    """The pair commit's files followed through the commits after it that removed files (oldest first, RESTOREs
    not among them): a ``dataChange=false`` rewrite of a carrier carries its rows on in the files it wrote; any
    other rewrite of a carrier or descendant writes descendants."""
    carriers, descendants = set(files.carriers), set()
    for blob, path in rewrites:
        _, adds, removes = _file_actions(blob, path)
        quiet = {_key(r) for r in removes if r.get("dataChange") is False}
        loud = {_key(r) for r in removes if r.get("dataChange") is not False}
        written = {_key(a) for a in adds}
        if not quiet.isdisjoint(carriers) and not loud and all(a.get("dataChange") is False for a in adds):
            carriers |= written                           # the same rows, rewritten (OPTIMIZE, a DV purge)
        elif not (quiet | loud).isdisjoint(carriers | descendants):
            descendants |= written
    return _PairFiles(frozenset(carriers), frozenset(descendants), files.removed)


def _undone(table: TableLog, version: int, files: _PairFiles, restores: list[_Restore],
            app_version: int) -> PairUndone | None:
    """Whether the commit at ``version`` (its files followed: ``files``) is live after ``restores`` (oldest first),
    by the rules above: the RESTORE that left it undone (``undecided`` when that cannot be told), or None when it
    is live at the latest version."""
    carriers, descendants = files.carriers, files.descendants

    def judge(restore: _Restore, before: bool | None, state_at: Any) -> bool | None:
        if restore.target is not None:
            return False if restore.target < version else state_at(restore.target)
        if not carriers.isdisjoint(restore.added):
            return True                                   # a file carrying its rows added (back): its target holds
        if not (carriers.isdisjoint(restore.removed) and files.removed.isdisjoint(restore.added)):
            # it removed a file carrying the rows (none added back) or added back one the commit removed: its
            # target is from before the commit, unless a data-changing rewrite's files carry some rows there
            if descendants and not descendants.isdisjoint(restore.added | _live_keys(table, restore.version)):
                return _UNKNOWN
            return False
        if not restore.added and not restore.removed:
            return before                                 # an empty RESTORE: the files as they were
        live = _live_keys(table, restore.version)
        if not carriers.isdisjoint(live):
            return True                                   # a file carrying its rows live and kept: its target holds it
        if before is False and carriers and descendants.isdisjoint(live):
            return False                                  # undone, and no file that carried its rows came back
        return _UNKNOWN

    return _judged(restores, judge, version, app_version)


def _judged(restores: list[_Restore], judge: Any, version: int | None, app_version: int,
            initial: bool | None = True) -> PairUndone | None:
    """The pair's state after ``restores`` (oldest first), each judged by ``judge(restore, state before it,
    state_at)``: the RESTORE that left it undone or unknown, or None when it is live at the end."""
    after: list[tuple[int, bool | None]] = []             # (RESTORE version, live after it), ascending

    def state_at(v: int) -> bool | None:
        state: bool | None = initial
        for r, live in after:
            if r > v:
                break
            state = live
        return state
    undoing: _Restore | None = None
    for restore in restores:
        before = state_at(restore.version - 1)
        live = judge(restore, before, state_at)
        after.append((restore.version, live))
        if live is True:
            undoing = None
        elif undoing is None or live is not before:       # the RESTORE that undid it (or left it unknown)
            undoing = restore
    final = state_at(restores[-1].version) if restores else initial
    if final is True or undoing is None:
        return None
    return PairUndone(version, undoing.version, undoing.target, undecided=final is _UNKNOWN,
                      app_version=app_version)


def _cleaned_up(table: TableLog, listing: Any, app_id: str, app_version: int, restores: list[_Restore],
                earliest: int, latest: int) -> PairUndone | None:
    """The pair's commit is not in the log (metadata cleanup deleted it, with everything before ``earliest``),
    ``restores`` (oldest first) are the RESTOREs after it. Whether one of them went back before the commit:

    - one recording a version at or after ``earliest`` went back to a version after the commit: as the pair
      stood there (as judged so far; not known undone before the log begins);
    - one recording a version before ``earliest``: undone when that version is readable (a checkpoint) and
      records the pair's ``txn`` below ``app_version`` (the commit came after it), else it cannot be told;
    - one recording no version: after the commit when its files afterwards hold one a commit of the readable
      log (not a RESTORE) wrote, so its target is in the readable log, after the commit; else it cannot be told.

    None when the table does not record the pair (nothing would be skipped) or no RESTORE is in question."""
    if not restores:
        return None
    try:
        recorded = table.snapshot(version=latest).transaction_version(app_id)
    except DeltaError:
        return None
    if recorded is None or recorded < app_version:
        return None
    written: set[Key] | None = None

    def judge(restore: _Restore, before: bool | None, state_at: Any) -> bool | None:
        nonlocal written
        if restore.target is not None:
            if restore.target >= earliest:
                return state_at(restore.target)
            try:
                held = table.snapshot(version=restore.target).transaction_version(app_id)
            except DeltaError:
                return _UNKNOWN
            return False if held is None or held < app_version else _UNKNOWN
        if not restore.added and not restore.removed:
            return before
        if written is None:
            written = _written_between(table, listing, earliest, restores[-1].version)
        if not written.isdisjoint(_live_keys(table, restore.version)):
            # its target is in the readable log, after the commit: live there unless a RESTORE before undid it
            earlier = [state_at(r.version) for r in restores if r.version < restore.version]
            return True if all(live is True for live in earlier) else _UNKNOWN
        return _UNKNOWN

    return _judged(restores, judge, None, app_version)


def _written_between(table: TableLog, listing: Any, first: int, last: int) -> set[Key]:
    """The logical files the commits ``first`` .. ``last`` other than RESTOREs added with ``dataChange`` (new
    files: a file's logical key exists only from the commit that wrote it; a ``dataChange=false`` add may
    re-add an older file, as Delta Spark's statistics recompute and row-tracking backfill do)."""
    out: set[Key] = set()
    for v in range(first, last + 1):
        lf = listing.commits.get(v)
        if lf is None:
            continue
        try:
            blob = read_commit_file(table.storage, lf)
        except VersionNotFoundError:
            continue
        if _RESTORE in blob and (commit_info_of(blob) or {}).get("operation") == RESTORE_OPERATION:
            continue
        out |= {_key(a) for a in _file_actions(blob, lf.path)[1] if a.get("dataChange") is not False}
    return out


def _pair_commit_files(blob: bytes, path: str, app_id: str, app_version: int) -> _PairFiles | None:
    """The logical files a commit holding ``txn(app_id, app_version)`` added and removed, or None when it does not
    hold the pair."""
    txns, adds, removes = _file_actions(blob, path)
    if not any(t.get("appId") == app_id and t.get("version") == app_version for t in txns):
        return None
    return _PairFiles(frozenset(_key(a) for a in adds),
                      removed=frozenset(_key(r) for r in removes if r.get("dataChange") is not False))
