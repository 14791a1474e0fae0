"""What a checkpoint written by parallel workers reads: the log segment cut into tasks.

A checkpoint of version v is built from the newest checkpoint at or below v and the commits
after it (the :class:`~.segment.LogSegment`). For parallel workers this module cuts those
files into :class:`LogSource` tasks of bounded size: runs of whole row groups of checkpoint
parquet files (classic parts, V2 manifests and their sidecars) and runs of JSON commits
by bytes, and estimates how many actions they hold, before any of them is read in full.
It also finds protocol and metadata the way a driver of a huge log must: from the newest
commits that carry them, keeping no other commit in memory.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from ..base.actions import Metadata, Protocol
from ..read.action_lines import may_carry
from ..read.checkpoint_reader import read_checkpoint
from ..read.commit_reader import read_blobs
from ..read.data_paths import filesystem_path, sidecar_location
from ..base.errors import CorruptLogError
from ..base.names import LogFile
from ..read.protocol_metadata import load_protocol_metadata, newest_protocol_metadata
from ..read.segment import LogSegment
from ..base.storage import Storage

#: Rows of checkpoint parquet read by one task (row groups are never split).
ROWS_PER_SOURCE = 500_000
#: Bytes of JSON commits read by one task.
COMMIT_BYTES_PER_SOURCE = 64 << 20
#: Rough bytes per action in a JSON commit, to estimate the checkpoint's size before reading it.
_JSON_BYTES_PER_ACTION = 300


@dataclass(frozen=True)
class LogSource:
    """What one task reads: row groups of a checkpoint parquet file, a JSON checkpoint, or a run of commits.

    ``non_file`` says whether the source can hold ``txn``/``domainMetadata`` actions (a sidecar cannot).
    """

    kind: str                                 # "parquet" | "json_checkpoint" | "commits"
    version: int                              # checkpoint version, or the first commit's
    files: tuple[LogFile, ...]
    row_groups: tuple[int, ...] = ()
    non_file: bool = True


def protocol_metadata(storage: Storage, segment: LogSegment) -> tuple[Protocol, Metadata, list]:
    """Protocol and metadata of the segment's version, reading commits newest first and keeping none.

    ``load_snapshot`` holds every commit of the segment in memory; a driver planning a
    checkpoint of a huge log must not. Only the commits holding a protocol or metaData
    line are kept (a handful) and returned: their metaData lines name partition columns.
    """
    carrying: list[tuple[int, bytes, str]] = []
    for commit in reversed(segment.commits):
        blob = read_blobs(storage, [commit])[0]
        if may_carry(blob[1], "protocol") or may_carry(blob[1], "metaData"):
            carrying.insert(0, blob)
            protocol, metadata = newest_protocol_metadata(carrying)
            if protocol is not None and metadata is not None:
                break
    return (*load_protocol_metadata(storage, segment, carrying), carrying)


def segment_sources(storage: Storage, segment: LogSegment) -> tuple[list[LogSource], int]:
    """The sources of a segment and the estimated number of actions they hold."""
    sources: list[LogSource] = []
    estimate = 0
    cp = segment.checkpoint_version
    for f in segment.checkpoint_files:
        if f.fmt == "json":
            sources.append(LogSource("json_checkpoint", cp, (f,)))   # a V2 JSON manifest: small
            estimate += f.size // _JSON_BYTES_PER_ACTION
        else:
            n, split = _parquet_sources(storage, f, cp, non_file=True)
            sources += split
            estimate += n
        if f.uuid is not None:     # a V2 checkpoint: its sidecars hold the file actions
            content = read_checkpoint(storage, [f], cp, with_files=False)
            for ref in (o["sidecar"] for o in content.others if "sidecar" in o):
                n, split = _parquet_sources(storage, _sidecar_file(storage, ref, cp), cp, non_file=False)
                sources += split
                estimate += n
    run: list[LogFile] = []
    run_bytes = 0
    for c in segment.commits:
        run.append(c)
        run_bytes += c.size
        if run_bytes >= COMMIT_BYTES_PER_SOURCE:
            sources.append(LogSource("commits", run[0].version, tuple(run)))
            run, run_bytes = [], 0
        estimate += c.size // _JSON_BYTES_PER_ACTION
    if run:
        sources.append(LogSource("commits", run[0].version, tuple(run)))
    return sources, estimate


def _sidecar_file(storage: Storage, ref: dict[str, Any], version: int) -> LogFile:
    path = str(ref.get("path") or "")
    if not path:
        raise CorruptLogError(f"checkpoint {version} names a sidecar without a path")
    full = filesystem_path(storage, sidecar_location(path))
    return LogFile("checkpoint", version, full, int(ref.get("sizeInBytes") or 0), fmt="parquet")


def _parquet_sources(storage: Storage, f: LogFile, version: int, non_file: bool) -> tuple[int, list[LogSource]]:
    """(rows, sources) of one checkpoint parquet file: runs of whole row groups of about ROWS_PER_SOURCE rows."""
    try:
        meta = open_parquet(storage, f.path).metadata
    except FileNotFoundError:
        raise CorruptLogError(f"checkpoint {version} needs {f.path}, which is missing", path=f.path) from None
    sources: list[LogSource] = []
    groups: list[int] = []
    rows = 0
    for i in range(meta.num_row_groups):
        groups.append(i)
        rows += meta.row_group(i).num_rows
        if rows >= ROWS_PER_SOURCE:
            sources.append(LogSource("parquet", version, (f,), tuple(groups), non_file))
            groups, rows = [], 0
    if groups or not sources:
        sources.append(LogSource("parquet", version, (f,), tuple(groups), non_file))
    return meta.num_rows, sources


def open_parquet(storage: Storage, path: str) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path if storage.is_local else storage.open(path))
    except (FileNotFoundError, CorruptLogError):
        raise
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise CorruptLogError(f"checkpoint {path} cannot be read as parquet: {e}", path=path) from None


class RowGroups:
    """Some row groups of a parquet file, looking like a ``ParquetFile`` to the checkpoint reader."""

    def __init__(self, storage: Storage, path: str, row_groups: tuple[int, ...]):
        self.file = open_parquet(storage, path)
        self.row_groups = list(row_groups)
        self.schema_arrow = self.file.schema_arrow

    def read(self, columns: list[str], row_groups: list[int] | None = None, use_threads: bool = True) -> pa.Table:
        return self.file.read_row_groups(self.row_groups if row_groups is None else row_groups, columns=columns,
                                         use_threads=use_threads)

    def row_groups_with_values(self, columns: list[str]) -> list[int]:
        """All of this worker's groups (the checkpoint reader's pruning hook; not pruned here)."""
        return self.row_groups
