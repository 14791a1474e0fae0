"""A snapshot: the state of a table at one version.

Loading is split so that cheap questions stay cheap. Protocol and metadata come
from the newest commits that carry them (a regex over raw bytes finds those
lines) or else from the checkpoint's two columns; the file state (checkpoint
adds/removes plus every commit's) is replayed only when ``files()``,
``tombstones()``, ``transactions()`` or ``to_pyarrow()`` first need it.

``update()`` brings a snapshot to the latest version by reading only the commits
after it and overlaying them on the already reconciled state.
"""
from __future__ import annotations

import json
import re
import time
from functools import cached_property
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.compute as pc

from .actions import MAX_READER_VERSION, SUPPORTED_READER_FEATURES, Metadata, Protocol
from .checkpoint_reader import read_checkpoint
from .errors import CorruptLogError, UnsupportedFeatureError, VersionNotFoundError
from .replay import parse_json_logs, reconcile
from .segment import LogSegment, build_segment, list_log, read_commit_file

if TYPE_CHECKING:  # pragma: no cover
    from .table import DeltaTable

_PROTOCOL_LINE = re.compile(rb'^\{\s*"protocol"\s*:.*$', re.M)
_METADATA_LINE = re.compile(rb'^\{\s*"metaData"\s*:.*$', re.M)

FILE_COLUMNS = ["path", "partition_values", "size", "modification_time", "data_change", "stats",
                "tags", "deletion_vector", "base_row_id", "default_row_commit_version"]
TOMBSTONE_COLUMNS = ["path", "deletion_timestamp", "data_change", "extended_file_metadata",
                     "partition_values", "size", "deletion_vector", "base_row_id",
                     "default_row_commit_version"]


def _last_line_match(pattern: re.Pattern, data: bytes) -> dict[str, Any] | None:
    """The last line matching ``pattern`` parsed as JSON; a plain substring test skips most files."""
    if pattern.pattern[pattern.pattern.index(b'"'):pattern.pattern.rindex(b'"') + 1] not in data:
        return None
    found = None
    for m in pattern.finditer(data):
        found = m.group(0)
    if found is None:
        return None
    try:
        return json.loads(found)
    except ValueError:
        return None


def check_readable(protocol: Protocol, where: str, extra_features: frozenset[str] = frozenset()) -> None:
    """Refuse tables whose reader protocol we cannot honour, naming what is missing.

    ``extra_features`` are reader features the caller can serve (e.g. ``catalogManaged``
    when the table was opened with a catalog that supplies its staged commits).
    """
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"{where}: Unsupported Delta protocol reader version {protocol.min_reader_version} "
            f"(this reader supports up to {MAX_READER_VERSION})", feature=f"readerVersion{protocol.min_reader_version}")
    if protocol.min_reader_version == 3:
        unknown = [f for f in (protocol.reader_features or ())
                   if f not in SUPPORTED_READER_FEATURES and f not in extra_features]
        if unknown:
            raise UnsupportedFeatureError(
                f"{where}: the table needs reader feature(s) {unknown}, which this reader does not support",
                feature=unknown[0])


def _served_features(table: "DeltaTable") -> frozenset[str]:
    owner = table.commit_owner
    if owner is not None and getattr(owner, "serves_catalog_managed", False):
        from .catalog import CATALOG_MANAGED_FEATURES
        return CATALOG_MANAGED_FEATURES
    return frozenset()


def _validate_managed(protocol: Protocol, metadata: Metadata) -> None:
    from .managed import validate_managed_state
    validate_managed_state(protocol, metadata)


def _read_blobs(table: "DeltaTable", commits) -> list[tuple[int, bytes, str]]:
    storage = table.storage
    if not storage.is_local and len(commits) > 1:
        try:
            data = storage.fs.cat([c.path for c in commits])
            return [(c.version, data[c.path], c.path) for c in commits]
        except (KeyError, FileNotFoundError):
            pass
    return [(c.version, read_commit_file(table, c), c.path) for c in commits]


