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

import re
import time
from functools import cached_property
import typing
from typing import Any

import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base import ict
from ..base.action_schemas import FILE_ACTION_SCHEMA, FILE_COLUMNS, TOMBSTONE_COLUMNS
from ..base.actions import Metadata, Protocol
from .checkpoint_reader import checkpoint_may_hold_absolute_paths, checkpoint_may_hold_deletion_vectors, read_checkpoint
from .column_mapping import partition_keys, partition_keys_of
from .commit_reader import CommitBlobs, read_blobs
from ..base.commit_source import CommitSource, require_through
from .commit_timestamps import commit_timestamp
from .data_paths import ABSOLUTE_PATH_REGEX
from ..base.errors import CorruptLogError, VersionNotFoundError
from ..base.features import Operation, commits_are_coordinated, supported_features
from ..base.intervals import deleted_file_retention_ms, set_transaction_retention_ms
from .listing import LogListing
from .managed_state import validate_managed_state
from .action_lines import action_kind, action_lines, may_spell_keys_escaped
from .protocol_metadata import load_protocol_metadata, \
    newest_protocol_metadata, parse_protocol_metadata
from .reader import read_rows
from .replay import only_keys, parse_json_logs, reconcile, select_rows
from ..base.schema import schema_to_arrow
from .segment import LogSegment, build_segment
from ..base.storage import Storage




#: A JSON ``"path"`` value that may be absolute: a slash (escaped or not) or a scheme's colon first
_ABSOLUTE_PATH_VALUE = re.compile(rb'"path"\s*:\s*"(?:\\?/|\\u002[fF]|[A-Za-z][A-Za-z0-9+.-]*:)')


class LogAccess(typing.Protocol):
    """What a snapshot needs of its table's log: a :class:`~.table_log.TableLog` is one.

    The storage to read files from, the commit source (whose served reader features count
    as supported), and a fresh listing when the snapshot is brought up to date.
    """

    storage: Storage
    uri: str
    commit_source: CommitSource | None

    def listing(self) -> LogListing: ...


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
            kind = action_kind(obj)
            if kind == "txn":
                t = obj["txn"]
                self.txns[t["appId"]] = (int(t["version"]), t.get("lastUpdated"))
            elif kind == "domainMetadata":
                d = obj["domainMetadata"]
                if d.get("removed"):
                    self.domains.pop(d["domain"], None)
                else:
                    self.domains[d["domain"]] = d.get("configuration", "")
            elif kind == "commitInfo":
                self.commit_infos[v] = obj["commitInfo"]




