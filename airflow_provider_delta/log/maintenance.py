"""Metadata cleanup (expired log files) and vacuum (unreferenced data files).

Both delete files for good, so both follow Delta Spark, the reference, and refuse
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

Vacuum (Delta Spark ``VacuumCommand``): deletes files under the table root that
neither the latest snapshot nor a tombstone younger than the retention references,
whose modification time is older than ``now - retention`` (default
``delta.deletedFileRetentionDuration``, 1 week). A shorter retention than the
table's is refused unless ``enforce_retention=False`` (Spark's
``retentionDurationCheck``). Hidden names (``_`` or ``.`` prefix) are skipped at
any depth, except ``_change_data`` (change data files expire by age),
``_delta_index`` and partition directories such as ``_col=x`` of partition column
``_col``; ``_delta_log`` is never touched, symlinked directories are not followed,
and a file is only ever deleted if the listing of the table root found it. Dry run
is the default.
"""
from __future__ import annotations

import logging
import math
import os
import posixpath
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, Iterable
from urllib.parse import unquote, urlparse

import pyarrow as pa
import pyarrow.compute as pc

from .errors import InvalidArgumentError, TimestampOutOfRangeError
from .intervals import deleted_file_retention_ms, log_retention_ms
from .names import COMMITS_DIR, LOG_DIR, SIDECARS_DIR, STAGED_COMMITS_DIR, parse_uuid_commit_name

if TYPE_CHECKING:  # pragma: no cover
    from .segment import LogListing
    from .snapshot import Snapshot
    from .table import DeltaTable

log = logging.getLogger(__name__)

ENABLE_EXPIRED_LOG_CLEANUP_KEY = "delta.enableExpiredLogCleanup"
_TRUNCATION_MS = {"day": 86_400_000, "hour": 3_600_000, "minute": 60_000}


def _now(now_ms: Any) -> int:
    if now_ms is None:
        return int(time.time() * 1000)
    if isinstance(now_ms, bool) or not isinstance(now_ms, int):
        raise InvalidArgumentError(f"now_ms must be epoch milliseconds (int), got {now_ms!r}")
    return now_ms


def truncate_ms(ms: int, unit: str | None) -> int:
    """``ms`` rounded down to the start of its UTC day/hour/minute (Spark's ``truncateDate``)."""
    if unit is None:
        return ms
    step = _TRUNCATION_MS.get(unit)
    if step is None:
        raise InvalidArgumentError(f"truncate must be 'day', 'hour', 'minute' or None, got {unit!r}")
    return ms - (ms % step)


