"""Metadata cleanup: deleting expired log files.

It deletes files for good, so it follows Delta Spark, the reference, and refuses
rather than guess.

Metadata cleanup (PROTOCOL.md "Metadata Cleanup", Delta Spark ``MetadataCleanup``):

1. ``cutoff = now - delta.logRetentionDuration`` (default 30 days), truncated down to
   midnight UTC as Spark does (``truncate="day"``; "hour"/"minute"/None for tests).
2. The cutoff commit is the newest version whose commit timestamp is at or before the
   cutoff (in-commit timestamps where enabled, else monotonized file times).
3. The cutoff checkpoint is the newest complete checkpoint at or before the cutoff
   commit whose commit file still exists (Spark's "reliable" checkpoint). Without
   one, nothing is deleted.
4. Deleted: commits, checkpoints and ``.crc`` files of versions before it, log
   compactions starting at or before it, un-backfilled/staged commit files
   (``_commits/``, ``_staged_commits/``) at or before it, and -- when a v2 checkpoint
   went -- sidecars that no remaining checkpoint names and that are older than the
   cutoff. Every version from the cutoff checkpoint on stays readable.

Timestamps of the versions that stay must not change. Without in-commit timestamps a
version's time is its file time monotonized against the versions before it, so
deleting those could lower it. When it would, an older checkpoint is used as the
cutoff instead (Delta Spark's ``BufferingLogDeletionIterator`` has the same aim).
Nothing is ever rewritten or touched among the files that stay.

Delta Spark deletes up to ``_last_checkpoint``'s version minus one and uses file times
only; the protocol text (which this follows) keys the cutoff on commit timestamps, so
in-commit timestamps decide on tables that have them.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any

from ..read.checkpoint_reader import sidecar_names
from ..read.commit_timestamps import file_timestamps
from ..base.errors import InvalidArgumentError, TimestampOutOfRangeError
from ..base.features import EXPIRED_LOG_CLEANUP_PROPERTY, Operation, checkpoint_protection_boundary
from ..read.history import version_at
from ..base.intervals import log_retention_ms
from ..base.catalog_store.table_source import ORPHAN_AGE_MS, CatalogTableSource
from ..read.listing import LogListing, list_backfilled
from ..base.names import COMMITS_DIR, LOG_DIR, SIDECARS_DIR, STAGED_COMMITS_DIR, parse_uuid_commit_name
from ..read.snapshot import Snapshot
from ..base.storage import OWN_TEMP_FILE
from ..read.table_log import TableLog
from ..base.timeutil import format_ms, now_or

log = logging.getLogger(__name__)

_TRUNCATION_MS = {"day": 86_400_000, "hour": 3_600_000, "minute": 60_000}


def truncate_ms(ms: int, unit: str | None) -> int:
    """``ms`` rounded down to the start of its UTC day/hour/minute (Spark's ``truncateDate``)."""
    if unit is None:
        return ms
    step = _TRUNCATION_MS.get(unit)
    if step is None:
        raise InvalidArgumentError(f"truncate must be 'day', 'hour', 'minute' or None, got {unit!r}")
    return ms - (ms % step)


@dataclass
class _Plan:
    cutoff_ts: int
    cutoff_version: int | None
    checkpoint_version: int | None
    commits: list[str]
    checkpoints: list[str]
    checksums: list[str]
    compactions: list[str]
    unbackfilled: list[str]


def _listing_without(listing: LogListing, below: int) -> LogListing:
    """A copy of ``listing`` as it will be once versions below ``below`` are deleted."""
    return LogListing(commits={v: f for v, f in listing.commits.items() if v >= below},
                      checkpoints={v: fs for v, fs in listing.checkpoints.items() if v >= below},
                      compactions=[c for c in listing.compactions if c.version > below],
                      log_dir_exists=listing.log_dir_exists)


def _timestamps_stable(listing: LogListing, cp: int, mtime_until: int | None) -> bool:
    """Whether every file-time-based version >= ``cp`` keeps its timestamp once older files go.

    ``mtime_until``: versions at or after it use in-commit timestamps (None: none do).
    """
    before = file_timestamps(LogListing(dict(listing.commits), dict(listing.checkpoints)))
    after = file_timestamps(_listing_without(listing, cp))
    for v, ts in after.items():
        if mtime_until is not None and v >= mtime_until:
            break
        if before.get(v) != ts:
            return False
    return True


def _cutoff_version(latest: Snapshot, cutoff_ts: int) -> int | None:
    """Newest version with commit timestamp <= cutoff (ICT-aware), None if all are newer."""
    try:
        return version_at(latest, cutoff_ts, allow_after_latest=True)
    except TimestampOutOfRangeError:
        return None


def _plan_cleanup(table: TableLog, snapshot: Snapshot, cutoff_ts: int) -> _Plan:
    listing = list_backfilled(table.storage)
    plan = _Plan(cutoff_ts, None, None, [], [], [], [], [])
    plan.cutoff_version = _cutoff_version(snapshot, cutoff_ts)
    if plan.cutoff_version is None:
        return plan
    en = snapshot.ict_enablement
    mtime_until = None if en is None else en[0]
    candidates = sorted((v for v in listing.checkpoints if v <= plan.cutoff_version), reverse=True)
    for v in candidates:
        if v not in listing.commits or listing.complete_checkpoint(v) is None:
            continue
        if not any(w < v for w in list(listing.commits) + list(listing.checkpoints)):
            break  # nothing older than the newest usable checkpoint: nothing to delete
        if _timestamps_stable(listing, v, mtime_until):
            plan.checkpoint_version = v
            break
        log.info("not cleaning up to checkpoint %d of %s: the file times of later versions would "
                 "change; trying an older checkpoint", v, table.uri)
    cp = plan.checkpoint_version
    if cp is None:
        return plan
    boundary = checkpoint_protection_boundary(snapshot.protocol, snapshot.metadata)
    if boundary is not None and cp < boundary:
        # checkpointProtection: history before the boundary goes all at once or not at all
        log.info("not cleaning up %s: checkpointProtection keeps every version before %d until a cleanup "
                 "can remove all of them at once (the cutoff checkpoint is %d)", table.uri, boundary, cp)
        plan.checkpoint_version = None
        return plan
    storage = table.storage
    rel = storage.relative
    plan.commits = [rel(f.path) for v, f in sorted(listing.commits.items()) if v < cp]
    plan.checkpoints = [rel(f.path) for v, fs in sorted(listing.checkpoints.items()) if v < cp
                        for f in sorted(fs, key=lambda x: x.path)]
    plan.compactions = [rel(c.path) for c in sorted(listing.compactions, key=lambda c: c.path)
                        if c.version <= cp]
    for e in sorted(storage.list_dir(LOG_DIR), key=lambda e: e.name):
        name = e.name
        if len(name) == 24 and name.endswith(".crc") and name[:20].isdigit() and int(name[:20]) < cp:
            plan.checksums.append(rel(e.path))
    for d in (COMMITS_DIR, STAGED_COMMITS_DIR):
        for e in sorted(storage.list_dir(d), key=lambda e: e.name):
            parsed = parse_uuid_commit_name(e.name)
            if parsed is not None and parsed[0] <= cp:
                plan.unbackfilled.append(rel(e.path))
    return plan


def _referenced_sidecars(table: TableLog, listing: LogListing) -> set[str] | None:
    """Names of the sidecars any remaining checkpoint references; None if one cannot be read.

    A checkpoint we cannot read may reference any sidecar, so then no sidecar is deleted.
    """
    names: set[str] = set()
    for files in listing.checkpoints.values():
        for f in files:
            try:
                names |= sidecar_names(table.storage, f)
            except Exception as e:  # noqa: BLE001 - reported, and no sidecar is deleted
                log.warning("cannot read checkpoint %s while looking for the sidecars it uses (%s): "
                            "keeping every sidecar", f.path, e)
                return None
    return names


def _plan_sidecars(table: TableLog, cutoff_ts: int) -> list[str]:
    """Sidecars no remaining checkpoint names and older than the cutoff (protocol steps 4-5)."""
    entries = table.storage.list_dir(SIDECARS_DIR)
    if not entries:
        return []
    referenced = _referenced_sidecars(table, list_backfilled(table.storage))
    if referenced is None:
        return []
    return [table.storage.relative(e.path) for e in sorted(entries, key=lambda e: e.name)
            if e.name not in referenced and e.mtime_ms < cutoff_ts
            and not e.name.startswith(".")]   # Hadoop .crc companions go with their file


#: Our temporary files older than this belong to a writer that died (a live one publishes in seconds).
STALE_TEMP_AGE_MS = 86_400_000


def _stale_temp_files(table: TableLog, older_than_ms: int) -> list[str]:
    """Hidden temporary files of our own naming, left in the log folders by killed writers."""
    out = []
    for d in (LOG_DIR, COMMITS_DIR, STAGED_COMMITS_DIR, SIDECARS_DIR):
        for e in table.storage.list_dir(d):
            if OWN_TEMP_FILE.match(e.name) and e.mtime_ms < older_than_ms:
                out.append(table.storage.relative(e.path))
    return sorted(out)


def _abandoned_staged(table: TableLog, snapshot: Snapshot, older_than_ms: int, dry_run: bool) -> list[str]:
    """Staged commits of a catalog-managed table that its catalog says can never be ratified
    (multi-table transactions RFC: orphans of groups never ratified go with metadata cleanup)."""
    source = table.commit_owner
    if not isinstance(source, CatalogTableSource):
        return []
    names = [e.name for e in table.storage.list_dir(STAGED_COMMITS_DIR)]
    gone = source.abandoned_staged_commits(snapshot.metadata.id, names, older_than_ms, dry_run)
    rels = [f"{STAGED_COMMITS_DIR}/{n}" for n in gone]
    if not dry_run:
        for rel in rels:
            table.storage.delete(rel)
    return rels


def cleanup_metadata(table: TableLog, now_ms: int | None = None, retention_ms: int | None = None,
                     dry_run: bool = False, force: bool = False, truncate: str | None = "day",
                     orphan_age_ms: int = ORPHAN_AGE_MS) -> dict[str, Any]:
    """Delete expired log files by Delta Spark's rules; returns what was (or would be) deleted.

    ``retention_ms`` overrides ``delta.logRetentionDuration``. With
    ``delta.enableExpiredLogCleanup=false`` nothing happens unless ``force=True``.
    The result has ``cutoff_timestamp``, ``cutoff_version``, ``checkpoint_version``
    (the oldest version kept, None if nothing can be deleted), the deleted paths by
    kind (``commits``, ``checkpoints``, ``checksums``, ``compactions``,
    ``unbackfilled``, ``sidecars``), all of them in ``deleted``, and ``dry_run``/``enabled``.

    On a catalog-managed table opened with its catalog, ``abandoned_staged`` lists the staged
    commits the catalog says can never be ratified (rejected, of aborted groups, or unclaimed
    for ``orphan_age_ms``: see :meth:`CatalogTableSource.abandoned_staged_commits`); they go
    whether or not a checkpoint allows anything else to go.
    """
    now = now_or(now_ms)
    if retention_ms is not None and (isinstance(retention_ms, bool) or not isinstance(retention_ms, int)
                                     or retention_ms < 0):
        raise InvalidArgumentError(f"retention_ms must be a non-negative integer, got {retention_ms!r}")
    truncate_ms(0, truncate)  # validates before anything is read
    snapshot = table.snapshot()
    table.require(snapshot, Operation.CLEANUP)
    conf = snapshot.metadata.configuration
    enabled_raw = str(conf.get(EXPIRED_LOG_CLEANUP_PROPERTY, "true")).strip().lower()
    enabled = enabled_raw != "false"
    retention = log_retention_ms(conf) if retention_ms is None else retention_ms
    cutoff_ts = truncate_ms(now - retention, truncate)
    result: dict[str, Any] = {
        "enabled": enabled, "dry_run": bool(dry_run), "cutoff_timestamp": cutoff_ts,
        "retention_ms": retention, "cutoff_version": None, "checkpoint_version": None,
        "commits": [], "checkpoints": [], "checksums": [], "compactions": [], "unbackfilled": [],
        "sidecars": [], "temp_files": [], "abandoned_staged": [], "deleted": [],
    }
    if not enabled and not force:
        log.info("%s: %s=false, metadata cleanup skipped", table.uri, EXPIRED_LOG_CLEANUP_PROPERTY)
        return result
    result["temp_files"] = _stale_temp_files(table, now - STALE_TEMP_AGE_MS)
    if not dry_run:
        for rel in result["temp_files"]:
            table.storage.delete(rel)
    result["abandoned_staged"] = _abandoned_staged(table, snapshot, now - orphan_age_ms, dry_run)
    plan = _plan_cleanup(table, snapshot, cutoff_ts)
    result.update(cutoff_version=plan.cutoff_version, checkpoint_version=plan.checkpoint_version,
                  commits=plan.commits, checkpoints=plan.checkpoints, checksums=plan.checksums,
                  compactions=plan.compactions, unbackfilled=plan.unbackfilled)
    if plan.checkpoint_version is None:
        result["deleted"] = list(result["abandoned_staged"])
        return result
    # Oldest first, commits before their checkpoints: a crash part-way leaves a log whose
    # oldest remaining files still start at a version that can be rebuilt.
    ordered = sorted(plan.commits + plan.checkpoints + plan.checksums,
                     key=lambda p: (p.rsplit("/", 1)[-1][:20], "checkpoint" in p))
    ordered += plan.compactions + plan.unbackfilled
    sidecars: list[str] = []
    if not dry_run:
        for rel in ordered:
            table.storage.delete_with_crc_companion(rel)
        if plan.checkpoints:  # as in Spark: only when some checkpoint went
            sidecars = _plan_sidecars(table, cutoff_ts)
            for rel in sidecars:
                table.storage.delete_with_crc_companion(rel)
    result["sidecars"] = sidecars
    result["deleted"] = ordered + sidecars + result["abandoned_staged"]
    log.info("%s: metadata cleanup %s %d files older than %s (kept from version %d)", table.uri,
             "would delete" if dry_run else "deleted", len(result["deleted"]), format_ms(cutoff_ts),
             plan.checkpoint_version)
    return result


