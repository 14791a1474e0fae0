"""Time travel by timestamp, and commit history.

Resolving a timestamp to a version: a time at or after the in-commit-timestamp
enablement is searched only among ICT versions, by binary search reading O(log n)
commit files; an earlier time only among the versions before enablement, using
the listing's mtimes (no file reads). As in Delta Spark, a time before the
earliest version that can be reconstructed is an error. A time after the latest
commit is an error too by default (Delta Spark's rule: the answer could still
change as commits land); ``allow_after_latest=True`` returns the latest version
instead, which is what a scheduler resolving "the table as of the end of my
interval" usually wants.

Both functions take the table's latest :class:`~.snapshot.Snapshot`: its protocol
and metadata say whether in-commit timestamps apply, its listing says which
versions exist. How one commit's timestamp is found lives in :mod:`.commit_timestamps`.
"""
from __future__ import annotations

from itertools import islice
from typing import Any, Iterator

from ..base import ict
from .commit_reader import read_commit_file
from .commit_timestamps import commit_info_of, commit_timestamp, file_timestamps, read_ict
from ..base.errors import TimestampOutOfRangeError
from .listing import LogListing
from .snapshot import Snapshot
from ..base.storage import Storage
from ..base.timeutil import format_ms, to_epoch_ms


def version_at(latest: Snapshot, timestamp: Any, allow_after_latest: bool = False) -> int:
    """The newest version whose commit timestamp is at or before ``timestamp``."""
    ts = to_epoch_ms(timestamp)
    protocol, metadata, listing, storage = latest.protocol, latest.metadata, latest.segment.listing, latest.storage
    newest = listing.latest
    earliest = listing.earliest_recreatable()
    if earliest is None:
        earliest = newest
    en = ict.enablement(protocol, metadata)
    if en is not None and (en[1] is None or ts >= en[1]):
        lo = max(en[0], earliest)
        found = _search_ict(storage, listing, lo, newest, ts)
    else:
        hi = newest if en is None else en[0] - 1
        fts = file_timestamps(listing)
        found = None
        # listing mtimes: no I/O; newest first, over the versions that exist
        for v in sorted((v for v in fts if earliest <= v <= hi), reverse=True):
            if fts[v] <= ts:
                found = v
                break
    if found is None:
        first_ts = commit_timestamp(storage, earliest, protocol, metadata, listing)
        raise TimestampOutOfRangeError(
            f"timestamp {format_ms(ts)} is before the earliest version available in {storage.uri} "
            f"(version {earliest} at {format_ms(first_ts)})", timestamp=ts, earliest=first_ts)
    if found == newest and not allow_after_latest:
        last_ts = commit_timestamp(storage, newest, protocol, metadata, listing)
        if ts > last_ts:
            raise TimestampOutOfRangeError(
                f"timestamp {format_ms(ts)} is after the latest commit of {storage.uri} (version {newest} "
                f"at {format_ms(last_ts)}); pass allow_after_latest=True to get the latest version",
                timestamp=ts, latest=last_ts)
    return found


def _search_ict(storage: Storage, listing: LogListing, lo: int, hi: int, ts: int) -> int | None:
    """Greatest v in [lo, hi] with ICT(v) <= ts, by binary search (ICTs increase with v)."""
    found = None
    while lo <= hi:
        mid = (lo + hi) // 2
        if read_ict(storage, listing, mid) <= ts:
            found, lo = mid, mid + 1
        else:
            hi = mid - 1
    return found


def history(latest: Snapshot, limit: int | None = None) -> list[dict[str, Any]]:
    """Commits newest first: version, commit timestamp (ICT-aware) and the commitInfo fields.

    With ``limit`` only that many commit files are read. The history ends at the
    oldest commit file still present (older ones were cleaned up).
    """
    if limit is not None and limit <= 0:
        return []
    return list(islice(history_back(latest), limit))


def history_back(latest: Snapshot, since_ms: int | None = None) -> Iterator[dict[str, Any]]:
    """:func:`history`'s entries newest first, one commit file read per entry taken: a caller that
    has its answer stops reading. With ``since_ms`` it ends at the first commit whose timestamp is
    before that (epoch ms; a caller allowing for clocks apart passes a bound with a margin)."""
    protocol, metadata, listing, storage = latest.protocol, latest.metadata, latest.segment.listing, latest.storage
    v = listing.latest
    while v is not None and v >= 0 and v in listing.commits:
        blob = read_commit_file(storage, listing.commits[v])
        entry = dict(commit_info_of(blob, unwrapped=True) or {})
        entry["version"] = v
        entry["timestamp"] = commit_timestamp(storage, v, protocol, metadata, listing, blob=blob)
        if since_ms is not None and entry["timestamp"] < since_ms:
            return
        yield entry
        v -= 1