def load_protocol_metadata(table: "DeltaTable", segment: LogSegment,
                           blobs: list[tuple[int, bytes, str]] | None = None) -> tuple[Protocol, Metadata]:
    """Protocol and metadata of the segment's version: newest commit that has them, else checkpoint."""
    if blobs is None:
        blobs = _read_blobs(table, segment.commits)
    protocol = metadata = None
    for _, data, _ in reversed(blobs):
        if protocol is None:
            p = _last_line_match(_PROTOCOL_LINE, data)
            protocol = p["protocol"] if p else None
        if metadata is None:
            m = _last_line_match(_METADATA_LINE, data)
            metadata = m["metaData"] if m else None
        if protocol is not None and metadata is not None:
            break
    if (protocol is None or metadata is None) and segment.checkpoint_files:
        cp = read_checkpoint(table.storage, segment.checkpoint_files, segment.checkpoint_version or 0,
                             with_files=False)
        protocol = protocol if protocol is not None else cp.protocol
        metadata = metadata if metadata is not None else cp.metadata
    where = f"{table.uri} at version {segment.version}"
    if protocol is not None and not isinstance(protocol, dict) or metadata is not None and not isinstance(metadata, dict):
        raise CorruptLogError(f"{where}: the protocol or metaData action is not a JSON object")
    if protocol is None:
        raise CorruptLogError(f"{where}: No protocol found in the log (the table is corrupt)")
    if metadata is None:
        raise CorruptLogError(f"{where}: No metadata found in the log (the table is corrupt)")
    try:
        return Protocol.from_json(protocol), Metadata.from_json(metadata)
    except (TypeError, ValueError, AttributeError) as e:
        raise CorruptLogError(f"{where}: malformed protocol or metaData action ({e})") from None


class _State:
    """Reconciled file actions plus the non-file state, as of one version."""

    def __init__(self, actions: pa.Table, txns: dict[str, tuple[int, int | None]],
                 domains: dict[str, str], commit_infos: dict[int, dict[str, Any]], next_seq: int):
        self.actions = actions
        self.txns = txns
        self.domains = domains
        self.commit_infos = commit_infos
        self.next_seq = next_seq

    def overlay(self, others: list[tuple[int, dict[str, Any]]]) -> None:
        try:
            self._overlay(others)
        except (KeyError, TypeError, ValueError, AttributeError) as e:
            raise CorruptLogError(f"a txn or domainMetadata action is malformed ({type(e).__name__}: {e})") from None

    def _overlay(self, others: list[tuple[int, dict[str, Any]]]) -> None:
        for v, obj in others:
            if "txn" in obj:
                t = obj["txn"]
                self.txns[t["appId"]] = (int(t["version"]), t.get("lastUpdated"))
            elif "domainMetadata" in obj:
                d = obj["domainMetadata"]
                if d.get("removed"):
                    self.domains.pop(d["domain"], None)
                else:
                    self.domains[d["domain"]] = d.get("configuration", "")
            elif "commitInfo" in obj:
                self.commit_infos[v] = obj["commitInfo"]


