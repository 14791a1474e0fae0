"""Which files make up version v of a table: the log segment.

A snapshot is the newest complete checkpoint at or below v, plus the contiguous
commits after it up to v. This module chooses that checkpoint from a
:class:`~.listing.LogListing` (trusting ``_last_checkpoint`` only when the listing
confirms it, so a missing, empty, corrupt or stale hint just falls back to the
listing) and checks the commits are contiguous.

It knows nothing about the content of actions; replay lives in :mod:`.replay`.
Log compaction files (``x.y.compacted.json``) are listed but not used: the
protocol makes them optional, and ignoring them cannot change an answer.
"""
from __future__ import annotations


from ..base.errors import CorruptLogError, TableNotFoundError, VersionNotFoundError
from .listing import LogListing, read_last_checkpoint
from ..base.names import LOG_DIR, LogFile
from ..base.records import Record
from ..base.storage import Storage


class LogSegment(Record):
    """The files needed to build one version: at most one checkpoint plus the commits after it."""

    __slots__ = ("version", "checkpoint_version", "checkpoint_files", "commits", "listing")

    version: int
    checkpoint_version: int | None
    checkpoint_files: list[LogFile]
    commits: list[LogFile]
    listing: LogListing

    @property
    def first_commit_version(self) -> int:
        return self.commits[0].version if self.commits else self.version


def build_segment(storage: Storage, listing: LogListing, version: int | None = None) -> LogSegment:
    """The log segment of ``version`` (default: the latest), or a typed error saying why not."""
    latest = listing.latest
    if latest is None:
        if not listing.log_dir_exists:
            raise TableNotFoundError(f"no Delta table at {storage.uri}: there is no {LOG_DIR} directory")
        raise TableNotFoundError(f"no Delta table at {storage.uri}: {LOG_DIR} holds no commits or checkpoints")
    target = latest if version is None else int(version)
    if target < 0 or target > latest:
        earliest = listing.earliest_recreatable()
        raise VersionNotFoundError(
            f"version {target} does not exist in {storage.uri}: available versions are "
            f"{earliest if earliest is not None else '?'} to {latest}",
            version=target, earliest=earliest, latest=latest)
    hint = read_last_checkpoint(storage) if listing.checkpoints else None
    cp_files: list[LogFile] = []
    cp_version: int | None = None
    for v in sorted((v for v in listing.checkpoints if v <= target), reverse=True):
        if v in listing.unbackfilled:
            continue
        files = listing.complete_checkpoint(v, hint)
        if files:
            cp_files, cp_version = files, v
            break
    start = 0 if cp_version is None else cp_version + 1
    # work bounded by the files that exist: a stray file named for version 10**20 must not
    # make anyone walk the versions in between
    present = sorted(v for v in listing.commits if start <= v <= target)
    gap = first_gap(present, start, target)
    if gap is not None:
        first_missing, last_missing = gap
        if first_missing == start and cp_version is None and not any(v < start for v in listing.commits):
            earliest = listing.earliest_recreatable()
            raise VersionNotFoundError(
                f"cannot reconstruct version {target} of {storage.uri}: commit {first_missing} is gone "
                f"and no checkpoint at or below {target} exists (the earliest version that can be "
                f"read is {earliest if earliest is not None else 'none'}, the latest {latest})",
                version=target, earliest=earliest, latest=latest)
        found = sorted(v for v in listing.commits if start - 1 <= v <= target)
        shown = found if len(found) <= 20 else [*found[:10], "...", *found[-5:]]
        raise CorruptLogError(
            f"{storage.uri}: versions are not contiguous: ({', '.join(map(str, shown)).join('[]')}); missing "
            f"commit(s) {describe_range(first_missing, last_missing)} after "
            f"{'checkpoint ' + str(cp_version) if cp_version is not None else 'the start of the log'}")
    return LogSegment(target, cp_version, cp_files, [listing.commits[v] for v in present], listing)


def first_gap(present: list[int], start: int, end: int) -> tuple[int, int] | None:
    """The first run of versions in ``start..end`` missing from the sorted ``present``, as (first, last)."""
    expected = start
    for v in present:
        if v != expected:
            return expected, v - 1
        expected += 1
    return (expected, end) if expected <= end else None


def describe_range(first: int, last: int) -> str:
    return str(first) if first == last else f"{first} to {last} ({last - first + 1} versions)"
