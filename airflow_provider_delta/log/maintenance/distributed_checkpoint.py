"""Checkpoints written by many workers: plan on a driver, parts in parallel, publish on the driver.

A log of tens of millions of files does not fit one process, but its checkpoint splits
cleanly: a file's actions all hash to one part (Spark's ``pmod(murmur3(path), parts)``,
the partitioning :mod:`.checkpoint_rows` already uses), so each part can be reconciled
and written on its own. This module holds the engine-neutral steps; an engine (the
Spark job in ``spark/checkpoint_engine.py``) only moves data between them:

1. :func:`plan_checkpoint` (driver): the gate, argument checks, the log segment, protocol
   and metadata (read from the newest commits that carry them, without loading the
   others), the checkpoint layout, and the list of :class:`LogSource` to read. Nothing
   here holds file actions.
2. :meth:`CheckpointPlan.read_source` (any worker): one source (checkpoint row groups or
   a run of commits) as normalized file actions, split by part, plus its ``txn`` and
   ``domainMetadata`` actions, which go to the part the local writer puts them in.
3. :meth:`CheckpointPlan.stage_part` (any worker): the actions of one part, reconciled
   (:func:`.replay.reconcile`: checkpoint rows as the base, commits overlaid by version
   and line) and written with the local writer's row builder and part writer to a hidden
   temporary file. The result is a small :class:`StagedPart`.
4. :meth:`CheckpointPlan.publish` (driver): only when every part is staged, publish them
   as the local writer does (classic or multi-part; V2 sidecars, then the manifest naming
   them), then ``_last_checkpoint``. A job killed before this step leaves only hidden
   ``.tmp`` files, which readers never look at and metadata cleanup removes.

The plan is a plain picklable object: an engine ships it to its workers as is.
"""
from __future__ import annotations

import math
import os
import tempfile
import uuid
from dataclasses import dataclass, field, replace
from typing import Any, Iterable, Iterator

import pyarrow as pa

from ..base.action_schemas import REMOVE_TYPE, empty_file_actions
from ..base.actions import Metadata, Protocol
from .checkpoint import (_check_backfilled, _part_names, _PartWriter, _publish, _validate_parts, _wants_v2,
                         write_last_checkpoint, write_v2_manifest)
from ..read.action_lines import action_kind
from ..read.checkpoint_reader import _read_json_checkpoint, read_parquet_part
from .checkpoint_rows import SPARK_HASH_SEED, CheckpointLayout, _split_by_part, checkpoint_batches, checkpoint_layout
from .checkpoint_sources import LogSource, RowGroups, protocol_metadata, segment_sources
from ..read.commit_reader import read_blobs
from ..base.errors import InvalidArgumentError, InvalidTableStateError
from ..base.features import Operation
from ..base.names import LOG_DIR, SIDECARS_DIR, sidecar_path, v2_checkpoint_path
from ..read.replay import parse_json_logs, reconcile
from ..read.segment import LogSegment, build_segment
from ..read.snapshot import Snapshot, _State
from ..base.storage import Storage
from ..read.table_log import TableLog
from ..base.timeutil import now_or

#: Default checkpoint actions per part (parts = estimated actions / this, at least 1): what one
#: worker reconciles and writes at once, about 1 GB of Python memory.
ACTIONS_PER_PART = 1_000_000
#: Lines of one commit run sit below (first version << 32): seqs are unique and ordered log-wide.
_SEQ_SHIFT = 32