class Snapshot:
    """The table at ``version``. Build it with ``DeltaTable.snapshot()``."""

    def __init__(self, table: "DeltaTable", segment: LogSegment, protocol: Protocol, metadata: Metadata,
                 blobs: list[tuple[int, bytes, str]] | None, state: _State | None = None):
        self.table = table
        self.segment = segment
        self.protocol = protocol
        self.metadata = metadata
        self._blobs = blobs
        self._state = state

    def __repr__(self) -> str:
        return f"Snapshot({self.table.uri!r}, version={self.version})"

    # ------------------------------------------------------------- properties
    @property
    def version(self) -> int:
        return self.segment.version

    @property
    def partition_columns(self) -> tuple[str, ...]:
        return self.metadata.partition_columns

    @property
    def configuration(self) -> dict[str, str]:
        return self.metadata.configuration

    @cached_property
    def schema(self) -> pa.Schema:
        from .schema import schema_to_arrow
        return schema_to_arrow(self.metadata.schema_string)

    @property
    def in_commit_timestamps_enabled(self) -> bool:
        from .history import ict_enabled
        return ict_enabled(self.protocol, self.metadata)

    @property
    def ict_enablement(self) -> tuple[int, int] | None:
        """(version, timestamp) from which in-commit timestamps apply; (0, ...) style None if never."""
        from .history import ict_enablement
        return ict_enablement(self.protocol, self.metadata)

    @cached_property
    def timestamp(self) -> int:
        """Commit timestamp of this version in epoch ms (in-commit timestamp when enabled)."""
        from .history import commit_timestamp
        return commit_timestamp(self.table, self.version, self.protocol, self.metadata, self.segment.listing,
                                blob=self._last_blob())

    def commit_timestamp(self, version: int) -> int:
        from .history import commit_timestamp
        return commit_timestamp(self.table, version, self.protocol, self.metadata, self.segment.listing)

    def _last_blob(self) -> bytes | None:
        if self._blobs and self._blobs[-1][0] == self.version:
            return self._blobs[-1][1]
        return None

    # ------------------------------------------------------------------ state
    def _load_state(self) -> _State:
        if self._state is not None:
            return self._state
        seg = self.segment
        base = None
        state = _State(pa.table({}), {}, {}, {}, 0)
        if seg.checkpoint_files:
            try:
                cp = read_checkpoint(self.table.storage, seg.checkpoint_files, seg.checkpoint_version or 0,
                                     with_files=True, partition_columns=self.partition_columns)
            except FileNotFoundError:
                # cleanup removed the checkpoint after this snapshot was planned: plan again, once
                fresh = load_snapshot(self.table, self.version)
                if fresh.segment.checkpoint_files == seg.checkpoint_files:
                    raise VersionNotFoundError(f"{self.table.uri}: checkpoint {seg.checkpoint_version} "
                                               "disappeared while reading version "
                                               f"{self.version}", version=self.version) from None
                self.segment, self._blobs = fresh.segment, fresh._blobs
                return self._load_state()
            base = cp.file_actions
            state.overlay([(seg.checkpoint_version or 0, o) for o in cp.others])
        blobs = self._blobs if self._blobs is not None else _read_blobs(self.table, seg.commits)
        parsed = parse_json_logs(blobs, self._all_partition_columns(blobs))
        state.overlay(parsed.others)
        state.actions = reconcile(base, parsed.file_actions)
        state.next_seq = len(parsed.file_actions) + 1
        self._state = state
        self._blobs = None  # the bytes are not needed once replayed
        return state

    def _all_partition_columns(self, blobs) -> list[str]:
        """Partition columns of every metaData in the blobs (they may change between versions)."""
        cols = list(self.partition_columns)
        for _, data, _ in blobs:
            if b'"metaData"' not in data:
                continue
            for m in _METADATA_LINE.finditer(data):
                try:
                    cols.extend(json.loads(m.group(0))["metaData"].get("partitionColumns") or ())
                except (ValueError, KeyError):
                    continue
        return list(dict.fromkeys(cols))

    def files(self) -> pa.Table:
        """One row per live data file (paths relative to the table root, URL-decoded)."""
        a = self._load_state().actions
        return a.filter(a.column("is_add")).select(FILE_COLUMNS) if a.num_rows else _empty(FILE_COLUMNS)

    def num_files(self) -> int:
        a = self._load_state().actions
        return pc.sum(a.column("is_add")).as_py() or 0 if a.num_rows else 0

    def tombstones(self, now_ms: int | None = None) -> pa.Table:
        """Removes that have not expired (``delta.deletedFileRetentionDuration``, default 1 week)."""
        from .intervals import deleted_file_retention_ms
        a = self._load_state().actions
        if not a.num_rows:
            return _empty(TOMBSTONE_COLUMNS)
        rm = a.filter(pc.invert(a.column("is_add")))
        now = int(time.time() * 1000) if now_ms is None else now_ms
        cutoff = now - deleted_file_retention_ms(self.configuration)
        keep = pc.greater(pc.fill_null(rm.column("deletion_timestamp"), 0), cutoff)
        return rm.filter(keep).select(TOMBSTONE_COLUMNS)

    def transactions(self, include_expired: bool = False, now_ms: int | None = None) -> dict[str, tuple[int, int | None]]:
        """app id -> (version, lastUpdated), without those expired by ``delta.setTransactionRetentionDuration``."""
        from .intervals import set_transaction_retention_ms
        txns = dict(self._load_state().txns)
        retention = set_transaction_retention_ms(self.configuration)
        if include_expired or retention is None:
            return txns
        now = int(time.time() * 1000) if now_ms is None else now_ms
        cutoff = now - retention
        return {k: v for k, v in txns.items() if v[1] is None or v[1] > cutoff}

    def transaction_version(self, app_id: str) -> int | None:
        t = self.transactions().get(app_id)
        return t[0] if t else None

    def domain_metadata(self) -> dict[str, str]:
        return dict(self._load_state().domains)

    def to_pyarrow(self, columns: list[str] | None = None, filter: Any = None) -> pa.Table:
        from .reader import read_rows
        return read_rows(self, columns=columns, filter=filter)

    # ----------------------------------------------------------------- update
    def update(self) -> "Snapshot":
        """The latest snapshot, reading only the commits after this one."""
        listing = list_log(self.table)
        latest = listing.latest
        if latest is None or latest <= self.version:
            return self
        new_commits = [listing.commits.get(v) for v in range(self.version + 1, latest + 1)]
        if any(c is None for c in new_commits):
            return load_snapshot(self.table, None, listing)
        new_blobs = _read_blobs(self.table, new_commits)
        segment = LogSegment(latest, self.segment.checkpoint_version, self.segment.checkpoint_files,
                             self.segment.commits + new_commits, listing)
        protocol, metadata = self.protocol, self.metadata
        for _, data, _ in reversed(new_blobs):
            p = _last_line_match(_PROTOCOL_LINE, data)
            if p:
                protocol = Protocol.from_json(p["protocol"])
                break
        for _, data, _ in reversed(new_blobs):
            m = _last_line_match(_METADATA_LINE, data)
            if m:
                metadata = Metadata.from_json(m["metaData"])
                break
        check_readable(protocol, f"{self.table.uri} at version {latest}", _served_features(self.table))
        _validate_managed(protocol, metadata)
        if self._state is None:
            blobs = (self._blobs or []) + new_blobs if self._blobs is not None else None
            if blobs is None:
                return load_snapshot(self.table, None, listing)
            return Snapshot(self.table, segment, protocol, metadata, blobs)
        old = self._state
        snap = Snapshot(self.table, segment, protocol, metadata, None)
        pcols = list(dict.fromkeys(list(metadata.partition_columns) + list(snap._all_partition_columns(new_blobs))))
        parsed = parse_json_logs(new_blobs, pcols, seq_start=old.next_seq)
        state = _State(reconcile(old.actions, parsed.file_actions), dict(old.txns), dict(old.domains),
                       dict(old.commit_infos), old.next_seq + len(parsed.file_actions) + 1)
        state.overlay(parsed.others)
        snap._state = state
        return snap


def _empty(columns: list[str]) -> pa.Table:
    from .replay import FILE_ACTION_SCHEMA
    return FILE_ACTION_SCHEMA.empty_table().select(columns)


def load_snapshot(table: "DeltaTable", version: int | None, listing=None) -> Snapshot:
    """Build the snapshot of ``version`` (latest if None)."""
    segment = build_segment(table, version, listing)
    blobs = _read_blobs(table, segment.commits)
    protocol, metadata = load_protocol_metadata(table, segment, blobs)
    check_readable(protocol, f"{table.uri} at version {segment.version}", _served_features(table))
    _validate_managed(protocol, metadata)
    return Snapshot(table, segment, protocol, metadata, blobs)
