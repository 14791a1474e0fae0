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
  (it was there before our put; equal times count, for stores with whole-second times). Timestamps
  alone are not evidence enough: a writer on a skewed clock builds on our commit with an older file
  time, but ``v - 1`` is still there then. The committer then withdraws its commit file: below the
  checkpoint no reader replays it, nobody built on it (the versions above existed before it), and
  left in place its file time would enter the monotonized timestamps that time travel by timestamp
  uses (ours, Delta Spark's and delta-rs', which then looks for the commits cleanup removed).

Only file-system commits need this: a commit owner or catalog ratifies versions itself.
"""
from __future__ import annotations

from ..base.errors import InvalidCommittedVersionError
from ..base.names import LOG_DIR, commit_path, parse_log_name
from ..base.storage import Storage
from ..read.listing import list_backfilled


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


def landed_below_newer_log(storage: Storage, version: int) -> int | None:
    """After our put of ``version``: the version of a checkpoint above it written no later than our
    commit file, when ``version - 1``'s commit is gone too (the state a racing cleanup leaves), or None.

    The common case costs one stat: ``v - 1``'s commit file is still there, so no cleanup freed ``v``.
    """
    if version == 0 or storage.file_info(commit_path(version - 1)) is not None:
        return None
    own = storage.file_info(commit_path(version))
    if own is None:
        return None
    entries = storage.list_dir_from(LOG_DIR, f"{version:020d}")
    if entries is None:
        entries = storage.list_dir(LOG_DIR)
    older = [f.version for f in (parse_log_name(e.name, e.path, e.size, e.mtime_ms) for e in entries)
             if f is not None and f.kind == "checkpoint" and f.version > version and f.mtime_ms <= own.mtime_ms]
    return max(older) if older else None
