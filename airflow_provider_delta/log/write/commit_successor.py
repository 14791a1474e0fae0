"""A commit lands only as the successor of the log it follows: never in a hole left by cleanup.

Put-if-absent only says that ``<v>.json`` did not exist. After metadata cleanup deleted the
commits below a newer checkpoint, a transaction still pinned to an old read version finds its
next version free and its put succeeds - into a gap no reader ever lists again (readers start
from the newest checkpoint). Delta Spark refuses such a commit after the fact: the snapshot it
loads after committing does not end at the attempted version, and it fails with
``DELTA_INVALID_COMMITTED_VERSION`` (``OptimisticTransaction.updateAndCheckpoint``). We check
before the put (nothing is written) and once more after it, for a cleanup racing the put:

* before: version ``v - 1`` must exist, as a commit file or as a complete checkpoint with nothing
  newer in the log (:func:`check_commit_follows_log`); after a lost race the winners were read by name, and
  one may be another writer's commit left in a hole in place of the real one, which conflict checking then
  never saw, so the log from the read version is listed too (:func:`check_caught_up_log`);
* after: the log from ``v`` is listed (the whole cost on the common path). Our commit may lie in a hole only if
  a checkpoint ``C`` above ``v`` exists and a commit between the last checkpoint at or below ``v`` and ``C``
  (other than ours) is gone (:func:`hole_possible`): whatever order a cleaner deletes in, it leaves a gap on
  one side of ``v`` or the other; with every commit there, committed. Otherwise every checkpoint above ``v``
  is judged by its content, whatever its file time (clocks skew either way) (:func:`_judge`,
  :class:`CommitEvidence`): built on our commit if it names a file new to the table that we added (written
  under a new unique name by this writer, or a path the read snapshot shows unknown - not a file added back
  after a remove, which a checkpoint written before our put names as a tombstone), or holds our remove as a
  tombstone with our remove's very ``deletionTimestamp``; not built on it if a commit between ours and it is
  gone while ours is there (only commits older than the log retention are cleaned up, and one built on ours is
  newer), or (tombstones kept long enough) it names none of our new files while every commit between ours and
  it was read and none removes one, or holds a file we removed as live with no commit after ours adding it
  back, or not at all. Evidence on both sides is undecided. Only a proven hole is withdrawn: below the
  checkpoint no reader replays it, and left in place its file time would enter the monotonized timestamps
  that time travel by timestamp uses (ours, Delta Spark's and delta-rs', which then looks for the commits
  cleanup removed). Anything unproven leaves the commit file in place and the committer reports
  :class:`CommitOutcomeUnknownError`: withdrawing a live commit would lose it. :func:`commit_is_read` tells a
  caller resolving an outcome later whether a commit file found by name is one snapshots read.

Only file-system commits need this: a commit owner or catalog ratifies versions itself.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Callable, Mapping

import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.path_spelling import LOG_PATH_COLUMN, canonical_log_path
from ..base.errors import InvalidCommittedVersionError
from ..base.intervals import deleted_file_retention_ms, log_retention_ms
from ..base.names import LOG_DIR, commit_path
from ..base.storage import Storage
from ..read.checkpoint_reader import read_checkpoint
from ..read.listing import LogListing, list_backfilled, sorted_listing


def check_caught_up_log(storage: Storage, read_version: int, version: int) -> None:
    """Raise :class:`InvalidCommittedVersionError` unless the winners a writer caught up through after a lost race
    (``read_version + 1`` .. ``version - 1``, read by name and checked for conflicts) are the log's real commits.

    A winner read by name may be another writer's commit left in a hole (an undecided post-put check keeps its
    file) in place of the real one, which cleanup removed below a newer checkpoint: conflict checking needs
    every winning commit, and a rebase onto that checkpoint is no conflict check (Delta Spark fails with
    ``DELTA_INVALID_COMMITTED_VERSION`` when it cannot read them). So the log from ``read_version`` is listed
    once: with a checkpoint above ``read_version``, the read version (as a commit or a complete checkpoint)
    and every commit up to that checkpoint must be there (:func:`hole_possible`'s rule); a checkpoint at or
    above ``version`` while ``version``'s commit is gone is a hole too (``version`` was committed and cleaned
    up). Only after a lost race; :func:`check_commit_follows_log` runs as well. A cleanup that removed the read
    version's commit (older than the log retention) after the read makes this refuse too: typed, and the
    operation redone on a fresh read then succeeds.
    """
    listing = _listing_from(storage, read_version)
    top = max((c for c in listing.checkpoints if c > read_version), default=None)
    if top is None:
        return
    gone = [u for u in range(read_version + 1, top + 1) if u not in listing.commits]
    if read_version not in listing.commits and listing.complete_checkpoint(read_version) is None:
        gone.insert(0, read_version)
    if gone:
        raise InvalidCommittedVersionError(
            f"cannot commit version {version} of {storage.uri}: checkpoint {top} is above version {read_version}, "
            f"which this transaction read, while commit {gone[0]} below it is gone: metadata cleanup removed "
            "commits this transaction must check for conflicts, and a commit found by name among them may be one "
            "left in a hole below that checkpoint (a commit that landed after the cleanup) rather than the one "
            "the table holds. Read the table again and redo the operation",
            version=version, current_version=listing.latest)


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
    #: True when nothing proves whether it was built on our commit: the commit file stays and the outcome
    #: is reported unknown (withdrawing a live commit loses it; only a proven hole is withdrawn)
    undecided: bool = False


@dataclass(frozen=True)
class CommitEvidence:
    """What of our commit a checkpoint built on it must show, as the log spells the paths."""

    #: files new to the table that our commit added - written by this writer under a new unique name, or
    #: named neither live nor removed (a tombstone) by the snapshot it read: a checkpoint written before our
    #: put cannot name them
    added: frozenset[str] = frozenset()
    #: files our commit removed (and did not add back) -> the ``deletionTimestamp`` of our remove
    removed: Mapping[str, int] = field(default_factory=dict)


#: the clocks of writers, stores and cleaners are taken to differ by less than this (an hour). A checkpoint
#: written after our put keeps a tombstone from about our commit's time if ``delta.deletedFileRetentionDuration``
#: is at least two margins; a commit written after ours (or with our remove's millisecond) is never older
#: than ``delta.logRetentionDuration``, so no cleanup removes it, if that is over three margins
CLOCK_MARGIN_MS = 3_600_000


def landed_below_newer_log(storage: Storage, version: int,
                           evidence: frozenset[str] | CommitEvidence | Callable[[], CommitEvidence] = frozenset()
                           ) -> NewerCheckpoint | None:
    """After our put of ``version``: a checkpoint above it that does not hold our commit, when the log around
    it is the state a racing cleanup leaves (:func:`hole_possible`), or None.

    ``evidence``: what of our commit to look for (a set: just the new files' paths; a callable is asked only
    once the log looks like a hole). Paths are spelled as the log spells them (encoded:
    :func:`~..base.path_spelling.log_spelling`, never the decoded ``AddFile.path``). The common case costs one
    listing from ``version``: no checkpoint above it, so no reader starts past it. Otherwise, when a commit that
    a hole needs gone is gone, every checkpoint above ``version`` is judged by :func:`_judge`, whatever its file
    time (clocks skew either way): one built on our commit keeps it (None), one proven without it is a hole,
    and nothing proven either way is undecided. With every commit there no hole is possible: committed.
    """
    if version == 0:
        return None
    listing = _listing_from(storage, version)
    if version not in listing.commits or not any(c > version for c in listing.checkpoints):
        return None
    listing = sorted_listing(storage.list_dir(LOG_DIR))
    if not hole_possible(listing, version):
        return None
    above = sorted((c for c in listing.checkpoints if c > version), reverse=True)
    if callable(evidence):
        evidence = evidence()
    elif not isinstance(evidence, CommitEvidence):
        evidence = CommitEvidence(added=frozenset(evidence))
    own_ms = listing.commits[version].mtime_ms
    verdicts = {v: _judge(storage, listing, version, own_ms, v, evidence) for v in above}
    built_on = [v for v, verdict in verdicts.items() if verdict is True]
    holes = [v for v, verdict in verdicts.items() if verdict is False]
    if built_on and not holes:
        return None
    if holes and not built_on:
        return NewerCheckpoint(max(holes))
    return NewerCheckpoint(above[0], undecided=True)     # no proof, or proofs that disagree: keep the commit


def hole_possible(listing: LogListing, version: int) -> bool:
    """Whether the commit of ``version`` may lie in a hole, from the whole log's listing: a checkpoint ``C`` above
    it exists and a commit between the last complete checkpoint ``B`` at or below it (or version 0) and ``C`` -
    other than ``version`` - is gone.

    A hole needs the commit another writer put at ``version`` removed by cleanup after ``C`` was written from
    it. With every commit from ``B`` to ``C`` there, nothing was removed around ``version``: whatever order a
    cleaner deletes in (delta-rs deletes concurrently; a failed delete leaves one behind), the state it leaves
    shows a gap on one side of ``version`` or the other. Left out: a cleaner that removed ``version`` alone.
    """
    top = max((c for c in listing.checkpoints if c > version), default=None)
    if top is None:
        return False
    base = max((c for c in listing.checkpoints if c <= version and listing.complete_checkpoint(c) is not None),
               default=None)
    low = 0 if base is None else base + 1
    return any(u not in listing.commits for u in range(low, top) if u != version)


def commit_is_read(storage: Storage, version: int) -> bool:
    """Whether a snapshot reads the commit file of ``version`` (found by name): no checkpoint above it, or no hole
    possible (:func:`hole_possible`). A commit left in place by an undecided hole check, or proven in a hole but
    not withdrawn, does not count. One listing of the log."""
    return not hole_possible(sorted_listing(storage.list_dir(LOG_DIR)), version)


def _listing_from(storage: Storage, version: int) -> LogListing:
    """The log's files from ``version`` on (the whole folder where the store cannot list from a name)."""
    entries = storage.list_dir_from(LOG_DIR, f"{version:020d}", scan_local=True)
    if entries is None:
        entries = storage.list_dir(LOG_DIR)
    return sorted_listing(entries)


