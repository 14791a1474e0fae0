"""A commit lands only as the successor of the log it follows: never in a hole left by cleanup.

Put-if-absent only says that ``<v>.json`` did not exist. After metadata cleanup deleted the
commits below a newer checkpoint, a transaction still pinned to an old read version finds its
next version free and its put succeeds - into a gap no reader ever lists again (readers start
from the newest checkpoint). Delta Spark refuses such a commit after the fact: the snapshot it
loads after committing does not end at the attempted version, and it fails with
``DELTA_INVALID_COMMITTED_VERSION`` (``OptimisticTransaction.updateAndCheckpoint``). We check
before the put (nothing is written) and once more after it, for a cleanup racing the put:

* before: version ``v - 1`` must exist, as a commit file or as a complete checkpoint with nothing
  newer in the log (:func:`check_commit_follows_log`);
* after: our commit fell into a hole only if both hold (:func:`landed_below_newer_log`): version
  ``v - 1``'s commit file is gone now (cleanup deletes commits oldest first, so the one that freed
  ``v`` removed ``v - 1`` before it), and a checkpoint above ``v`` is not newer than our commit file
  (it was there before our put; equal times count, for stores with whole-second times). A checkpoint
  that names a new file our commit added (as an add, or as a remove when it already replaced it) was
  built on our commit, whatever its time says: no checkpoint written before our put can name it. That
  covers a writer on a skewed clock (an older file time) on an idle table, where the cleanup after its
  checkpoint removes ``v - 1`` too (past log retention), and a writer that built on our commit within
  the same second (a tie). A tie that names none of them counts as a hole only when the checkpoint
  would have kept their tombstones (its ``delta.deletedFileRetentionDuration`` is an hour or more:
  with a shorter one a writer that compacted our file right after our commit leaves no trace of it);
  a tied commit that added no file, a checkpoint that may have dropped them, or one still being
  written cannot be told apart (:class:`CommitOutcomeUnknownError`, nothing withdrawn). A commit
  without new files whose checkpoint carries an older time is still judged by the times alone.
  The committer then withdraws its commit file: below the
  checkpoint no reader replays it, nobody built on it (the versions above existed before it), and
  left in place its file time would enter the monotonized timestamps that time travel by timestamp
  uses (ours, Delta Spark's and delta-rs', which then looks for the commits cleanup removed).

Only file-system commits need this: a commit owner or catalog ratifies versions itself.
"""
from __future__ import annotations

from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from ..base.path_spelling import LOG_PATH_COLUMN, canonical_log_path
from ..base.errors import InvalidCommittedVersionError
from ..base.intervals import deleted_file_retention_ms
from ..base.names import LOG_DIR, commit_path
from ..base.storage import Storage
from ..read.checkpoint_reader import read_checkpoint
from ..read.listing import list_backfilled, sorted_listing


def check_commit_follows_log(storage: Storage, version: int) -> None:
    """Raise :class:`InvalidCommittedVersionError` unless ``version`` would directly follow the log.

    The common case costs one stat (``v - 1``'s commit file). Without it, the log is listed:
    ``v - 1`` may survive as a complete checkpoint (its commit cleaned up) only if nothing newer
    exists; any other state means the commits after the transaction's read version were cleaned up.
    """
    if version == 0 or storage.file_info(commit_path(version - 1)) is not None:
        return
    listing = list_backfilled(storage)
    latest = listing.latest
    if latest == version - 1 and listing.complete_checkpoint(version - 1):
        return
    raise InvalidCommittedVersionError(
        f"cannot commit version {version} of {storage.uri}: version {version - 1} is no longer in the "
        f"log (newest version {latest}); metadata cleanup removed the commits after this transaction's "
        "read version, so a commit there would fall below a newer checkpoint where no reader sees it. "
        "Read the table again and redo the operation", version=version, current_version=latest)


@dataclass(frozen=True)
class NewerCheckpoint:
    """A checkpoint above our landed commit that points to a hole (see :func:`landed_below_newer_log`)."""

    version: int
    #: True when its file time equals our commit file's and our commit added no file to check it by:
    #: it may as well have been written right after our put by a writer that built on our commit
    undecided: bool = False


def landed_below_newer_log(storage: Storage, version: int,
                           added_paths: frozenset[str] = frozenset()) -> NewerCheckpoint | None:
    """After our put of ``version``: a checkpoint above it written before our commit file, when
    ``version - 1``'s commit is gone too (the state a racing cleanup leaves), or None.

    ``added_paths`` are the paths of the files our commit added as the log spells them (encoded:
    :func:`~..base.path_spelling.log_spelling`, never the decoded ``AddFile.path``); a
    checkpoint with our commit file's very time is taken as written before it only if it names
    none of them. The common case costs one stat: ``v - 1``'s commit file is still there, so no
    cleanup freed ``v``.
    """
    if version == 0 or storage.file_info(commit_path(version - 1)) is not None:
        return None
    own = storage.file_info(commit_path(version))
    if own is None:
        return None
    entries = storage.list_dir_from(LOG_DIR, f"{version:020d}")
    if entries is None:
        entries = storage.list_dir(LOG_DIR)
    listing = sorted_listing(entries)
    older = {v: max(f.mtime_ms for f in files) for v, files in listing.checkpoints.items()
             if v > version and min(f.mtime_ms for f in files) <= own.mtime_ms}
    named: dict[int, bool | None] = {}           # per checkpoint: names a file our commit added?
    for v in sorted(older, reverse=True):
        files = listing.complete_checkpoint(v)
        named[v] = None if files is None or not added_paths else _names_any(storage, files, v, added_paths)
        if named[v]:
            return None       # a checkpoint naming our new file was built on our commit, whatever its time says
    before = [v for v, mtime in older.items() if mtime < own.mtime_ms]
    if before:
        return NewerCheckpoint(max(before))
    for v in sorted(older, reverse=True):       # ties: written in our commit file's second
        if named[v] is None:    # no new file to tell by, parts still being written, or tombstones dropped
            return NewerCheckpoint(v, undecided=True)
    return NewerCheckpoint(max(older)) if older else None


#: a tied checkpoint that names none of our new files tells "written before our commit" only if it would
#: have kept the tombstone of one removed after it (a writer that built on our commit and compacted or
#: deleted our file): it keeps tombstones younger than ``delta.deletedFileRetentionDuration``, so that
#: retention must exceed the second of the tie with room for the remover's clock (an hour)
TOMBSTONE_RETENTION_MARGIN_MS = 3_600_000


def _names_any(storage: Storage, files: list, version: int, paths: frozenset[str]) -> bool | None:
    """Whether the checkpoint of ``version`` has an add or remove of one of ``paths``; None when it has
    none but its tombstone retention is too short for that to count (a remove of ours may have expired)."""
    content = read_checkpoint(storage, files, version, with_files=True)
    actions = content.file_actions
    # the column keys a file by its canonical path (Delta Spark's reconciliation key: 'd//x' is 'd/x'),
    # our paths are spelled as our commit wrote them: look for either spelling
    spellings = sorted(paths | {canonical_log_path(p) for p in paths})
    if actions is not None and actions.num_rows and pc.any(
            pc.is_in(actions.column(LOG_PATH_COLUMN), value_set=pa.array(spellings))).as_py():
        return True
    try:
        retention = deleted_file_retention_ms((content.metadata or {}).get("configuration") or {})
    except Exception:           # noqa: BLE001 - an unreadable retention: not known to keep tombstones
        return None
    return False if retention >= TOMBSTONE_RETENTION_MARGIN_MS else None
