"""What ``_delta_log`` holds: one listing, sorted into commits, checkpoints and compactions.

A listing is the only place versions are discovered. For managed-commit and
catalog-managed tables the :class:`~.commit_source.CommitSource` adds its ratified
but un-backfilled commits; the source's answer also says the newest version it
ratified, and if the directory listing plus its commits do not reach it, a
backfill ran between the two calls, so we list again (the race the
managed-commits RFC describes).

Nothing here reads a commit's content; ``_last_checkpoint`` is read only as a hint.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from ..base.backoff import sleep_jittered
from ..base.commit_source import CommitSource
from ..base.errors import CorruptLogError
from ..base.names import LAST_CHECKPOINT, LOG_DIR, LogFile, commit_path, parse_log_name
from ..base.records import Record
from ..base.storage import FileInfo, Storage

#: How often to re-list when the log changed again while we completed a listing, and the first
#: back-off (doubling, randomized) between attempts.
MAX_LISTING_ATTEMPTS = 8
LISTING_BACKOFF_S = 0.005
#: Where a store has no ranged listing, how many commit files after a known version are
#: looked up one by one before a full listing is cheaper.
MAX_PROBED_COMMITS = 64


class LogListing(Record):
    """Everything found in ``_delta_log`` (plus the commit source's un-backfilled tail)."""

    __slots__ = ("commits", "checkpoints", "compactions", "log_dir_exists", "unbackfilled", "owner_timestamps",
                 "file_ts", "partial_from")
    _defaults = {"log_dir_exists": True, "file_ts": None, "partial_from": None}
    _factories = {"commits": dict, "checkpoints": dict, "compactions": list, "unbackfilled": set,
                  "owner_timestamps": dict}

    commits: dict[int, LogFile]
    checkpoints: dict[int, list[LogFile]]
    compactions: list[LogFile]
    log_dir_exists: bool
    #: versions served by the commit source (not yet backfilled)
    unbackfilled: set[int]
    #: the source's recorded commit timestamp of each un-backfilled version (None: read the file)
    owner_timestamps: dict[int, int | None]
    #: monotonized file timestamps, computed once per listing (see commit_timestamps.file_timestamps)
    file_ts: dict[int, int] | None
    #: set on a listing from a known version on (:func:`list_backfilled_after`): files older
    #: than this version were not looked at, so the listing answers only "what is new"
    #: (latest version, commits after it), never a snapshot's segment
    partial_from: int | None

    @property
    def latest(self) -> int | None:
        versions = list(self.commits) + list(self.checkpoints)
        return max(versions) if versions else None

    @property
    def max_backfilled(self) -> int | None:
        backfilled = [v for v in self.commits if v not in self.unbackfilled]
        return max(backfilled) if backfilled else None

    def complete_checkpoint(self, version: int, hint: dict[str, Any] | None = None) -> list[LogFile] | None:
        """The files of one complete checkpoint at ``version`` (None if none is complete).

        A multi-part checkpoint counts only with every part present. When several
        complete checkpoints share a version (e.g. a classic and a v2 one), the one
        named by ``_last_checkpoint`` wins, then single files before multi-part.
        """
        files = self.checkpoints.get(version) or []
        candidates: list[list[LogFile]] = []
        multi: dict[int, dict[int, LogFile]] = {}
        for f in files:
            if f.num_parts:
                multi.setdefault(f.num_parts, {})[f.part or 0] = f
            else:
                candidates.append([f])
        for n, parts in sorted(multi.items()):
            if sorted(parts) == list(range(1, n + 1)):
                candidates.append([parts[i] for i in range(1, n + 1)])
        if not candidates:
            return None
        if hint and hint.get("version") == version:
            v2 = (hint.get("v2Checkpoint") or {}).get("path")
            for c in candidates:
                if v2 and c[0].name == v2:
                    return c
                if not v2 and hint.get("parts") and len(c) == int(hint["parts"]):
                    return c
        return candidates[0]

    def earliest_recreatable(self) -> int | None:
        """The lowest version that can be rebuilt: from version 0, or from a checkpoint
        followed by contiguous commits up to the latest version."""
        latest = self.latest
        if latest is None:
            return None
        low = latest
        while low - 1 in self.commits:
            low -= 1
        if low == 0 and 0 in self.commits:
            return 0
        for v in sorted(self.checkpoints):
            if v >= low - 1 and self.complete_checkpoint(v):
                return v
        return latest if latest in self.commits and 0 in self.commits else None


def read_last_checkpoint(storage: Storage) -> dict[str, Any] | None:
    """Parse ``_last_checkpoint``; None when missing, empty or not valid JSON (a hint only)."""
    try:
        raw = storage.read_bytes(LAST_CHECKPOINT)
    except (FileNotFoundError, IsADirectoryError):
        return None
    try:
        d = json.loads(raw.decode("utf-8").strip().splitlines()[0]) if raw.strip() else None
    except (ValueError, IndexError, UnicodeDecodeError):
        return None
    if not isinstance(d, dict) or not isinstance(d.get("version"), int):
        return None
    return d


def list_backfilled(storage: Storage) -> LogListing:
    """List ``_delta_log`` once and sort what is there into commits, checkpoints and compactions."""
    entries = storage.list_dir(LOG_DIR)
    if not entries and not storage.isdir(LOG_DIR):
        return LogListing(log_dir_exists=False)
    return sorted_listing(entries)


def list_backfilled_after(storage: Storage, version: int) -> LogListing | None:
    """The log files from ``version``'s commit on, without listing the older ones.

    A poller that already saw ``version`` needs only what came after it: one ranged
    listing from ``<version>.json`` where the store has one (S3, GCS, Azure), else a
    lookup of the commit files ``version``, ``version + 1``, ... one by one (a stat each
    on a local disk) while they exist. Commits appear in version order without gaps (a
    writer only creates N + 1 after reading N), so the first missing commit file ends
    the new ones. None when ``version``'s own commit file is not there (the log was
    cleaned up or replaced, or the commit is not backfilled yet) or when too many new
    commits make one full listing cheaper: the caller then lists everything.
    """
    first = commit_path(version).rsplit("/", 1)[-1]
    entries = storage.list_dir_from(LOG_DIR, first)
    if entries is None:
        entries = _probe_commits(storage, version)
        if entries is None:
            return None
    listing = sorted_listing(entries)
    if version not in listing.commits:
        return None
    listing.partial_from = version
    return listing


def _probe_commits(storage: Storage, version: int) -> list[FileInfo] | None:
    """The commit files ``version``, ``version + 1``, ... that exist, looked up one at a time."""
    found: list[FileInfo] = []
    for v in range(version, version + MAX_PROBED_COMMITS):
        info = storage.file_info(commit_path(v))
        if info is None:
            return found
        found.append(info)
    return None


def sorted_listing(entries: list[FileInfo]) -> LogListing:
    """Sort directory entries of ``_delta_log`` into commits, checkpoints and compactions."""
    listing = LogListing()
    for e in entries:
        lf = parse_log_name(e.name, e.path, e.size, e.mtime_ms)
        if lf is None:
            continue
        if lf.kind == "commit":
            listing.commits[lf.version] = lf
        elif lf.kind == "checkpoint":
            listing.checkpoints.setdefault(lf.version, []).append(lf)
        else:
            listing.compactions.append(lf)
    return listing


def add_ratified_tail(storage: Storage, listing: LogListing, source: CommitSource, table_id: str) -> bool:
    """Add the source's un-backfilled commits to ``listing``; False if it still cannot be completed.

    A source stops tracking a commit only after copying it into ``_delta_log``. So when its
    answer starts after our newest backfilled file, or does not reach the newest version it
    ratified, the missing versions were backfilled between our listing and its answer: one
    more directory listing finds them. Only a log that changed again in between (another
    backfill, a cleanup) makes this return False, and the caller lists afresh.
    """
    start = (listing.max_backfilled if listing.max_backfilled is not None else -1) + 1
    if source.authoritative_latest:
        # catalog-managed (PROTOCOL.md, "Reading Catalog-managed Tables"): the catalog's commits win
        # over published files of the same version, and files after its latest version are ignored
        resp = source.get_commits(table_id, 0)
        tail = sorted(resp.commits, key=lambda c: c.version)
        if resp.latest_table_version >= 0:
            _ignore_after(listing, resp.latest_table_version)
        if tail:   # what the log holds at the catalog's versions is not the table's: the catalog's is
            _ignore_after(listing, tail[0].version - 1)
        start = (listing.max_backfilled if listing.max_backfilled is not None else -1) + 1
    else:
        resp = source.get_commits(table_id, start)
        tail = sorted((c for c in resp.commits if c.version >= start), key=lambda c: c.version)
    for a, b in zip(tail, tail[1:]):
        if b.version != a.version + 1:
            return False                      # the source's own answer has a hole: ask again
    first_tracked = tail[0].version if tail else resp.latest_table_version + 1
    if first_tracked > start:
        fresh = list_backfilled(storage)
        for v in range(start, first_tracked):
            if v not in fresh.commits:
                return False
            listing.commits[v] = fresh.commits[v]
    if tail and tail[-1].version < resp.latest_table_version:
        return False
    for c in tail:
        path = storage.path(c.rel_path)
        mtime = c.modification_time
        if not mtime:
            try:
                mtime = storage.mtime_ms(c.rel_path)
            except FileNotFoundError:
                mtime = 0
        listing.commits[c.version] = LogFile("commit", c.version, path, c.file_size, mtime)
        listing.unbackfilled.add(c.version)
    listing.owner_timestamps = {c.version: c.commit_timestamp for c in tail}
    listing.file_ts = None
    return True


def _ignore_after(listing: LogListing, latest: int) -> None:
    """PROTOCOL.md, reading catalog-managed tables: "clients must ignore any files with versions
    greater than the latest ratified commit version returned by the catalog" (a reader that
    asked the catalog first must not see a commit published after that answer)."""
    for v in [v for v in listing.commits if v > latest]:   # (also used to drop a catalog-supplied range)
        del listing.commits[v]
    for v in [v for v in listing.checkpoints if v > latest]:
        del listing.checkpoints[v]
    listing.compactions[:] = [c for c in listing.compactions if c.end_version <= latest]


def list_log(storage: Storage, source: CommitSource | None = None,
             table_id_of: Callable[[LogListing], str | None] | None = None,
             known_version: int | None = None) -> LogListing:
    """The full listing: backfilled files, plus the source's ratified tail when there is one.

    ``table_id_of`` gives the id the source keys the table by, from a backfilled listing
    (None while the table has no commit yet: then there is no tail to ask for).
    ``known_version``, a backfilled version the caller has seen, asks only for what is new
    after it (see :func:`list_backfilled_after`; the answer then has ``partial_from`` set).
    """
    for attempt in range(MAX_LISTING_ATTEMPTS):
        listing = None if known_version is None else list_backfilled_after(storage, known_version)
        if listing is None:
            listing = list_backfilled(storage)
        if source is None or table_id_of is None:
            return listing
        table_id = table_id_of(listing)
        if table_id is None or add_ratified_tail(storage, listing, source, table_id):
            return listing
        # busy table: other writers keep backfilling between our two calls; back off a little
        sleep_jittered(LISTING_BACKOFF_S * 2 ** attempt)
    raise CorruptLogError(
        f"the commit owner keeps reporting versions that are neither in {LOG_DIR} nor in its "
        f"un-backfilled list after {MAX_LISTING_ATTEMPTS} listings; the owner's state and the "
        "log disagree")
