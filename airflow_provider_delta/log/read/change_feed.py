"""The change data feed: the rows that a range of commits inserted, deleted or updated.

``DeltaTable.changes(start, end)`` reads commits ``start``..``end`` (both included)
and returns their changed rows (:mod:`.change_rows` says which rows a commit
changed) with three columns added, as PROTOCOL.md's change data readers do:

* ``_change_type``: ``insert``, ``delete``, ``update_preimage``, ``update_postimage``;
* ``_commit_version`` (int64): the version of the commit;
* ``_commit_timestamp`` (timestamp[us, UTC]): the commit's time by the in-commit
  timestamps RFC, i.e. its ``inCommitTimestamp`` when ICT is enabled at that
  version, else its log file's modification time monotonized as Delta Spark does
  (:mod:`.commit_timestamps` holds that rule).

The feed exists only where ``delta.enableChangeDataFeed`` was on: every version of
the range must have it in the metadata in effect at that version, or the read is
refused naming the first version without it. Commit files already cleaned up and
data or change files already vacuumed are refused too, naming what is gone. Rows
are read with the schema of the range's last version; a column added in the range
reads as nulls in older files, as in ``to_pyarrow``. A remove without its optional
``partitionValues`` gets them from the file's add in the version before
(:mod:`.remove_details`), so its deleted rows keep their partition columns.

Bounds may be timestamps: the start is the first commit at or after it, the end the
last commit at or before it, both resolved like ``snapshot(timestamp=...)``
(:func:`.history.version_at`).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from ..base import arrow_build as ab
from ..base.action_schemas import FILE_COLUMNS, empty_file_actions
from ..base.actions import Metadata, Protocol
from .action_lines import action_kind
from .change_rows import CHANGE_TYPE, cdc_rows, file_action_rows
from .column_mapping import partition_keys
from .commit_reader import read_blobs
from .commit_timestamps import commit_timestamp
from ..base.errors import (ChangeDataFeedNotEnabledError, DataFileNotFoundError, InvalidArgumentError,
                     TimestampOutOfRangeError, VersionNotFoundError)
from ..base.features import CHANGE_DATA_FEED_PROPERTY, is_true
from .history import version_at
from .protocol_metadata import newest_protocol_metadata, parse_protocol_metadata
from .remove_details import complete_removes
from .replay import actions_from_dicts, parse_json_logs
from .snapshot import Snapshot
from ..base.timeutil import format_ms, to_epoch_ms

if TYPE_CHECKING:  # pragma: no cover
    from .table_log import TableLog

COMMIT_VERSION = "_commit_version"
COMMIT_TIMESTAMP = "_commit_timestamp"
#: the columns a change row carries besides the table's
CHANGE_COLUMNS = (CHANGE_TYPE, COMMIT_VERSION, COMMIT_TIMESTAMP)
COMMIT_TIMESTAMP_TYPE = pa.timestamp("us", tz="UTC")


def change_feed_enabled(metadata: Metadata) -> bool:
    """Whether writers record change data under ``metadata`` (``delta.enableChangeDataFeed``)."""
    return is_true(metadata.configuration, CHANGE_DATA_FEED_PROPERTY)


# ------------------------------------------------------------------------- bounds
def _is_version(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def resolve_start(latest: Snapshot, value: Any = None, timestamp: Any = None) -> int:
    """The first version of the range: ``value`` if a version, else the first commit at or after the time.

    A time before the earliest commit starts at the earliest version that can be read;
    a time after the latest commit is a TimestampOutOfRangeError (no commit is there yet).
    """
    if timestamp is None and not _is_version(value):
        timestamp = value
    elif timestamp is None:
        return value
    elif value is not None:
        raise InvalidArgumentError("pass the start as a version or as a timestamp, not both")
    ts = to_epoch_ms(timestamp)
    try:
        at_or_before = version_at(latest, ts, allow_after_latest=True)
    except TimestampOutOfRangeError:       # before the earliest commit: start there
        earliest = latest.segment.listing.earliest_recreatable()
        return int(earliest) if earliest is not None else 0
    if latest.commit_timestamp(at_or_before) == ts:
        return at_or_before
    if at_or_before == latest.version:
        raise TimestampOutOfRangeError(
            f"start timestamp {format_ms(ts)} is after the latest commit of {latest.uri} "
            f"(version {latest.version} at {format_ms(latest.timestamp)}): there are no changes yet",
            timestamp=ts, latest=latest.timestamp)
    return at_or_before + 1


def resolve_end(latest: Snapshot, value: Any = None, timestamp: Any = None) -> int:
    """The last version of the range: ``value`` if a version, else the last commit at or before the time
    (the latest version for a time after it); None for both means the latest version."""
    if value is not None and timestamp is not None:
        raise InvalidArgumentError("pass the end as a version or as a timestamp, not both")
    if _is_version(value):
        return value
    timestamp = value if timestamp is None else timestamp
    if timestamp is None:
        return latest.version
    return version_at(latest, to_epoch_ms(timestamp), allow_after_latest=True)


# -------------------------------------------------------------------------- reading
def _check_range(latest: Snapshot, start: int, end: int) -> None:
    """Versions that exist, in order, with every commit file still in the log."""
    if start < 0:
        raise InvalidArgumentError(f"start version must be 0 or more, got {start}")
    if start > end:
        raise InvalidArgumentError(f"start version {start} is after end version {end}")
    if end > latest.version:
        raise VersionNotFoundError(f"end version {end} of {latest.uri} does not exist yet (latest: "
                                   f"{latest.version})", version=end, latest=latest.version)
    listing = latest.segment.listing
    present = sorted(v for v in listing.commits if start <= v <= end)
    if len(present) != end - start + 1:
        missing = sorted(set(range(start, min(end, start + len(present) + 10) + 1)) - set(present))[:10]
        first = min(listing.commits) if listing.commits else None
        raise VersionNotFoundError(
            f"the change data of versions {start}..{end} of {latest.uri} cannot be read: commit file(s) of "
            f"version(s) {missing} are gone (cleaned up after delta.logRetentionDuration; the oldest commit "
            f"file left is version {first})", version=missing[0] if missing else start,
            earliest=first, latest=latest.version)


def _columns(schema: pa.Schema, columns: Iterable[str] | None) -> list[str]:
    names = list(schema.names) + list(CHANGE_COLUMNS)
    if columns is None:
        return names
    if isinstance(columns, str):
        raise InvalidArgumentError("columns must be a list of column names, not a string")
    columns = list(columns)
    unknown = [c for c in columns if c not in names]
    if unknown:
        raise InvalidArgumentError(f"columns {unknown} are neither in the table schema {schema.names} "
                                   f"nor change-feed columns {list(CHANGE_COLUMNS)}")
    return columns


class _RangeReader:
    """What every commit of one range is read with: the end version's schema and the table's storage."""

    def __init__(self, end_snap: Snapshot):
        self.snap = end_snap

    def rows(self, version: int, adds: pa.Table, removes: pa.Table, cdc: list[dict[str, Any]]) -> pa.Table:
        try:
            if cdc:
                files = actions_from_dicts(cdc, True, [version] * len(cdc), list(range(len(cdc))))
                return cdc_rows(self.snap, files.select(FILE_COLUMNS))
            return file_action_rows(self.snap, adds, removes)
        except DataFileNotFoundError as e:
            raise DataFileNotFoundError(
                f"the change data of version {version} of {self.snap.uri} cannot be read: file {e.path!r} is "
                "gone (vacuumed after delta.deletedFileRetentionDuration?)", path=e.path) from None


def read_changes(log: "TableLog", start: Any = None, end: Any = None, columns: Iterable[str] | None = None, *,
                 start_timestamp: Any = None, end_timestamp: Any = None) -> pa.Table:
    """The change rows of versions ``start``..``end`` (see the module docstring)."""
    latest = log.snapshot()
    first = resolve_start(latest, start, start_timestamp)
    last = resolve_end(latest, end, end_timestamp)
    _check_range(latest, first, last)
    end_snap = latest if last == latest.version else log.snapshot(version=last)
    names = _columns(end_snap.schema, columns)
    start_snap = log.snapshot(version=first)
    protocol, metadata = start_snap.protocol, start_snap.metadata
    listing, storage = latest.segment.listing, latest.storage
    blobs = read_blobs(storage, [listing.commits[v] for v in range(first, last + 1)])
    reader = _RangeReader(end_snap)
    pieces = []
    for version, data, path in blobs:
        if version > first:
            protocol, metadata = _in_effect(protocol, metadata, (version, data, path), latest.uri)
        if not change_feed_enabled(metadata):
            raise ChangeDataFeedNotEnabledError(
                f"{latest.uri} has no change data for version {version}: {CHANGE_DATA_FEED_PROPERTY} was not "
                f"enabled at that version (requested range {first}..{last})", version=version)
        parsed = parse_json_logs([(version, data, path)], _partition_keys(metadata, end_snap))
        fa = parsed.file_actions
        is_add = fa.column("is_add")
        # a line is its first action in SingleAction.unwrap's order, as Delta Spark's CDCReader reads it:
        # {"txn"|"metaData"|"protocol": ..., "cdc": C} holds no change file
        cdc = [a["cdc"] for _, a in parsed.others if action_kind(a) == "cdc" and isinstance(a["cdc"], dict)]
        removes = fa.filter(pc.invert(is_add))
        if metadata.partition_columns and not cdc:     # a remove may lack its partitionValues
            removes = complete_removes(removes, lambda v=version: _files_before(log, v),
                                       f"{latest.uri} version {version}")
        rows = reader.rows(version, fa.filter(is_add), removes, cdc)
        ts = commit_timestamp(storage, version, protocol, metadata, listing, blob=data)
        pieces.append(_stamped(rows, version, ts))
    out_schema = change_schema(end_snap.schema)
    table = pa.concat_tables([p.select(out_schema.names).cast(out_schema) for p in pieces]) if pieces \
        else out_schema.empty_table()
    # one chunk per column: consumers that walk record batches (pyspark's createDataFrame among
    # them) would otherwise see the per-commit pieces misaligned across columns
    return table.select(names).combine_chunks()


def read_changes_after(log: "TableLog", processed: int | None, end: Any = None,
                       columns: Iterable[str] | None = None) -> pa.Table:
    """The changes after version ``processed`` (None: all, from version 0) up to ``end`` (default latest).

    Nothing committed after ``processed`` gives an empty table with the change-feed schema.
    """
    if processed is not None and (isinstance(processed, bool) or not isinstance(processed, int) or processed < -1):
        raise InvalidArgumentError(f"processed version must be an integer of -1 or more, got {processed!r}")
    start = 0 if processed is None else processed + 1
    latest = log.snapshot()
    last = resolve_end(latest, end)
    if start > last:
        end_snap = latest if last == latest.version else log.snapshot(version=last)
        return change_schema(end_snap.schema).empty_table().select(_columns(end_snap.schema, columns))
    return read_changes(log, start, last, columns)


def _files_before(log: "TableLog", version: int) -> pa.Table:
    """The live files of the version before ``version`` (none before version 0)."""
    return log.snapshot(version=version - 1).files() if version > 0 else empty_file_actions()


def change_schema(schema: pa.Schema) -> pa.Schema:
    """A table schema with the change-feed columns appended."""
    return pa.schema(list(schema) + [pa.field(CHANGE_TYPE, pa.string()), pa.field(COMMIT_VERSION, pa.int64()),
                                     pa.field(COMMIT_TIMESTAMP, COMMIT_TIMESTAMP_TYPE)])


def _partition_keys(metadata: Metadata, end_snap: Snapshot) -> list[str]:
    """The ``partitionValues`` keys to parse (physical names under column mapping), old and new."""
    keys = []
    for m in (metadata, end_snap.metadata):
        keys += partition_keys(m.partition_columns, m.schema_string, m.configuration)
    return list(dict.fromkeys(keys))


def _in_effect(protocol: Protocol, metadata: Metadata, blob: tuple[int, bytes, str],
               uri: str) -> tuple[Protocol, Metadata]:
    """Protocol and metadata after commit ``blob`` (its own actions, where it has them)."""
    raw_p, raw_m = newest_protocol_metadata([blob])
    if raw_p is None and raw_m is None:
        return protocol, metadata
    p, m = parse_protocol_metadata(raw_p if raw_p is not None else protocol.to_json(),
                                   raw_m if raw_m is not None else metadata.to_json(), f"{uri} at version {blob[0]}")
    return p, m


def _stamped(rows: pa.Table, version: int, timestamp_ms: int) -> pa.Table:
    n = rows.num_rows
    rows = rows.append_column(COMMIT_VERSION, pa.repeat(ab.scalar(version, pa.int64()), n))
    micros = pa.repeat(ab.scalar(timestamp_ms * 1000, pa.int64()), n)
    return rows.append_column(COMMIT_TIMESTAMP, micros.cast(COMMIT_TIMESTAMP_TYPE))