class Snapshot:
    """The table at ``version``. Build it with ``DeltaTable.snapshot()``."""

    def __init__(self, log: LogAccess, segment: LogSegment, protocol: Protocol, metadata: Metadata,
                 blobs: CommitBlobs | None, state: _State | None = None):
        self.log = log
        self.segment = segment
        self.protocol = protocol
        self.metadata = metadata
        self._blobs = blobs
        self._state = state
        #: newest commit version that check_commits parsed (so a refreshed snapshot parses only new ones)
        self._checked_through = -1

    def __repr__(self) -> str:
        return f"Snapshot({self.uri!r}, version={self.version})"

    # ------------------------------------------------------------- properties
    @property
    def storage(self) -> Storage:
        return self.log.storage

    @property
    def uri(self) -> str:
        return self.log.uri

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
        return schema_to_arrow(self.metadata.schema_string)

    @property
    def commits_are_coordinated(self) -> bool:
        """Whether a commit owner or catalog ratifies this table's commits (any protocol variant)."""
        return commits_are_coordinated(self.protocol, self.metadata)

    @property
    def in_commit_timestamps_enabled(self) -> bool:
        return ict.is_enabled(self.protocol, self.metadata)

    @property
    def ict_enablement(self) -> tuple[int, int] | None:
        """(version, timestamp) from which in-commit timestamps apply; (0, ...) style None if never."""
        return ict.enablement(self.protocol, self.metadata)

    @cached_property
    def timestamp(self) -> int:
        """Commit timestamp of this version in epoch ms (in-commit timestamp when enabled)."""
        return commit_timestamp(self.storage, self.version, self.protocol, self.metadata, self.segment.listing,
                                blob=self._last_blob())

    def commit_timestamp(self, version: int) -> int:
        return commit_timestamp(self.storage, version, self.protocol, self.metadata, self.segment.listing)

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
                cp = read_checkpoint(self.storage, seg.checkpoint_files, seg.checkpoint_version or 0,
                                     with_files=True, partition_columns=self.partition_columns,
                                     with_protocol_metadata=False)
            except FileNotFoundError:
                # cleanup removed the checkpoint after this snapshot was planned: plan again, once
                fresh = load_snapshot(self.log, self.version)
                if fresh.segment.checkpoint_files == seg.checkpoint_files:
                    raise VersionNotFoundError(f"{self.uri}: checkpoint {seg.checkpoint_version} "
                                               "disappeared while reading version "
                                               f"{self.version}", version=self.version) from None
                self.segment, self._blobs = fresh.segment, fresh._blobs
                return self._load_state()
            base = cp.file_actions
            state.overlay([(seg.checkpoint_version or 0, o) for o in cp.others])
        blobs = self._blobs if self._blobs is not None else read_blobs(self.storage, seg.commits)
        parsed = parse_json_logs(blobs, self._partition_keys())   # it finds keys of older metaData itself
        state.overlay(parsed.others)
        state.actions = reconcile(base, parsed.file_actions)
        state.next_seq = len(parsed.file_actions) + 1
        self._state = state
        self._blobs = None  # the bytes are not needed once replayed
        return state

    def check_commits(self) -> None:
        """Parse every commit of this snapshot strictly: what a writer must do before building on it.

        A snapshot answers protocol and metadata questions from a few lines of its commits;
        a commit on top of it must not land on a log that a full read rejects (a truncated
        line, an action that is not an object, wrong types, invalid UTF-8). Raises
        CorruptLogError naming the file and line. Commits already replayed are not parsed
        again; the checkpoint was written whole and is checked by its reader.
        """
        if self._state is not None or self._checked_through >= self.version:
            return
        blobs = self._blobs if self._blobs is not None else read_blobs(self.storage, self.segment.commits)
        blobs = blobs.since(self._checked_through)
        for _, data, path in blobs:
            try:
                data.decode("utf-8")
            except UnicodeDecodeError as e:
                line = data.count(b"\n", 0, e.start) + 1
                raise CorruptLogError(f"{path}, line {line}: not UTF-8 (byte {e.start})", path=path,
                                      line=line) from None
        parse_json_logs(blobs, self._partition_keys())
        self._checked_through = self.version

    def _all_partition_columns(self, blobs) -> list[str]:
        """``partitionValues`` keys of every metaData in the blobs (they may change between versions);
        under column mapping these are physical names."""
        cols = self._partition_keys()
        for _, data, _ in blobs:
            for action in action_lines(data, "metaData"):
                try:
                    cols.extend(partition_keys_of(action["metaData"]))
                except (ValueError, KeyError, AttributeError, TypeError):
                    continue
        return list(dict.fromkeys(cols))

    def _partition_keys(self) -> list[str]:
        m = self.metadata
        return partition_keys(m.partition_columns, m.schema_string, m.configuration)

    def files(self) -> pa.Table:
        """One row per live data file (paths relative to the table root, URL-decoded)."""
        a = self._load_state().actions
        if not a.num_rows:
            return _empty(FILE_COLUMNS)
        files = select_rows(a, a.column("is_add")).select(FILE_COLUMNS)
        i = files.schema.get_field_index("partition_values")
        return files.set_column(i, "partition_values", only_keys(files.column(i), self._partition_keys()))

    def may_hold_deletion_vectors(self) -> bool:
        """Whether a live file of this snapshot may carry a deletion vector.

        Exact once the file list is loaded; before that, answered without replaying it and on
        the safe side: False only if the protocol does not support ``deletionVectors`` (no file
        may carry one then), or no commit since the checkpoint mentions one and the checkpoint's
        footers say no ``add`` has one. For checks that matter only where DVs exist, so a table
        without them never pays for its file list.
        """
        if self._state is not None:
            a = self._state.actions
            return bool(a.num_rows) and ak.any_true(ak.and_(a.column("is_add"), ak.is_valid(a.column("deletion_vector"))))
        reader, writer = supported_features(self.protocol)
        if "deletionVectors" not in reader | writer:
            return False
        blobs = self._blobs if self._blobs is not None else read_blobs(self.storage, self.segment.commits)
        if any(b'"deletionVector"' in data or may_spell_keys_escaped(data) for _, data, _ in blobs):
            return True
        return bool(self.segment.checkpoint_files) and \
            checkpoint_may_hold_deletion_vectors(self.storage, self.segment.checkpoint_files)

    def may_hold_absolute_paths(self) -> bool:
        """Whether a live file of this snapshot may be named by an absolute path or URI (``/t/p``,
        ``file:///t/p``, a clone's ``s3://...``): exact once the file list is loaded; before that, on the
        safe side from the commits since the checkpoint (a plain-spelled ``"path"`` value, or any key a
        writer escaped) and the checkpoint's ``add.path`` column, no replay. For the check that a relative
        add does not name a live file spelled absolutely (F4b), so appends to tables of relative paths
        never pay for their file list."""
        if self._state is not None:
            a = self._state.actions
            return bool(a.num_rows) and ak.any_true(ak.and_(
                a.column("is_add"), ak.match_substring_regex(a.column("path"), ABSOLUTE_PATH_REGEX)))
        blobs = self._blobs if self._blobs is not None else read_blobs(self.storage, self.segment.commits)
        if any(_ABSOLUTE_PATH_VALUE.search(data) or may_spell_keys_escaped(data) for _, data, _ in blobs):
            return True
        return bool(self.segment.checkpoint_files) and \
            checkpoint_may_hold_absolute_paths(self.storage, self.segment.checkpoint_files)

    def num_files(self) -> int:
        a = self._load_state().actions
        return ak.sum_of(a.column("is_add")) or 0 if a.num_rows else 0

    def tombstones(self, now_ms: int | None = None) -> pa.Table:
        """Removes that have not expired (``delta.deletedFileRetentionDuration``, default 1 week)."""
        a = self._load_state().actions
        if not a.num_rows:
            return _empty(TOMBSTONE_COLUMNS)
        rm = ak.filter(a, ak.invert(a.column("is_add")))
        now = int(time.time() * 1000) if now_ms is None else now_ms
        cutoff = now - deleted_file_retention_ms(self.configuration)
        keep = ak.greater(ak.fill_null(rm.column("deletion_timestamp"), ab.scalar(0, pa.int64())),
                          ab.scalar(cutoff, pa.int64()))
        return ak.filter(rm, keep).select(TOMBSTONE_COLUMNS)

    def transactions(self, include_expired: bool = False, now_ms: int | None = None) -> dict[str, tuple[int, int | None]]:
        """app id -> (version, lastUpdated), without those expired by ``delta.setTransactionRetentionDuration``."""
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
        return read_rows(self, columns=columns, filter=filter)

    # ----------------------------------------------------------------- update
    def update(self) -> "Snapshot":
        """The latest snapshot, reading only the commits after this one."""
        listing = self.log.listing()
        latest = listing.latest
        if latest is None or latest <= self.version:
            return self
        newer = sorted(v for v in listing.commits if v > self.version)
        if newer != list(range(self.version + 1, self.version + 1 + len(newer))) or not newer or newer[-1] != latest:
            return load_snapshot(self.log, None, listing)    # a gap or a newer checkpoint only: build afresh
        new_commits = [listing.commits[v] for v in newer]
        new_blobs = read_blobs(self.storage, new_commits)
        segment = LogSegment(latest, self.segment.checkpoint_version, self.segment.checkpoint_files,
                             self.segment.commits + new_commits, listing)
        new_protocol, new_metadata = newest_protocol_metadata(new_blobs)
        protocol, metadata = self.protocol, self.metadata
        if new_protocol is not None or new_metadata is not None:
            p, m = parse_protocol_metadata(new_protocol if new_protocol is not None else {},
                                           new_metadata if new_metadata is not None else {},
                                           f"{self.uri} at version {latest}")
            protocol = p if new_protocol is not None else protocol
            metadata = m if new_metadata is not None else metadata
        _check(self.log, protocol, metadata, latest)
        if self._state is None:
            blobs = self._blobs + new_blobs if self._blobs is not None else None
            if blobs is None:
                return load_snapshot(self.log, None, listing)
            fresh = Snapshot(self.log, segment, protocol, metadata, blobs)
            fresh._checked_through = self._checked_through
            return fresh
        old = self._state
        snap = Snapshot(self.log, segment, protocol, metadata, None)
        pcols = snap._partition_keys()
        parsed = parse_json_logs(new_blobs, pcols, seq_start=old.next_seq)
        state = _State(reconcile(old.actions, parsed.file_actions), dict(old.txns), dict(old.domains),
                       dict(old.commit_infos), old.next_seq + len(parsed.file_actions) + 1)
        state.overlay(parsed.others)
        snap._state = state
        return snap


def _empty(columns: list[str]) -> pa.Table:
    return ab.empty_table(FILE_ACTION_SCHEMA).select(columns)


def _check(log: LogAccess, protocol: Protocol, metadata: Metadata, version: int) -> None:
    """Every snapshot: the reader protocol is one we honour, and managed-commit state is valid."""
    require_through(log.commit_source, protocol, Operation.READ, f"{log.uri} at version {version}")
    validate_managed_state(protocol, metadata)


def load_snapshot(log: LogAccess, version: int | None, listing: LogListing | None = None) -> Snapshot:
    """Build the snapshot of ``version`` (latest if None)."""
    segment = build_segment(log.storage, listing if listing is not None else log.listing(), version)
    blobs = read_blobs(log.storage, segment.commits)
    protocol, metadata = load_protocol_metadata(log.storage, segment, blobs)
    _check(log, protocol, metadata, segment.version)
    return Snapshot(log, segment, protocol, metadata, blobs)
