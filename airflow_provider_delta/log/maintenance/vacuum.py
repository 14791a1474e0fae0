"""Vacuum: deleting data files that no snapshot within the retention references.

It deletes files for good, so it follows Delta Spark, the reference, and refuses
rather than guess.

Vacuum (Delta Spark ``VacuumCommand``): deletes files under the table root that
neither the latest snapshot nor a tombstone younger than the retention references,
whose modification time is older than ``now - retention`` (default
``delta.deletedFileRetentionDuration``, 1 week). A shorter retention than the
table's is refused unless ``enforce_retention=False`` (Spark's
``retentionDurationCheck``). Hidden names (``_`` or ``.`` prefix) are skipped at
any depth, except ``_change_data`` (change data files expire by age),
``_delta_index`` and partition directories such as ``_col=x`` of partition column
``_col``; ``_delta_log`` is never touched, symlinked directories are not followed
(but a file that a live path reaches through one inside the table is kept),
and a file is only ever deleted if the listing of the table root found it. Dry run
is the default.
"""
from __future__ import annotations

import logging
import math
import os
from dataclasses import dataclass
from typing import Any, Iterable
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.compute as pc

from ..read.data_paths import ABSOLUTE_PATH_REGEX, Undecided, split_uri, table_relative_to
from ..read.deletion_vectors import dv_file_path
from ..base.errors import DeltaError, InvalidArgumentError
from ..base.features import Operation
from ..base.iceberg_compat import uniform_iceberg_enabled
from ..base.intervals import deleted_file_retention_ms
from ..base.catalog_store.table_source import CatalogTableSource
from ..base.names import LOG_DIR, STAGED_COMMITS_DIR, parse_uuid_commit_name
from ..read.commit_reader import parse_json_lines
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog
from ..base.timeutil import format_ms, now_or

log = logging.getLogger(__name__)


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


@dataclass
class _Listed:
    rel: str
    mtime_ms: int
    size: int