@dataclass(frozen=True)
class StagedPart:
    """One part written under a hidden name, waiting to be published; small, so it travels to the driver."""

    index: int
    rel: str                                  # final path, relative to the table root
    staged: str                               # the hidden file: a local path, or a path in the table's storage
    rows: int
    adds: int
    size: int
    #: the meta part of a V2 checkpoint carries the non-file state to the driver (the manifest holds it)
    txns: dict[str, tuple[int, int | None]] = field(default_factory=dict)
    domains: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CheckpointPlan:
    """Everything a worker needs to read sources and write parts; built by :func:`plan_checkpoint`."""

    uri: str
    storage_options: dict[str, Any]
    version: int
    checkpoint_version: int | None            # the checkpoint the sources start from, if any
    parts: int                                # parts of a classic checkpoint, or sidecars of a V2 one
    v2: bool
    v2_format: str
    now_ms: int
    protocol: Protocol
    metadata: Metadata
    layout: CheckpointLayout
    partition_columns: tuple[str, ...]
    sources: tuple[LogSource, ...]
    part_names: tuple[str, ...]               # final relative paths of the parts (or sidecars)

    @property
    def meta_part(self) -> int:
        """The part holding protocol, metadata, txn and domainMetadata (where Spark puts a null key)."""
        return SPARK_HASH_SEED % self.parts

    def _storage(self) -> Storage:
        return Storage(self.uri, self.storage_options)

    def _snapshot(self, state: _State, table: TableLog | None = None) -> Snapshot:
        """The planned version holding ``state``: what the local writer's row builders read from."""
        table = table if table is not None else TableLog(self.uri, self.storage_options)
        segment = LogSegment(self.version, self.checkpoint_version, [], [], None)  # type: ignore[arg-type]
        return Snapshot(table, segment, self.protocol, self.metadata, None, state)

    # ----------------------------------------------------------------- reading
    def read_source(self, index: int, source: LogSource) -> Iterator[tuple[int, tuple[str, Any]]]:
        """``(part, (kind, payload))`` items of one source.

        ``kind`` is ``base`` (checkpoint rows, already reconciled) or ``new`` (commit rows,
        with log-wide ordered ``seq``), the payload an Arrow IPC stream of normalized file
        actions; or ``others``: ``[(version, source index, position, action)]`` for the meta part.
        """
        storage = self._storage()
        if source.kind == "commits":
            kind, tables, others = "new", *self._read_commits(storage, source)
        else:
            kind, tables, others = "base", *self._read_checkpoint(storage, source)
        for table in tables:
            for part, rows in _split_by_part(table, self.parts):
                if rows.num_rows:
                    yield part, (kind, _to_ipc(rows))
        kept = [(v, index, i, obj) for i, (v, obj) in enumerate(others) if action_kind(obj) in ("txn", "domainMetadata")]
        if kept:
            yield self.meta_part, ("others", kept)

    def _read_commits(self, storage: Storage, source: LogSource) -> tuple[list[pa.Table], list]:
        blobs = read_blobs(storage, list(source.files))
        pcols = list(self.partition_columns) + self._snapshot(_State(empty_file_actions(), {}, {}, {}, 0)) \
            ._all_partition_columns(blobs)
        parsed = parse_json_logs(blobs, list(dict.fromkeys(pcols)), seq_start=source.version << _SEQ_SHIFT)
        return [parsed.file_actions], parsed.others

    def _read_checkpoint(self, storage: Storage, source: LogSource) -> tuple[list[pa.Table], list]:
        f = source.files[0]
        if source.kind == "json_checkpoint":
            content = _read_json_checkpoint(storage, f, source.version, with_files=True)
            files = [content.file_actions] if content.file_actions is not None else []
            return files, [(source.version, o) for o in content.others]
        pf = RowGroups(storage, f.path, source.row_groups)
        content, files = read_parquet_part(pf, source.version, 0, with_files=True, with_pm=False,
                                           with_others=source.non_file)
        return files, [(source.version, o) for o in content.others]

    # ----------------------------------------------------------------- writing
    def stage_part(self, index: int, items: Iterable[tuple[str, Any]]) -> StagedPart:
        """Reconcile the actions of part ``index`` and write them to a hidden file (nothing is published)."""
        base: list[pa.Table] = []
        new: list[pa.Table] = []
        others: list[tuple[int, int, int, dict[str, Any]]] = []
        for kind, payload in items:
            if kind == "others":
                others.extend(payload)
            else:
                (base if kind == "base" else new).append(_from_ipc(payload))
        actions = reconcile(pa.concat_tables(base) if base else None,
                            pa.concat_tables(new) if new else empty_file_actions())
        state = _State(actions, {}, {}, {}, 0)
        state.overlay([(v, obj) for v, _, _, obj in sorted(others, key=lambda o: o[:3])])
        snap = self._snapshot(state)
        table = snap.log
        layout = self.layout
        if self.v2:
            layout = replace(layout, schema=pa.schema([pa.field("add", layout.add_type),
                                                       pa.field("remove", REMOVE_TYPE)]))
        writer = _PartWriter(table, self.part_names[index], layout.schema)
        try:
            with_meta = index == self.meta_part and not self.v2
            for _, kind, batch in checkpoint_batches(snap, layout, self.now_ms, 1, with_non_file=with_meta):
                writer.write(batch, kind)
            writer.close()
            staged = _stage(table.storage, writer.tmp)
        except BaseException:
            writer.discard()
            raise
        keep_state = self.v2 and index == self.meta_part
        return StagedPart(index, writer.rel, staged, writer.rows, writer.adds, writer.size,
                          dict(state.txns) if keep_state else {}, dict(state.domains) if keep_state else {})

    # -------------------------------------------------------------- publishing
    def publish(self, table: TableLog, staged: Iterable[StagedPart]) -> dict[str, Any]:
        """Publish every staged part, then ``_last_checkpoint``; returns what ``_last_checkpoint`` got.

        Refuses (InvalidTableStateError, nothing published) unless exactly one staged part
        per part index is given. Staged files are removed whatever happens.
        """
        parts = sorted(staged, key=lambda p: p.index)
        try:
            if [p.index for p in parts] != list(range(self.parts)) or \
                    [p.rel for p in parts] != list(self.part_names):
                raise InvalidTableStateError(
                    f"cannot publish the checkpoint of {self.uri} at version {self.version}: "
                    f"{len(parts)} of {self.parts} parts were staged")
            if self.v2:
                info = self._publish_v2(table, parts)
            else:
                for p in parts:
                    _publish_staged(table, p)
                info = {"version": self.version, "size": sum(p.rows for p in parts)}
                if self.parts > 1:
                    info["parts"] = self.parts
                info["sizeInBytes"] = sum(p.size for p in parts)
                info["numOfAddFiles"] = sum(p.adds for p in parts)
            write_last_checkpoint(table, info)
            return info
        finally:
            for p in parts:
                _discard_staged(table.storage, p.staged)

    def _publish_v2(self, table: TableLog, parts: list[StagedPart]) -> dict[str, Any]:
        table.storage.makedirs(SIDECARS_DIR)
        for p in parts:
            _publish_staged(table, p)
        meta = parts[self.meta_part]
        snap = self._snapshot(_State(empty_file_actions(), dict(meta.txns), dict(meta.domains), {}, 0), table)
        main_rel = v2_checkpoint_path(self.version, str(uuid.uuid4()), self.v2_format)
        return write_v2_manifest(table, snap, self.layout, self.now_ms, parts, self.v2_format, main_rel)


