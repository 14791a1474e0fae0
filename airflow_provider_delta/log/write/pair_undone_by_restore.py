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
- a RESTORE whose target cannot be resolved (unreadable parameters, a timestamp no longer in the
  log) counts as undoing it: nothing shows the rows are there.

Other commits after the pair (deletes, overwrites, OPTIMIZE) are the table's ordinary life, not an
undo of the pair's write: they do not count. A RESTORE is asked about by its recorded target only
(a version, or a timestamp resolved as :func:`~.restore.restore_target_of` does).

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
that pass are parsed. A pair whose commit is not found within that reach (or was cleaned up) is not
known to be undone: the skip stands.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..base.errors import DeltaError, PairUndoneByRestoreError, PositionUndoneByRestoreError, VersionNotFoundError
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
    None when its target cannot be resolved)."""

    version: int
    restore_version: int
    restored_version: int | None


def pair_undone_by_restore(table: TableLog, app_id: str, app_version: int,
                           max_commits: int = DEFAULT_SEARCH_DEPTH, at: int | None = None) -> PairUndone | None:
    """How the commit holding ``txn(app_id, app_version)`` was undone by a later RESTORE, or None (it was
    not, no RESTORE came after it, or the commit is not found among the newest ``max_commits``).

    ``at``: as of that version (default: the latest); only the commits up to it are read."""
    listing = table.listing()
    latest = listing.latest
    if latest is None:
        return None
    if at is not None:
        latest = min(latest, at)
    restores: list[tuple[int, int | None]] = []          # newest first: (RESTORE version, its target)
    for v in range(latest, max(-1, latest - max_commits), -1):
        lf = listing.commits.get(v)
        if lf is None:
            return None                                   # cleaned up (or a checkpoint-only past): not known
        try:
            blob = read_commit_file(table.storage, lf)
        except VersionNotFoundError:
            return None
        if _RESTORE in blob:
            info = commit_info_of(blob) or {}
            if info.get("operation") == RESTORE_OPERATION:
                restores.append((v, restore_target_of(table, info.get("operationParameters"))))
        if _TXN in blob and _holds_pair(blob, lf.path, app_id, app_version):
            return _undone(v, restores[::-1])
    return None


def check_pair_not_undone(table: TableLog, app_id: str, app_version: int,
                          max_commits: int = DEFAULT_SEARCH_DEPTH) -> None:
    """Raise :class:`PairUndoneByRestoreError` when a later RESTORE undid the commit holding the pair
    (see :func:`pair_undone_by_restore`): a skip would report a write whose rows are not in the table."""
    undone = pair_undone_by_restore(table, app_id, app_version, max_commits)
    if undone is None:
        return
    target = ("a version that cannot be resolved any more" if undone.restored_version is None
              else f"version {undone.restored_version}")
    raise PairUndoneByRestoreError(
        f"{table.uri} records txnAppId={app_id!r} txnVersion={app_version}, so this write would be skipped, but the "
        f"run's commit at version {undone.version} was undone by the RESTORE at version {undone.restore_version} "
        f"(to {target}): the table holds none of its rows. A RESTORE keeps the table's txn records, so Delta Spark "
        "would skip a write with the same pair too. Nothing was written. To write the data again, re-run with a "
        f"higher app_version (more than {app_version}: a version up to the recorded one counts as committed); "
        "if the rollback was meant to drop this run's data, mark the task successful instead",
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
    return PositionUndone(undone.version, undone.restore_version, undone.restored_version, position, held,
                          restart_from)


def check_position_not_undone(table: TableLog, app_id: str, position: int, initial_version: int = 0,
                              max_commits: int = DEFAULT_SEARCH_DEPTH) -> None:
    """Raise :class:`PositionUndoneByRestoreError` when a later RESTORE undid the commit recording the consumer's
    position: taking it would skip the restored-away changes for good."""
    undone = position_undone_by_restore(table, app_id, position, initial_version, max_commits)
    if undone is None:
        return
    target = ("a version that cannot be resolved any more" if undone.restored_version is None
              else f"version {undone.restored_version}")
    if undone.restart_from is None:
        holds = ("which input version the restored data holds cannot be read (a version no longer in the log): "
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


def _undone(version: int, restores: list[tuple[int, int | None]]) -> PairUndone | None:
    """Whether the commit at ``version`` is live after ``restores`` (oldest first), by the rules above:
    the RESTORE that left it undone, or None when it is live at the latest version."""
    live_after: list[tuple[int, bool]] = []               # (RESTORE version, live after it), ascending

    def live_at(v: int) -> bool:
        state = True
        for r, live in live_after:
            if r > v:
                break
            state = live
        return state
    undoing: tuple[int, int | None] | None = None
    for r, target in restores:
        live = target is not None and target >= version and live_at(target)
        live_after.append((r, live))
        if live:
            undoing = None
        elif undoing is None:                             # the RESTORE that undid it (not one that kept it undone)
            undoing = (r, target)
    return None if undoing is None else PairUndone(version, undoing[0], undoing[1])


def _holds_pair(blob: bytes, path: str, app_id: str, app_version: int) -> bool:
    for action in parse_json_lines(blob, path):
        t = action.get("txn") if isinstance(action, dict) else None
        if isinstance(t, dict) and t.get("appId") == app_id and t.get("version") == app_version:
            return True
    return False