def _fmt(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds")


# =========================================================== metadata cleanup
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


def _listing_without(listing: "LogListing", below: int) -> "LogListing":
    """A copy of ``listing`` as it will be once versions below ``below`` are deleted."""
    from .segment import LogListing
    return LogListing(commits={v: f for v, f in listing.commits.items() if v >= below},
                      checkpoints={v: fs for v, fs in listing.checkpoints.items() if v >= below},
                      compactions=[c for c in listing.compactions if c.version > below],
                      log_dir_exists=listing.log_dir_exists)


def _timestamps_stable(listing: "LogListing", cp: int, mtime_until: int | None) -> bool:
    """Whether every file-time-based version >= ``cp`` keeps its timestamp once older files go.

    ``mtime_until``: versions at or after it use in-commit timestamps (None: none do).
    """
    from .history import file_timestamps
    from .segment import LogListing
    before = file_timestamps(LogListing(dict(listing.commits), dict(listing.checkpoints)))
    after = file_timestamps(_listing_without(listing, cp))
    for v, ts in after.items():
        if mtime_until is not None and v >= mtime_until:
            break
        if before.get(v) != ts:
            return False
    return True


def _cutoff_version(table: "DeltaTable", cutoff_ts: int) -> int | None:
    """Newest version with commit timestamp <= cutoff (ICT-aware), None if all are newer."""
    from .history import version_at
    try:
        return version_at(table, cutoff_ts, allow_after_latest=True)
    except TimestampOutOfRangeError:
        return None


def _plan_cleanup(table: "DeltaTable", snapshot: "Snapshot", cutoff_ts: int) -> _Plan:
    from .segment import list_backfilled
    listing = list_backfilled(table)
    plan = _Plan(cutoff_ts, None, None, [], [], [], [], [])
    plan.cutoff_version = _cutoff_version(table, cutoff_ts)
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


def _delete_local_companion(table: "DeltaTable", rel: str) -> None:
    """Delete the Hadoop ``.<name>.crc`` file written beside ``rel`` (Hadoop's local FS does too)."""
    if not table.storage.is_local:
        return
    d, _, name = rel.rpartition("/")
    companion = f"{d}/.{name}.crc" if d else f".{name}.crc"
    if table.storage.exists(companion):
        table.storage.delete(companion)


def _referenced_sidecars(table: "DeltaTable", listing: "LogListing") -> set[str]:
    from .checkpoint_reader import read_checkpoint
    names: set[str] = set()
    for v, files in listing.checkpoints.items():
        for f in files:
            if f.uuid is None and f.fmt != "parquet":
                continue
            try:
                content = read_checkpoint(table.storage, [f], v, with_files=False)
            except Exception as e:  # noqa: BLE001 - an unreadable checkpoint protects nothing
                log.warning("cannot read checkpoint %s while looking for sidecars: %s", f.path, e)
                continue
            for o in content.others:
                sc = o.get("sidecar")
                if sc and sc.get("path"):
                    names.add(str(sc["path"]).rstrip("/").rsplit("/", 1)[-1])
    return names


def _plan_sidecars(table: "DeltaTable", cutoff_ts: int) -> list[str]:
    """Sidecars no remaining checkpoint names and older than the cutoff (protocol steps 4-5)."""
    from .segment import list_backfilled
    entries = table.storage.list_dir(SIDECARS_DIR)
    if not entries:
        return []
    referenced = _referenced_sidecars(table, list_backfilled(table))
    return [table.storage.relative(e.path) for e in sorted(entries, key=lambda e: e.name)
            if e.name not in referenced and e.mtime_ms < cutoff_ts
            and not e.name.startswith(".")]   # Hadoop .crc companions go with their file


def cleanup_metadata(table: "DeltaTable", now_ms: int | None = None, retention_ms: int | None = None,
                     dry_run: bool = False, force: bool = False, truncate: str | None = "day") -> dict[str, Any]:
    """Delete expired log files by Delta Spark's rules; returns what was (or would be) deleted.

    ``retention_ms`` overrides ``delta.logRetentionDuration``. With
    ``delta.enableExpiredLogCleanup=false`` nothing happens unless ``force=True``.
    The result has ``cutoff_timestamp``, ``cutoff_version``, ``checkpoint_version``
    (the oldest version kept, None if nothing can be deleted), the deleted paths by
    kind (``commits``, ``checkpoints``, ``checksums``, ``compactions``,
    ``unbackfilled``, ``sidecars``), all of them in ``deleted``, and ``dry_run``/``enabled``.
    """
    now = _now(now_ms)
    if retention_ms is not None and (isinstance(retention_ms, bool) or not isinstance(retention_ms, int)
                                     or retention_ms < 0):
        raise InvalidArgumentError(f"retention_ms must be a non-negative integer, got {retention_ms!r}")
    truncate_ms(0, truncate)  # validates before anything is read
    snapshot = table.snapshot()
    conf = snapshot.metadata.configuration
    enabled_raw = str(conf.get(ENABLE_EXPIRED_LOG_CLEANUP_KEY, "true")).strip().lower()
    enabled = enabled_raw != "false"
    retention = log_retention_ms(conf) if retention_ms is None else retention_ms
    cutoff_ts = truncate_ms(now - retention, truncate)
    result: dict[str, Any] = {
        "enabled": enabled, "dry_run": bool(dry_run), "cutoff_timestamp": cutoff_ts,
        "retention_ms": retention, "cutoff_version": None, "checkpoint_version": None,
        "commits": [], "checkpoints": [], "checksums": [], "compactions": [], "unbackfilled": [],
        "sidecars": [], "deleted": [],
    }
    if not enabled and not force:
        log.info("%s: %s=false, metadata cleanup skipped", table.uri, ENABLE_EXPIRED_LOG_CLEANUP_KEY)
        return result
    plan = _plan_cleanup(table, snapshot, cutoff_ts)
    result.update(cutoff_version=plan.cutoff_version, checkpoint_version=plan.checkpoint_version,
                  commits=plan.commits, checkpoints=plan.checkpoints, checksums=plan.checksums,
                  compactions=plan.compactions, unbackfilled=plan.unbackfilled)
    if plan.checkpoint_version is None:
        return result
    # Oldest first, commits before their checkpoints: a crash part-way leaves a log whose
    # oldest remaining files still start at a version that can be rebuilt.
    ordered = sorted(plan.commits + plan.checkpoints + plan.checksums,
                     key=lambda p: (p.rsplit("/", 1)[-1][:20], "checkpoint" in p))
    ordered += plan.compactions + plan.unbackfilled
    sidecars: list[str] = []
    if not dry_run:
        for rel in ordered:
            table.storage.delete(rel)
            _delete_local_companion(table, rel)
        if plan.checkpoints:  # as in Spark: only when some checkpoint went
            sidecars = _plan_sidecars(table, cutoff_ts)
            for rel in sidecars:
                table.storage.delete(rel)
                _delete_local_companion(table, rel)
    result["sidecars"] = sidecars
    result["deleted"] = ordered + sidecars
    log.info("%s: metadata cleanup %s %d files older than %s (kept from version %d)", table.uri,
             "would delete" if dry_run else "deleted", len(result["deleted"]), _fmt(cutoff_ts),
             plan.checkpoint_version)
    return result


# ===================================================================== vacuum
def _retention_ms(retention_hours: Any) -> int:
    if isinstance(retention_hours, bool) or not isinstance(retention_hours, (int, float)):
        raise InvalidArgumentError(f"retention_hours must be a number of hours, got {retention_hours!r}")
    if math.isnan(retention_hours) or math.isinf(retention_hours):
        raise InvalidArgumentError(f"retention_hours must be finite, got {retention_hours!r}")
    if retention_hours < 0:
        raise InvalidArgumentError(f"retention for vacuum can't be less than 0 hours, got {retention_hours}")
    return int(round(retention_hours * 3_600_000))


def is_hidden_name(name: str, partition_columns: Iterable[str], iceberg_metadata_hidden: bool = False) -> bool:
    """Delta Spark's ``DeltaTableUtils.isHiddenDirectory`` for one path component."""
    if iceberg_metadata_hidden and name == "metadata":
        return True
    if not (name.startswith(".") or name.startswith("_")):
        return False
    if name.startswith("_delta_index") or name.startswith("_change_data"):
        return False
    return not any(name.startswith(f"{c}=") for c in partition_columns)


def _iceberg_enabled(conf: dict[str, str]) -> bool:
    formats = conf.get("delta.universalFormat.enabledFormats", "")
    return "iceberg" in [f.strip().lower() for f in formats.split(",")]


@dataclass
class _Listed:
    rel: str
    mtime_ms: int
    size: int


def _walk_local(root: str, hidden) -> tuple[list[_Listed], list[str]]:
    """Files and directories under ``root`` (relative), pruning hidden names, not following links."""
    files: list[_Listed] = []
    dirs: list[str] = []
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            it = os.scandir(os.path.join(root, rel_dir) if rel_dir else root)
        except (FileNotFoundError, NotADirectoryError, PermissionError):
            continue
        with it:
            for e in it:
                if hidden(e.name) or (not rel_dir and e.name == LOG_DIR):
                    continue
                rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
                if e.is_dir(follow_symlinks=False):
                    dirs.append(rel)
                    stack.append(rel)
                elif e.is_file(follow_symlinks=False) or e.is_symlink():
                    try:
                        st = e.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    files.append(_Listed(rel, int(st.st_mtime * 1000), st.st_size))
    return files, dirs


def _walk_remote(table: "DeltaTable", hidden) -> list[_Listed]:
    out = []
    for info in table.storage.walk_files(""):
        rel = table.storage.relative(info.path)
        parts = rel.split("/")
        if parts[0] == LOG_DIR or any(hidden(p) for p in parts):
            continue
        out.append(_Listed(rel, info.mtime_ms, info.size))
    return out


def _relativize(paths: list[str], table: "DeltaTable") -> list[str]:
    """Log paths (relative, or absolute URIs) as root-relative paths; outside the root -> dropped."""
    storage = table.storage
    out = []
    root = storage.root.rstrip("/") + "/"
    for p in paths:
        if "://" in p or p.startswith("/") or p.startswith("file:"):
            if storage.is_local:
                u = urlparse(p)
                local = unquote(u.path) if u.scheme == "file" else (p if not u.scheme else None)
                if local is None or not os.path.abspath(local).startswith(root):
                    continue
                out.append(os.path.abspath(local)[len(root):])
            elif p.startswith(root):
                out.append(p[len(root):])
            continue
        out.append(p)
    return out


def _normalize_dots(paths: pa.Array) -> pa.Array:
    """Resolve ``.``/``..`` segments and doubled slashes (as Hadoop's Path does); rare, so in Python."""
    odd = pc.fill_null(pc.match_substring_regex(paths, r"(^|/)\.\.?(/|$)|//"), False)
    if not pc.any(odd).as_py():
        return paths
    fixed = []
    for p in paths.filter(odd).to_pylist():
        n = posixpath.normpath(p)
        fixed.append(None if n == ".." or n.startswith("../") else n)  # outside the root: no file here
    return pa.concat_arrays([paths.filter(pc.invert(odd)), pa.array(fixed, pa.string())])


def _dv_relative_paths(dv: pa.Array) -> list[str]:
    """Table-relative paths of deletion vector files referenced by a DV struct column."""
    if dv.null_count == len(dv):
        return []
    st = dv.field("storageType")
    mask = pc.fill_null(pc.is_in(st, value_set=pa.array(["u", "p"])), False)
    rows = dv.filter(mask)
    out = []
    for storage_type, value in zip(rows.field("storageType").to_pylist(), rows.field("pathOrInlineDv").to_pylist()):
        if not value:
            continue
        if storage_type == "p":
            out.append(value)
            continue
        prefix, encoded = value[:-20], value[-20:]
        try:
            raw = _z85_decode(encoded)
        except ValueError:
            continue
        hexs = raw.hex()
        uid = f"{hexs[0:8]}-{hexs[8:12]}-{hexs[12:16]}-{hexs[16:20]}-{hexs[20:32]}"
        name = f"deletion_vector_{uid}.bin"
        out.append(f"{prefix}/{name}" if prefix else name)
    return out


_Z85 = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
_Z85_INDEX = {c: i for i, c in enumerate(_Z85)}


def _z85_decode(text: str) -> bytes:
    if len(text) % 5:
        raise ValueError("Z85 text length must be a multiple of 5")
    out = bytearray()
    for i in range(0, len(text), 5):
        value = 0
        for c in text[i:i + 5]:
            if c not in _Z85_INDEX:
                raise ValueError(f"invalid Z85 character {c!r}")
            value = value * 85 + _Z85_INDEX[c]
        out += value.to_bytes(4, "big")
    return bytes(out)


def _valid_paths(table: "DeltaTable", snapshot: "Snapshot", delete_before: int) -> pa.Array:
    """Every root-relative path the latest snapshot or a young-enough tombstone references."""
    table_retention = deleted_file_retention_ms(snapshot.metadata.configuration)
    files = snapshot.files()
    # tombstones() keeps deletion_timestamp > now - table retention; ask for those > delete_before - 1
    tomb = snapshot.tombstones(now_ms=delete_before - 1 + table_retention)
    keep = pc.greater_equal(pc.fill_null(tomb.column("deletion_timestamp"), 0), delete_before)
    tomb = tomb.filter(keep)
    parts: list[pa.Array] = []
    for t in (files, tomb):
        if t.num_rows == 0:
            continue
        paths = t.column("path").combine_chunks()
        absolute = pc.fill_null(pc.or_(pc.match_substring(paths, "://"), pc.starts_with(paths, "/")), False)
        if pc.any(absolute).as_py():
            relative = paths.filter(pc.invert(absolute))
            fixed = _relativize(paths.filter(absolute).to_pylist(), table)
            paths = pa.concat_arrays([relative, pa.array(fixed, pa.string())])
        parts.append(_normalize_dots(paths))
        if "deletion_vector" in t.column_names:
            dv = t.column("deletion_vector").combine_chunks()
            dvs = _relativize(_dv_relative_paths(dv), table)
            if dvs:
                parts.append(pa.array(dvs, pa.string()))
    if not parts:
        return pa.array([], pa.string())
    return pa.concat_arrays([p.cast(pa.string()) for p in parts])


def vacuum(table: "DeltaTable", retention_hours: float | None = None, dry_run: bool = True,
           enforce_retention: bool = True, now_ms: int | None = None) -> dict[str, Any]:
    """Delete data files no longer referenced and older than the retention; dry run by default.

    Returns ``files_deleted`` (root-relative paths; what would be deleted on a dry run),
    ``num_files_deleted``, ``bytes_deleted``, ``dirs_deleted`` (empty directories
    removed), ``dry_run``, ``retention_hours`` and ``delete_before_timestamp``.
    """
    now = _now(now_ms)
    snapshot = table.snapshot()
    conf = snapshot.metadata.configuration
    table_retention = deleted_file_retention_ms(conf)
    retention = table_retention if retention_hours is None else _retention_ms(retention_hours)
    if enforce_retention and retention < table_retention:
        hours = math.ceil(table_retention / 3_600_000)
        raise InvalidArgumentError(
            f"refusing to vacuum {table.uri} with a retention of {retention / 3_600_000:g} hours, shorter "
            f"than the table's delta.deletedFileRetentionDuration ({hours} hours): readers of older "
            "snapshots and concurrent writers may still need those files. Use a longer retention, or pass "
            "enforce_retention=False if you are sure no operation older than that is running.")
    delete_before = now - retention
    pcols = tuple(snapshot.metadata.partition_columns)
    iceberg_hidden = _iceberg_enabled(conf)

    def hidden(name: str) -> bool:
        return is_hidden_name(name, pcols, iceberg_hidden)

    storage = table.storage
    if storage.is_local:
        listed, dirs = _walk_local(storage.root, hidden)
    else:
        listed, dirs = _walk_remote(table, hidden), []
    valid = _valid_paths(table, snapshot, delete_before)
    candidates = [f for f in listed if f.mtime_ms < delete_before]
    to_delete: list[_Listed] = []
    if candidates:
        cand = pa.array([f.rel for f in candidates], pa.string())
        referenced = pc.is_in(cand, value_set=pc.unique(valid)).to_numpy(zero_copy_only=False)
        to_delete = [f for f, ref in zip(candidates, referenced) if not ref]
    to_delete.sort(key=lambda f: f.rel)
    dirs_deleted = 0
    if not dry_run:
        for f in to_delete:
            storage.delete(f.rel)
            _delete_local_companion(table, f.rel)
        if storage.is_local:
            for d in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
                try:
                    os.rmdir(os.path.join(storage.root, d))
                    dirs_deleted += 1
                except OSError:
                    pass  # not empty (or already gone): keep it
    log.info("vacuum %s: %s %d files older than %s", table.uri, "would delete" if dry_run else "deleted",
             len(to_delete), _fmt(delete_before))
    return {
        "files_deleted": [f.rel for f in to_delete],
        "num_files_deleted": len(to_delete),
        "bytes_deleted": sum(f.size for f in to_delete),
        "dirs_deleted": dirs_deleted,
        "dry_run": bool(dry_run),
        "retention_hours": retention / 3_600_000,
        "delete_before_timestamp": delete_before,
    }