# ---------------------------------------------------------------------- planning
def plan_checkpoint(table: TableLog, version: int | None = None, parts: int | None = None, *,
                    now_ms: int | None = None, v2_format: str = "parquet",
                    actions_per_part: int = ACTIONS_PER_PART) -> CheckpointPlan:
    """The plan of a checkpoint of ``version`` (default: latest) written by parallel workers.

    The gate comes first (``Operation.CHECKPOINT`` on the protocol of that version), then
    the same argument rules as :func:`.checkpoint.write_checkpoint`. ``parts`` is the number
    of parts of a classic checkpoint, or of sidecars of a V2 one (tables with the
    ``v2Checkpoint`` feature); None estimates it from the log's size (``actions_per_part``
    per part). ``now_ms`` (default: the clock) decides which tombstones and app transactions
    have expired, once for every worker.
    """
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise InvalidArgumentError(f"version must be a non-negative integer, got {version!r}")
    if isinstance(actions_per_part, bool) or not isinstance(actions_per_part, int) or actions_per_part < 1:
        raise InvalidArgumentError(f"actions_per_part must be a positive integer, got {actions_per_part!r}")
    now = now_or(now_ms)
    storage = table.storage
    segment = build_segment(storage, table.listing(), version)
    protocol, metadata, carrying = protocol_metadata(storage, segment)
    snap = Snapshot(table, segment, protocol, metadata, None)
    pcols = snap._all_partition_columns(carrying)
    table.require(snap, Operation.CHECKPOINT)
    v2 = _wants_v2(snap, None, v2_format)
    if v2:
        n_parts = _sidecar_count(parts)
    else:
        n_parts = _validate_parts(parts, snap)
    _check_backfilled(table, segment.version, explicit=version is not None)
    sources, estimate = segment_sources(storage, segment)
    if parts is None:
        n_parts = max(1, min(10_000, math.ceil(estimate / actions_per_part)))
    if v2:
        names = tuple(sidecar_path(f"{uuid.uuid4()}.parquet") for _ in range(n_parts))
    else:
        names = tuple(_part_names(segment.version, n_parts))
    return CheckpointPlan(
        uri=table.uri, storage_options=dict(storage.storage_options), version=segment.version,
        checkpoint_version=segment.checkpoint_version, parts=n_parts, v2=v2, v2_format=v2_format,
        now_ms=now, protocol=protocol, metadata=metadata,
        layout=checkpoint_layout(snap), partition_columns=tuple(pcols), sources=tuple(sources), part_names=names)


