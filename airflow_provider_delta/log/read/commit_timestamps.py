"""The timestamp of a commit: its in-commit timestamp, or its file's monotonized mtime.

Commit timestamps follow the in-commit-timestamps RFC: from the enablement
version on, a commit's time is its ``commitInfo.inCommitTimestamp`` (for
un-backfilled commits, the commit source's record of it); before it (or on tables
without the feature), the commit file's modification time, monotonized as Delta
Spark does: a time not after the previous commit's becomes the previous one + 1 ms.
"""
from __future__ import annotations

from typing import Any

from ..base import ict
from ..base.actions import Metadata, Protocol
from .action_lines import first_action
from .commit_reader import read_commit_file
from ..base.errors import CorruptLogError
from .listing import LogListing
from ..base.names import LogFile
from ..base.storage import Storage



def file_timestamps(listing: LogListing) -> dict[int, int]:
    """Monotonized modification times of every listed version (commit file, else checkpoint)."""
    if listing.file_ts is not None:
        return listing.file_ts
    out: dict[int, int] = {}
    prev = None
    versions = sorted(set(listing.commits) | set(listing.checkpoints))
    for v in versions:
        f = listing.commits.get(v)
        ts = f.mtime_ms if f is not None else max(c.mtime_ms for c in listing.checkpoints[v])
        if prev is not None and ts <= prev:
            ts = prev + 1
        out[v] = ts
        prev = ts
    listing.file_ts = out
    return out


def commit_info_of(data: bytes, unwrapped: bool = False) -> dict[str, Any] | None:
    """The ``commitInfo`` of a commit file's bytes (None when it has none). ``unwrapped``: a line that is
    another action by Delta Spark's ``SingleAction.unwrap`` order does not count (history reads commits
    so, ``DeltaHistoryManager.getCommitInfoOpt``); without it, any line with a non-null ``commitInfo``
    counts, as Delta Spark's snapshot reconstruction reads a commit's in-commit timestamp."""
    info = first_action(data, "commitInfo", unwrapped)
    return info if isinstance(info, dict) else None


def read_ict(storage: Storage, listing: LogListing, version: int, blob: bytes | None = None) -> int:
    """The in-commit timestamp of ``version`` (the owner's record for un-backfilled commits)."""
    owner_ts = listing.owner_timestamps
    if version in owner_ts and owner_ts[version] is not None:
        return int(owner_ts[version])
    lf = listing.commits.get(version)
    if blob is None:
        if lf is None:
            raise CorruptLogError(f"{storage.uri}: commit {version} is needed for its in-commit timestamp "
                                  "but is not in the log")
        blob = _first_line_or_all(storage, lf)
    info = commit_info_of(blob)
    if (info is None or info.get("inCommitTimestamp") is None) and lf is not None:
        info = commit_info_of(read_commit_file(storage, lf))
    if info is None or info.get("inCommitTimestamp") is None:
        raise CorruptLogError(f"{storage.uri}: commit {version} has no commitInfo.inCommitTimestamp although "
                              "in-commit timestamps are enabled at that version")
    return int(info["inCommitTimestamp"])


def _first_line_or_all(storage: Storage, lf: LogFile) -> bytes:
    """ICT commits start with commitInfo: the first line is usually all we need to read."""
    if storage.is_local:
        try:
            with open(lf.path, "rb") as f:
                return f.readline()
        except FileNotFoundError:
            pass
    return read_commit_file(storage, lf)


def commit_timestamp(storage: Storage, version: int, protocol: Protocol, metadata: Metadata,
                     listing: LogListing, blob: bytes | None = None) -> int:
    """Epoch ms of commit ``version`` under the table's protocol and metadata (ICT-aware)."""
    en = ict.enablement(protocol, metadata)
    if en is not None and version >= en[0]:
        return read_ict(storage, listing, version, blob)
    ts = file_timestamps(listing).get(version)
    if ts is None:
        raise CorruptLogError(f"{storage.uri}: version {version} is not in the log listing")
    return ts


def timestamp_from_actions(version: int, actions: list[dict[str, Any]], listing: LogListing) -> int | None:
    """A commit's timestamp from what a reader already holds: no extra file is read.

    A commit written with in-commit timestamps carries its time (``inCommitTimestamp``;
    the commit source's record for un-backfilled commits); any other commit's time is
    its file's modification time, monotonized over the listing.
    """
    ts = ict.timestamp_of(actions)
    if ts is not None:
        return ts
    if listing.owner_timestamps.get(version) is not None:
        return int(listing.owner_timestamps[version])
    return file_timestamps(listing).get(version)