def _walk_local(root: str, hidden) -> tuple[list[_Listed], list[str], set[str]]:
    """Files, directories and symlinks (to directories or files) under ``root`` (relative), pruning
    hidden names, not following links."""
    files: list[_Listed] = []
    dirs: list[str] = []
    links: set[str] = set()
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
                elif e.is_symlink() and e.is_dir():
                    links.add(rel)  # no data file, but live paths may go through it
                    continue
                elif e.is_file(follow_symlinks=False) or e.is_symlink():
                    try:
                        st = e.stat(follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if e.is_symlink():
                        links.add(rel)  # a live path naming the link keeps its target too
                    files.append(_Listed(rel, int(st.st_mtime * 1000), st.st_size))
    return files, dirs, links


def _through_links(root: str, paths: pa.Array, links: set[str]) -> list[str]:
    """Where referenced paths that go through a symlink inside the table (a directory, or the file) really lead.

    The walk does not follow links, so ``ln/x.parquet`` (``ln -> realdir``) is listed as
    ``realdir/x.parquet``; it is live all the same, and vacuum keeps it. Each path with a linked
    directory among its prefixes is resolved on disk and, if it leads under the root, added as
    root-relative. A live path that is itself a link (``alias.parquet -> realdir/x.parquet``) keeps
    its target the same way.
    """
    if not links:
        return []
    real_root = os.path.realpath(root)
    out = []
    for p in paths.to_pylist():
        parts = p.split("/")
        if not any("/".join(parts[:i]) in links for i in range(1, len(parts) + 1)):
            continue
        for hop in _link_chain(os.path.join(root, p)):
            rel = os.path.relpath(hop, real_root)
            if rel != ".." and not rel.startswith("../"):
                out.append(rel.replace(os.sep, "/"))
    return out


def _link_chain(path: str, max_hops: int = 40) -> list[str]:
    """Every file a path leads through, resolved: its target and, when the path is a link to a
    link, each link on the way (an unreferenced link in a chain is as live as the target: deleting
    it leaves the live path dangling). Stops at a loop or after ``max_hops``."""
    out = [os.path.realpath(path)]
    cur = path
    for _ in range(max_hops):
        if not os.path.islink(cur):
            break
        nxt = os.path.join(os.path.dirname(cur), os.readlink(cur))
        if not os.path.islink(nxt):
            break
        cur = nxt
        out.append(os.path.join(os.path.realpath(os.path.dirname(cur)), os.path.basename(cur)))
    return out


def _walk_remote(table: TableLog, hidden) -> list[_Listed]:
    out = []
    for info in table.storage.walk_files(""):
        rel = table.storage.relative(info.path)
        parts = rel.split("/")
        if parts[0] == LOG_DIR or any(hidden(p) for p in parts):
            continue
        out.append(_Listed(rel, info.mtime_ms, info.size))
    return out


#: Log paths that are absolute (``scheme:/...`` or ``/...``) or hold ``.``/``..`` segments, doubled
#: slashes or a trailing one (``x.parquet/`` is ``x.parquet`` to Hadoop's file systems): the few that go
#: through :func:`~..read.data_paths.table_relative_to` one by one.
_NOT_PLAIN = ABSOLUTE_PATH_REGEX + r"|(^|/)\.\.?(/|$)|//|/$"


@dataclass
class _Referenced:
    """What the log references under the root: exact root-relative paths, and the path parts of
    references this package cannot place (a listed file whose path ends one of them is kept)."""

    paths: pa.Array
    undecided: list[str]
    #: a live local path walks through ``..``: the directories on its way (even an empty one, the target of
    #: a link it goes through) are part of it, so no empty directory is removed
    keep_dirs: bool = False

    def keeps(self, rel: str) -> bool:
        return any(p == "/" + rel or p.endswith("/" + rel) for p in self.undecided)


def _place(storage, paths: list[str], out: list[str], undecided: list[str]) -> None:
    """Add each path's root-relative form to ``out`` (outside the root: nothing), or to ``undecided``.

    A local path with a ``..`` segment names two files when a directory before the ``..`` is a
    symlink: the one Hadoop's lexical resolution names (Delta Spark reads it) and the one the
    operating system reaches (``ln/../x`` is ``<ln's target>/../x``). Our reader resolves lexically
    too (:func:`~..read.data_paths.locate`), but a reader that opens the path through the operating
    system (an older version of this package, another engine) reads the other: both are kept.
    """
    relative = table_relative_to(storage)           # the root's location once, not for every path
    for p in paths:
        where = relative(p)
        if isinstance(where, Undecided):
            undecided.append(where.path)
        elif where is not None:
            out.append(where)
        if storage.is_local and ".." in p.split("/"):
            physical = _physical(storage, p)
            if physical is not None and physical != where:
                out.append(physical)


def _physical(storage, path: str) -> str | None:
    """Where the operating system takes a local log path, root-relative (None: outside the root or not local)."""
    parts = split_uri(path)
    if parts is None:
        full = os.path.join(storage.root, path)
    elif parts.scheme in ("", "file") and parts.authority in ("", "localhost"):
        full = parts.path
    else:
        return None
    head, tail = os.path.split(full)
    rel = os.path.relpath(os.path.join(os.path.realpath(head), tail), os.path.realpath(storage.root))
    return None if rel == ".." or rel.startswith("../") else rel.replace(os.sep, "/")


def _dv_paths(dv: pa.Array) -> list[str]:
    """Paths of the deletion vector files a DV struct column references (relative or absolute)."""
    if dv.null_count == len(dv):
        return []
    st = dv.field("storageType")
    mask = pc.fill_null(pc.is_in(st, value_set=pa.array(["u", "p"])), False)
    rows = dv.filter(mask)
    out = []
    for storage_type, value in zip(rows.field("storageType").to_pylist(), rows.field("pathOrInlineDv").to_pylist()):
        if not value:
            continue
        try:
            path = dv_file_path({"storageType": storage_type, "pathOrInlineDv": value})
        except ValueError:
            continue
        out.append(path)
        if storage_type == "p" and path != value:
            out.append(value)       # kept under its raw spelling too: a writer may not have encoded it
    return out


def _valid_paths(table: TableLog, snapshot: Snapshot, delete_before: int) -> _Referenced:
    """Every root-relative path the latest snapshot or a young-enough tombstone references.

    Paths come decoded from the snapshot; every form the reader opens (relative, absolute URI
    of this root under any scheme of its store, scheme-less absolute) is placed by the one rule
    in :mod:`..read.data_paths`.
    """
    table_retention = deleted_file_retention_ms(snapshot.metadata.configuration)
    files = snapshot.files()
    # tombstones() keeps deletion_timestamp > now - table retention; ask for those > delete_before - 1
    tomb = snapshot.tombstones(now_ms=delete_before - 1 + table_retention)
    keep = pc.greater_equal(pc.fill_null(tomb.column("deletion_timestamp"), 0), delete_before)
    tomb = tomb.filter(keep)
    parts: list[pa.Array] = []
    placed: list[str] = []
    undecided: list[str] = []
    keep_dirs = False
    for t in (files, tomb):
        if t.num_rows == 0:
            continue
        paths = t.column("path").combine_chunks().cast(pa.string())
        odd = pc.fill_null(pc.match_substring_regex(paths, _NOT_PLAIN), False)
        if pc.any(odd).as_py():
            odd_paths = paths.filter(odd).to_pylist()
            keep_dirs = keep_dirs or any(".." in p.split("/") for p in odd_paths)
            _place(table.storage, odd_paths, placed, undecided)
            paths = paths.filter(pc.invert(odd))
        parts.append(paths)
        if "deletion_vector" in t.column_names:
            _place(table.storage, _dv_paths(t.column("deletion_vector").combine_chunks()), placed, undecided)
    parts.append(pa.array(placed, pa.string()))
    return _Referenced(pa.concat_arrays(parts), undecided, keep_dirs)


def _staged_data_paths(table: TableLog, snapshot: Snapshot) -> list[str] | None:
    """Data files that staged commits after ``snapshot``, or at its versions but not ratified there, add
    (catalog-managed tables): a staged or in-flight commit or multi-table transaction (also one whose
    proposed version was taken: it is re-staged on publish) may still be ratified and then reference them, so
    vacuum keeps them (cleanup removes abandoned staged commits first). None: a staged commit could
    not be read, so vacuum deletes nothing (fail safe)."""
    paths: list[str] = []
    listed = [(e.name, parse_uuid_commit_name(e.name)) for e in table.storage.list_dir(STAGED_COMMITS_DIR)]
    listed = [(name, p[0]) for name, p in listed if p is not None]
    ratified = _ratified_staged(table, snapshot, [v for _, v in listed if v <= snapshot.version])
    for name, version in listed:
        if version <= snapshot.version and (ratified is None or ratified.get(version) == name):
            continue                  # in the snapshot already (or not a catalog's table)
        rel = f"{STAGED_COMMITS_DIR}/{name}"
        try:
            actions = parse_json_lines(table.storage.read_bytes(rel), rel)
        except FileNotFoundError:
            continue                  # went meanwhile (rejected, aborted or cleaned up)
        except DeltaError as err:
            log.warning("vacuum of %s deletes nothing: staged commit %s cannot be read (%s)", table.uri, rel, err)
            return None
        # Every add of the line, not only the line's one action by action_lines.action_kind: a staged commit
        # is not yet part of any table state, so vacuum keeps what any reading of it might add (a superset
        # of the rule's answer; keeping more is the safe side of a delete).
        paths += [unquote(a["add"]["path"]) for a in actions if a.get("add") is not None]
    return paths


def _ratified_staged(table: TableLog, snapshot: Snapshot, versions: list[int]) -> dict[int, str] | None:
    """``{version: staged file name}`` the catalog ratified among ``versions``; None when the table is
    not opened through a catalog. A staged commit at or before the snapshot's version that is NOT the
    ratified one may be a live group's member whose version another commit took: it is re-staged on
    publish and still adds its data files."""
    source = table.commit_owner
    if not isinstance(source, CatalogTableSource):
        return None
    return source.store.ratified_names(snapshot.metadata.id, versions)


def vacuum(table: TableLog, retention_hours: float | None = None, dry_run: bool = True,
           enforce_retention: bool = True, now_ms: int | None = None,
           job: dict[str, Any] | None = None) -> dict[str, Any]:
    """Delete data files no longer referenced and older than the retention; dry run by default.

    Returns ``files_deleted`` (root-relative paths; what would be deleted on a dry run),
    ``num_files_deleted``, ``bytes_deleted``, ``dirs_deleted`` (empty directories
    removed), ``dry_run``, ``retention_hours``, ``delete_before_timestamp`` and ``job``.
    ``job`` (dag_id, task_id, run_id, try_number) says who ran it: vacuum commits
    nothing, so it goes into the log line and the result instead of a commitInfo.
    """
    if job is not None and not isinstance(job, dict):
        raise InvalidArgumentError("job must be a dict (e.g. dag_id, task_id, run_id, try_number)")
    for name, value in (("dry_run", dry_run), ("enforce_retention", enforce_retention)):
        if not isinstance(value, bool):     # None or "" would read as False: delete, or skip the retention check
            raise InvalidArgumentError(f"{name} must be True or False, got {value!r}; nothing was deleted")
    now = now_or(now_ms)
    snapshot = table.snapshot()
    table.require(snapshot, Operation.VACUUM)     # vacuumProtocolCheck: the write protocol, always
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
    iceberg_hidden = uniform_iceberg_enabled(conf)

    def hidden(name: str) -> bool:
        return is_hidden_name(name, pcols, iceberg_hidden)

    storage = table.storage
    if storage.is_local:
        listed, dirs, links = _walk_local(storage.root, hidden)
    else:
        (listed, dirs), links = (_walk_remote(table, hidden), []), set()
    valid = _valid_paths(table, snapshot, delete_before)
    linked = _through_links(storage.root, valid.paths, links) if links else []
    if linked:
        valid = _Referenced(pa.concat_arrays([valid.paths, pa.array(linked, pa.string())]), valid.undecided,
                            valid.keep_dirs)
    staged = _staged_data_paths(table, snapshot)
    if staged:
        extra: list[str] = []
        _place(table.storage, staged, extra, valid.undecided)
        valid = _Referenced(pa.concat_arrays([valid.paths, pa.array(extra, pa.string())]), valid.undecided,
                            valid.keep_dirs)
    candidates = [f for f in listed if f.mtime_ms < delete_before] if staged is not None else []
    to_delete: list[_Listed] = []
    if candidates:
        cand = pa.array([f.rel for f in candidates], pa.string())
        referenced = pc.is_in(cand, value_set=pc.unique(valid.paths)).to_numpy(zero_copy_only=False)
        to_delete = [f for f, ref in zip(candidates, referenced) if not ref and not valid.keeps(f.rel)]
    to_delete.sort(key=lambda f: f.rel)
    dirs_deleted = 0
    if not dry_run:
        for f in to_delete:
            storage.delete_with_crc_companion(f.rel)
        if storage.is_local and not valid.keep_dirs:
            for d in sorted(dirs, key=lambda d: d.count("/"), reverse=True):
                try:
                    os.rmdir(os.path.join(storage.root, d))
                    dirs_deleted += 1
                except OSError:
                    pass  # not empty (or already gone): keep it
    log.info("vacuum %s: %s %d files older than %s%s", table.uri, "would delete" if dry_run else "deleted",
             len(to_delete), format_ms(delete_before), f" (job {job})" if job else "")
    return {
        "files_deleted": [f.rel for f in to_delete],
        "num_files_deleted": len(to_delete),
        "bytes_deleted": sum(f.size for f in to_delete),
        "dirs_deleted": dirs_deleted,
        "dry_run": bool(dry_run),
        "retention_hours": retention / 3_600_000,
        "delete_before_timestamp": delete_before,
        "job": job,
    }