def _sidecar_count(parts: Any) -> int:
    if parts is None:
        return 1
    if isinstance(parts, bool) or not isinstance(parts, int) or not 1 <= parts <= 10_000:
        raise InvalidArgumentError(f"parts (the sidecars of a V2 checkpoint) must be an integer from 1 to 10000, "
                                   f"got {parts!r}")
    return parts


# ------------------------------------------------------------------- staging
def _to_ipc(table: pa.Table) -> bytes:
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    return sink.getvalue().to_pybytes()


def _from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def _stage(storage: Storage, tmp: str) -> str:
    """Where a finished part waits: its hidden local file, or (object stores) a hidden copy in ``_delta_log``.

    On a cluster the driver does not see a worker's disk, so a part bound for an object
    store is uploaded under a hidden name; publishing copies it to its final name.
    """
    if storage.is_local:
        return tmp
    rel = f"{LOG_DIR}/{os.path.basename(tmp)}"
    try:
        storage.fs.put_file(tmp, storage.path(rel))
    finally:
        os.unlink(tmp)
    return rel


def _publish_staged(table: TableLog, part: StagedPart) -> None:
    """Publish one staged part exactly as the local writer publishes its parts."""
    storage = table.storage
    if storage.is_local:
        _publish(table, _Finished(part.rel, part.staged))
        return
    fd, local = tempfile.mkstemp(suffix=".parquet")
    os.close(fd)
    try:
        storage.fs.get_file(storage.path(part.staged), local)
        _publish(table, _Finished(part.rel, local))
    finally:
        os.unlink(local)


def _discard_staged(storage: Storage, staged: str) -> None:
    try:
        if storage.is_local:
            os.unlink(staged)
        else:
            storage.delete(staged)
    except FileNotFoundError:
        pass


@dataclass(frozen=True)
class _Finished:
    """A complete file waiting under ``tmp`` to become ``rel`` (what ``_publish`` needs of a part)."""

    rel: str
    tmp: str
