"""Commit timestamps, time travel by timestamp, and commit history.

Commit timestamps follow the in-commit-timestamps RFC: from the enablement
version on, a commit's time is its ``commitInfo.inCommitTimestamp``; before it
(or on tables without the feature), the commit file's modification time,
monotonized as Delta Spark does: a time not after the previous commit's becomes
the previous one + 1 ms.

Resolving a timestamp to a version: a time at or after the enablement timestamp
is searched only among ICT versions, by binary search reading O(log n) commit
files; an earlier time only among the versions before enablement, using the
listing's mtimes (no file reads). As in Delta Spark, a time before the earliest
version that can be reconstructed is an error. A time after the latest commit
is an error too by default (Delta Spark's rule: the answer could still change
as commits land); ``allow_after_latest=True`` returns the latest version instead,
which is what a scheduler resolving "the table as of the end of my interval"
usually wants.
"""
from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from . import ict
from .actions import Metadata, Protocol
from .errors import CorruptLogError, TimestampOutOfRangeError
from .segment import LogListing, read_commit_file
from .timeutil import format_ms, to_epoch_ms

if TYPE_CHECKING:  # pragma: no cover
    from .table import DeltaTable

_COMMIT_INFO_LINE = re.compile(rb'^\{\s*"commitInfo"\s*:.*$', re.M)


def ict_enabled(protocol: Protocol, metadata: Metadata) -> bool:
    return ict.is_enabled(protocol, metadata)


def ict_enablement(protocol: Protocol, metadata: Metadata) -> tuple[int, int | None] | None:
    """(enablement version, enablement timestamp) when ICT is on; (0, None) if on since creation."""
    if not ict.is_enabled(protocol, metadata):
        return None
    conf = metadata.configuration
    v = conf.get(ict.ENABLEMENT_VERSION_PROPERTY)
    t = conf.get(ict.ENABLEMENT_TIMESTAMP_PROPERTY)
    if v is None or t is None:
        return (0, None)
    return (int(v), int(t))


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


def _commit_info(data: bytes) -> dict[str, Any] | None:
    m = _COMMIT_INFO_LINE.search(data)
    if not m:
        return None
    try:
        return json.loads(m.group(0))["commitInfo"]
    except (ValueError, KeyError):
        return None


def read_ict(table: "DeltaTable", listing: LogListing, version: int, blob: bytes | None = None) -> int:
    """The in-commit timestamp of ``version`` (the owner's record for un-backfilled commits)."""
    owner_ts = listing.owner_timestamps
    if version in owner_ts and owner_ts[version] is not None:
        return int(owner_ts[version])
    lf = listing.commits.get(version)
    if blob is None:
        if lf is None:
            raise CorruptLogError(f"{table.uri}: commit {version} is needed for its in-commit timestamp "
                                  "but is not in the log")
        blob = _first_line_or_all(table, lf)
    info = _commit_info(blob)
    if (info is None or info.get("inCommitTimestamp") is None) and lf is not None:
        info = _commit_info(read_commit_file(table, lf))
    if info is None or info.get("inCommitTimestamp") is None:
        raise CorruptLogError(f"{table.uri}: commit {version} has no commitInfo.inCommitTimestamp although "
                              "in-commit timestamps are enabled at that version")
    return int(info["inCommitTimestamp"])


def _first_line_or_all(table: "DeltaTable", lf) -> bytes:
    """ICT commits start with commitInfo: the first line is usually all we need to read."""
    if table.storage.is_local:
        try:
            with open(lf.path, "rb") as f:
                return f.readline()
        except FileNotFoundError:
            pass
    return read_commit_file(table, lf)


def commit_timestamp(table: "DeltaTable", version: int, protocol: Protocol, metadata: Metadata,
                     listing: LogListing, blob: bytes | None = None) -> int:
    en = ict_enablement(protocol, metadata)
    if en is not None and version >= en[0]:
        return read_ict(table, listing, version, blob)
    ts = file_timestamps(listing).get(version)
    if ts is None:
        raise CorruptLogError(f"{table.uri}: version {version} is not in the log listing")
    return ts


def _latest(table: "DeltaTable") -> tuple[Protocol, Metadata, LogListing]:
    """Protocol, metadata and listing of the latest version, through the table's cached
    snapshot: refreshed incrementally, and checked for readability like any snapshot."""
    snap = table.snapshot()
    return snap.protocol, snap.metadata, snap.segment.listing


def version_at(table: "DeltaTable", timestamp: Any, allow_after_latest: bool = False) -> int:
    """The newest version whose commit timestamp is at or before ``timestamp``."""
    ts = to_epoch_ms(timestamp)
    protocol, metadata, listing = _latest(table)
    latest = listing.latest
    earliest = listing.earliest_recreatable()
    if earliest is None:
        earliest = latest
    en = ict_enablement(protocol, metadata)
    if en is not None and (en[1] is None or ts >= en[1]):
        lo = max(en[0], earliest)
        found = _search_ict(table, listing, lo, latest, ts)
    else:
        hi = latest if en is None else en[0] - 1
        fts = file_timestamps(listing)
        found = None
        for v in range(hi, earliest - 1, -1):  # listing mtimes: no I/O, search from the newest
            t = fts.get(v)
            if t is not None and t <= ts:
                found = v
                break
    if found is None:
        first_ts = commit_timestamp(table, earliest, protocol, metadata, listing)
        raise TimestampOutOfRangeError(
            f"timestamp {format_ms(ts)} is before the earliest version available in {table.uri} "
            f"(version {earliest} at {format_ms(first_ts)})", timestamp=ts, earliest=first_ts)
    if found == latest and not allow_after_latest:
        last_ts = commit_timestamp(table, latest, protocol, metadata, listing)
        if ts > last_ts:
            raise TimestampOutOfRangeError(
                f"timestamp {format_ms(ts)} is after the latest commit of {table.uri} (version {latest} "
                f"at {format_ms(last_ts)}); pass allow_after_latest=True to get the latest version",
                timestamp=ts, latest=last_ts)
    return found


def _search_ict(table: "DeltaTable", listing: LogListing, lo: int, hi: int, ts: int) -> int | None:
    """Greatest v in [lo, hi] with ICT(v) <= ts, by binary search (ICTs increase with v)."""
    found = None
    while lo <= hi:
        mid = (lo + hi) // 2
        if read_ict(table, listing, mid) <= ts:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found


def history(table: "DeltaTable", limit: int | None = None) -> list[dict[str, Any]]:
    """Commits newest first: version, commit timestamp (ICT-aware) and the commitInfo fields.

    With ``limit`` only that many commit files are read. The history ends at the
    oldest commit file still present (older ones were cleaned up).
    """
    if limit is not None and limit <= 0:
        return []
    protocol, metadata, listing = _latest(table)
    latest = listing.latest
    out: list[dict[str, Any]] = []
    v = latest
    while v is not None and v >= 0 and v in listing.commits and (limit is None or len(out) < limit):
        blob = read_commit_file(table, listing.commits[v])
        info = _commit_info(blob) or {}
        entry = dict(info)
        entry["version"] = v
        entry["timestamp"] = commit_timestamp(table, v, protocol, metadata, listing, blob=blob)
        out.append(entry)
        v -= 1
    return out