def _judge(storage: Storage, listing: LogListing, version: int, own_ms: int, checkpoint: int,
           evidence: CommitEvidence) -> bool | None:
    """Whether the checkpoint of ``checkpoint`` was built on our commit ``version`` (True), provably not
    (False: our commit is in a hole), or not known (None).

    Built on it, whatever its file time says: it names a file new to the table that our commit added (as an
    add, or as a remove when a writer after us already replaced it), or a commit between ours and it removes
    such a file (a remove without ``deletionTimestamp`` leaves no tombstone in the checkpoint), or it holds our remove of a file as a
    tombstone - our remove's very ``deletionTimestamp`` (from within the clock margin of our commit file's
    time), no add of the path, and no commit between ours and the checkpoint that removes the path. A
    tombstone of our path that predates us is another writer's remove of the same file (it was live when we
    read): in a commit between ours and the checkpoint (all looked at), or in one cleanup removed, which was
    older than the log retention and so cannot carry our millisecond.

    Not built on it: a commit between ours and the checkpoint is gone while ours is there (cleanup deletes the
    oldest commits first, only those older than the log retention, and a commit built on ours is newer than
    ours); or, with tombstones kept long enough, the checkpoint names none of our new files (every commit
    between ours and it read, none removing one), or names a file
    we removed neither as a remove (ours would be kept) nor as an add that a commit after ours brought back
    (then the add is from before our remove: the checkpoint does not hold it).
    Anything else - a checkpoint still being written, retentions too short or unreadable, a re-added file,
    a tombstone of another millisecond, evidence on both sides (an add another writer in the hole may have
    added too, beside our remove shown undone) - proves nothing.
    """
    files = listing.complete_checkpoint(checkpoint)
    if files is None:
        return None
    content = read_checkpoint(storage, files, checkpoint, with_files=True)
    try:
        conf = (content.metadata or {}).get("configuration") or {}
        keeps_tombstones = deleted_file_retention_ms(conf) >= 2 * CLOCK_MARGIN_MS
        keeps_new_commits = log_retention_ms(conf) > 3 * CLOCK_MARGIN_MS
    except Exception:           # noqa: BLE001 - an unreadable retention: nothing is known to be kept
        keeps_tombstones = keeps_new_commits = False
    between = range(version + 1, checkpoint + 1)
    all_there = all(v in listing.commits for v in between)
    if keeps_new_commits and not all_there:
        return False
    adds, removes = _named_in(content.file_actions, evidence)
    ours = {p: ts for p, ts in evidence.removed.items() if abs(ts - own_ms) <= CLOCK_MARGIN_MS}
    later_adds = later_removes = None
    if (ours or evidence.added) and all_there:
        try:
            later_adds, later_removes = _paths_in_commits(storage, between)
        except Exception:       # noqa: BLE001 - a commit that cannot be read (gone, torn): no evidence from it
            pass
    # weigh both sides: one add that another writer's commit in the hole may have added too does not
    # outweigh our remove that the same checkpoint shows undone (proofs that disagree prove nothing)
    built_on = bool((adds | set(removes)) & evidence.added)
    if later_removes is not None and evidence.added & later_removes:
        built_on = True     # a commit after ours removes a file new to the table that we added
    if later_removes is not None and keeps_new_commits:
        if any(removes.get(p) == ts and p not in adds and p not in later_removes for p, ts in ours.items()):
            built_on = True
    hole = False
    if keeps_tombstones:
        if evidence.added and not built_on and later_removes is not None:
            # names none of our new files, and no commit between ours and it (all read) removes one - a
            # remove without deletionTimestamp is an expired tombstone at once and leaves no trace in it
            hole = True
        for p in ours:
            if p not in adds and p not in removes:
                hole = True     # neither add nor remove: one built on our commit would hold our tombstone
            elif p in adds and p not in removes and later_adds is not None and p not in later_adds:
                hole = True     # live, and no commit after ours added it back: the add is from before our remove
    if built_on != hole:
        return built_on
    return None


