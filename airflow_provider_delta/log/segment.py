"""Which files make up version v of a table: the log segment.

A snapshot is the newest complete checkpoint at or below v, plus the
contiguous commits after it up to v. This module lists ``_delta_log`` once,
chooses that checkpoint (trusting ``_last_checkpoint`` only when the listing
confirms it, so a missing, empty, corrupt or stale hint just falls back to the
listing), checks the commits are contiguous, and, for managed-commit tables,
appends the commit owner's ratified but un-backfilled commits.

It knows nothing about the content of actions; replay lives in :mod:`.replay`.
Log compaction files (``x.y.compacted.json``) are listed but not used: the
protocol makes them optional, and ignoring them cannot change an answer.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .errors import CorruptLogError, TableNotFoundError, VersionNotFoundError
from .names import COMMITS_DIR, LAST_CHECKPOINT, LOG_DIR, LogFile, parse_log_name

if TYPE_CHECKING:  # pragma: no cover
    from .table import DeltaTable

#: How often to re-list when the commit owner's answer shows our listing was stale.
_MAX_LISTING_ATTEMPTS = 5


@dataclass
class LogListing:
    """Everything found in ``_delta_log`` (plus the owner's un-backfilled tail)."""

    commits: dict[int, LogFile] = field(default_factory=dict)
    checkpoints: dict[int, list[LogFile]] = field(default_factory=dict)
    compactions: list[LogFile] = field(default_factory=list)
    log_dir_exists: bool = True
    #: versions served by the commit owner (not yet backfilled)
    unbackfilled: set[int] = field(default_factory=set)
    #: the owner's recorded commit timestamp of each un-backfilled version (None: read the file)
    owner_timestamps: dict[int, int | None] = field(default_factory=dict)
    #: monotonized file timestamps, computed once per listing (see history.file_timestamps)
    file_ts: dict[int, int] | None = None

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


@dataclass
class LogSegment:
    """The files needed to build one version: at most one checkpoint plus the commits after it."""

    version: int
    checkpoint_version: int | None
    checkpoint_files: list[LogFile]
    commits: list[LogFile]
    listing: LogListing

    @property
    def first_commit_version(self) -> int:
        return self.commits[0].version if self.commits else self.version


def read_last_checkpoint(table: "DeltaTable") -> dict[str, Any] | None:
    """Parse ``_last_checkpoint``; None when missing, empty or not valid JSON (a hint only)."""
    try:
        raw = table.storage.read_bytes(LAST_CHECKPOINT)
    except (FileNotFoundError, IsADirectoryError):
        return None
    try:
        d = json.loads(raw.decode("utf-8").strip().splitlines()[0]) if raw.strip() else None
    except (ValueError, IndexError, UnicodeDecodeError):
        return None
    if not isinstance(d, dict) or not isinstance(d.get("version"), int):
        return None
    return d


def list_backfilled(table: "DeltaTable") -> LogListing:
    """List ``_delta_log`` once and sort what is there into commits, checkpoints and compactions."""
    storage = table.storage
    entries = storage.list_dir(LOG_DIR)
    listing = LogListing()
    if not entries and not storage.isdir(LOG_DIR):
        listing.log_dir_exists = False
        return listing
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


def list_log(table: "DeltaTable") -> LogListing:
    """The full listing: backfilled files, plus the owner's ratified tail for managed tables.

    The owner also reports the latest version it ratified; if our directory listing
    plus its un-backfilled commits do not reach that version, a backfill ran between
    the two calls and we list again (the race the managed-commits RFC describes).
    """
    owner = table.commit_owner
    for _ in range(_MAX_LISTING_ATTEMPTS):
        listing = list_backfilled(table)
        if owner is None:
            return listing
        table_id = _table_id(table, listing)
        if table_id is None:
            return listing
        start = (listing.max_backfilled if listing.max_backfilled is not None else -1) + 1
        resp = owner.get_commits(table_id, start)
        tail = [c for c in resp.commits if c.version >= start]
        expected_first = start
        ok = True
        for c in tail:
            if c.version != expected_first:
                ok = False
                break
            expected_first += 1
        reached = expected_first - 1
        if ok and reached >= resp.latest_table_version:
            for c in tail:
                path = table.storage.path(getattr(c, "rel_path", f"{COMMITS_DIR}/{c.file_name}"))
                size, mtime = c.file_size, c.modification_time
                if not mtime:
                    try:
                        mtime = table.storage.mtime_ms(table.storage.relative(path))
                    except FileNotFoundError:
                        mtime = 0
                listing.commits[c.version] = LogFile("commit", c.version, path, size, mtime)
                listing.unbackfilled.add(c.version)
            listing.owner_timestamps = {c.version: c.commit_timestamp for c in tail}
            return listing
    raise CorruptLogError(
        f"the commit owner keeps reporting versions that are neither in {LOG_DIR} nor in its "
        f"un-backfilled list after {_MAX_LISTING_ATTEMPTS} listings; the owner's state and the "
        "log disagree")


def _table_id(table: "DeltaTable", listing: LogListing) -> str | None:
    """The table id (metaData.id) the owner keys the table by, read once and cached."""
    tid = getattr(table, "_table_id", None)
    if tid is None and listing.latest is not None:
        from .snapshot import load_protocol_metadata
        seg = build_segment(table, None, listing)
        _, metadata = load_protocol_metadata(table, seg)
        tid = metadata.id
        table._table_id = tid
    return tid


def build_segment(table: "DeltaTable", version: int | None = None,
                  listing: LogListing | None = None) -> LogSegment:
    """The log segment of ``version`` (default: the latest), or a typed error saying why not."""
    if listing is None:
        listing = list_log(table)
    latest = listing.latest
    if latest is None:
        if not listing.log_dir_exists:
            raise TableNotFoundError(f"no Delta table at {table.uri}: there is no {LOG_DIR} directory")
        raise TableNotFoundError(f"no Delta table at {table.uri}: {LOG_DIR} holds no commits or checkpoints")
    target = latest if version is None else int(version)
    if target < 0 or target > latest:
        earliest = listing.earliest_recreatable()
        raise VersionNotFoundError(
            f"version {target} does not exist in {table.uri}: available versions are "
            f"{earliest if earliest is not None else '?'} to {latest}",
            version=target, earliest=earliest, latest=latest)
    hint = read_last_checkpoint(table) if listing.checkpoints else None
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
    commits: list[LogFile] = []
    missing: list[int] = []
    for v in range(start, target + 1):
        f = listing.commits.get(v)
        if f is None:
            missing.append(v)
        else:
            commits.append(f)
    if missing:
        present_before = [v for v in listing.commits if v < missing[0]]
        if missing[0] == start and (cp_version is None) and not present_before:
            earliest = listing.earliest_recreatable()
            raise VersionNotFoundError(
                f"cannot reconstruct version {target} of {table.uri}: commit {missing[0]} is gone "
                f"and no checkpoint at or below {target} exists (the earliest version that can be "
                f"read is {earliest if earliest is not None else 'none'}, the latest {latest})",
                version=target, earliest=earliest, latest=latest)
        found = sorted(v for v in listing.commits if v <= target and v >= start - 1)
        raise CorruptLogError(
            f"{table.uri}: versions are not contiguous: ({found}); missing commit(s) "
            f"{missing[:10]}{'...' if len(missing) > 10 else ''} after "
            f"{'checkpoint ' + str(cp_version) if cp_version is not None else 'the start of the log'}")
    return LogSegment(target, cp_version, cp_files, commits, listing)


def latest_version(table: "DeltaTable") -> int:
    """The newest version: one directory listing, plus the owner's view for managed tables."""
    listing = list_log(table)
    latest = listing.latest
    if latest is None:
        build_segment(table, None, listing)  # raises the right TableNotFoundError
    return int(latest)  # type: ignore[arg-type]


def read_commit_file(table: "DeltaTable", lf: LogFile) -> bytes:
    try:
        return table.storage.read_bytes(lf.path)
    except FileNotFoundError:
        raise VersionNotFoundError(f"commit file {lf.path} disappeared while reading {table.uri} "
                                   "(metadata cleanup or backfill ran concurrently?)", version=lf.version)


def parse_json_lines(data: bytes, path: str) -> list[dict[str, Any]]:
    """Parse one newline-delimited JSON log file; a bad line is a CorruptLogError naming file and line."""
    out: list[dict[str, Any]] = []
    for i, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise CorruptLogError(f"{path}, line {i}: not valid JSON ({e})", path=path, line=i) from None
        if not isinstance(obj, dict):
            raise CorruptLogError(f"{path}, line {i}: an action must be a JSON object", path=path, line=i)
        out.append(obj)
    return out


def read_commit(table: "DeltaTable", version: int) -> list[dict[str, Any]]:
    """The actions of commit ``version``: the backfilled file, else the owner's ratified one."""
    from .names import commit_path
    rel = commit_path(version)
    try:
        data = table.storage.read_bytes(rel)
        return parse_json_lines(data, table.storage.path(rel))
    except FileNotFoundError:
        pass
    return read_listed_commit(table, list_log(table), version)


def read_listed_commit(table: "DeltaTable", listing: LogListing, version: int) -> list[dict[str, Any]]:
    """The actions of commit ``version`` as found by ``listing`` (backfilled or the owner's),
    for callers that already listed the log and should not list it again per commit."""
    lf = listing.commits.get(version)
    if lf is None:
        earliest, latest = listing.earliest_recreatable(), listing.latest
        raise VersionNotFoundError(
            f"commit {version} not found in {table.uri} (available: {earliest} to {latest})",
            version=version, earliest=earliest, latest=latest)
    return parse_json_lines(read_commit_file(table, lf), lf.path)
