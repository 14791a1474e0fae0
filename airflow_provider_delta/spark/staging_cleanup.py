"""Removing the staging folders of writes that died: ``_delta_spark_staging/<write id>/``.

A write's staging folder is removed by the write itself, on success and on failure; a
driver killed with ``kill -9`` (or a lost executor host) leaves it behind, with a full
copy of the output. Neither VACUUM (ours or Delta Spark's) looks into folders whose name
starts with ``_``, so nothing else would ever remove it.

What is removed, and why that is safe:

* only folders under ``_delta_spark_staging/`` of this table, one write id at a time;
* only when nothing in the folder changed for ``retention_hours`` (default one week, the
  default of ``delta.deletedFileRetentionDuration``): a running write adds files as its
  Spark tasks finish and moves them out as soon as Spark's job commits, so a folder
  untouched that long belongs to no running attempt;
* never a folder holding a file the table's log references (no writer of this package
  commits files there; a folder some other tool committed from is kept, with a warning).

Data files moved into the table by a write that died before its commit are ordinary
unreferenced files: VACUUM removes them after the retention period.
"""
from __future__ import annotations

import logging
import os
import time
from typing import TYPE_CHECKING

from ..log import DeltaError, TableNotFoundError
from .staged_write import STAGING_DIR

if TYPE_CHECKING:  # pragma: no cover
    from ..log import DeltaTable

log = logging.getLogger(__name__)

#: how long a staging folder must be untouched before it is removed (hours)
STAGING_RETENTION_HOURS = 7 * 24.0


def _newest_change_ms(storage, rel: str) -> int:
    """The newest modification time (epoch ms) of anything under ``rel``: files, and folders where
    they exist (a local write's folders change when Spark's tasks create or rename files)."""
    newest = 0
    if storage.is_local:
        for d, _dirs, files in os.walk(storage.path(rel)):
            for path in [d] + [os.path.join(d, f) for f in files]:
                try:
                    newest = max(newest, int(os.stat(path).st_mtime * 1000))
                except FileNotFoundError:
                    continue
        return newest
    for info in storage.walk_files(rel):
        newest = max(newest, int(info.mtime_ms))
    return newest


def _write_ids(storage) -> list[str]:
    if storage.is_local:
        try:
            return sorted(e.name for e in os.scandir(storage.path(STAGING_DIR)) if e.is_dir())
        except FileNotFoundError:
            return []
    base = storage.path(STAGING_DIR).rstrip("/") + "/"
    ids = set()
    for info in storage.walk_files(STAGING_DIR):
        rest = info.path.split(base, 1)[-1]
        if "/" in rest:
            ids.add(rest.split("/", 1)[0])
    return sorted(ids)


def _referenced_write_ids(table: "DeltaTable") -> set[str] | None:
    """Write ids of staging folders the latest snapshot references files in; None if unknown."""
    try:
        paths = table.snapshot().files().column("path").to_pylist()
    except TableNotFoundError:
        return set()
    except DeltaError:
        return None
    prefix = STAGING_DIR + "/"
    return {p[len(prefix):].split("/", 1)[0] for p in paths if p.startswith(prefix)}


def clean_stale_staging(table: "DeltaTable", retention_hours: float = STAGING_RETENTION_HOURS,
                        now_ms: int | None = None) -> list[str]:
    """Remove the staging folders of ``table`` untouched for ``retention_hours``; return their write ids.

    Fails safe: a folder is kept when its age cannot be read, when the log references a file
    in it, or when the log cannot be read at all.
    """
    storage = table.storage
    now_ms = int(time.time() * 1000) if now_ms is None else now_ms
    limit = now_ms - int(retention_hours * 3_600_000)
    stale = []
    for write_id in _write_ids(storage):
        try:
            if _newest_change_ms(storage, f"{STAGING_DIR}/{write_id}") < limit:
                stale.append(write_id)
        except OSError:
            continue
    if not stale:
        return []
    referenced = _referenced_write_ids(table)
    if referenced is None:
        log.warning("cannot read the log of %s: its stale staging folders are kept", table.uri)
        return []
    removed = []
    for write_id in stale:
        if write_id in referenced:
            log.warning("%s/%s/ is stale but the log of %s references files in it: kept", STAGING_DIR, write_id,
                        table.uri)
            continue
        try:
            storage.fs.rm(storage.path(f"{STAGING_DIR}/{write_id}"), recursive=True)
        except (OSError, FileNotFoundError) as e:
            log.warning("could not remove the stale staging folder %s/%s of %s: %s", STAGING_DIR, write_id,
                        table.uri, e)
            continue
        removed.append(write_id)
    if removed:
        log.info("removed %d staging folder(s) of dead writes from %s: %s", len(removed), table.uri, removed)
    return removed