def _named_in(actions: pa.Table | None, evidence: CommitEvidence) -> tuple[set[str], dict[str, int | None]]:
    """Of our paths (matched under their own spelling and their canonical key): those the checkpoint holds
    as adds, and those it holds as removes with their ``deletionTimestamp``."""
    ours = set(evidence.added) | set(evidence.removed)
    if actions is None or not actions.num_rows or not ours:
        return set(), {}
    by_key: dict[str, set[str]] = {}
    for p in ours:
        by_key.setdefault(p, set()).add(p)
        by_key.setdefault(canonical_log_path(p), set()).add(p)
    # the column keys a file by its canonical path (Delta Spark's reconciliation key: 'd//x' is 'd/x'),
    # our paths are spelled as our commit wrote them: look for either spelling
    rows = ak.filter(actions, ak.is_in(actions.column(LOG_PATH_COLUMN), ab.array(sorted(by_key), pa.string())))
    adds: set[str] = set()
    removes: dict[str, int | None] = {}
    for key, is_add, ts in zip(rows.column(LOG_PATH_COLUMN).to_pylist(), rows.column("is_add").to_pylist(),
                               rows.column("deletion_timestamp").to_pylist()):
        for p in by_key[key]:
            if is_add:
                adds.add(p)
            else:
                removes[p] = ts
    return adds, removes


def _paths_in_commits(storage: Storage, versions: range) -> tuple[set[str], set[str]]:
    """The paths (log spellings and canonical keys) the commit files of ``versions`` add, and remove: the few
    commits between ours and a checkpoint, read only when a hole is suspected."""
    added: set[str] = set()
    removed: set[str] = set()
    for v in versions:
        for line in storage.read_bytes(commit_path(v)).splitlines():
            action = json.loads(line) if line.strip() else None
            if not isinstance(action, dict):
                continue
            for kind, into in (("add", added), ("remove", removed)):
                entry = action.get(kind)
                path = entry.get("path") if isinstance(entry, dict) else None
                if isinstance(path, str):
                    into.update((path, canonical_log_path(path)))
    return added, removed
