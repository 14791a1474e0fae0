"""Optimistic transactions: collect actions, then commit them as the next version.

A :class:`Transaction` reads one snapshot (its *read version*), gathers what the
caller wants to change (files added and removed, application transaction ids,
metadata, protocol) and what the caller's result depends on (files or partitions
read), then commits by writing ``_delta_log/<read version + 1>.json`` with an
atomic put-if-absent (or through the commit owner on managed-commit tables).

If another writer took that version first, the winning commits are read and
checked for logical conflicts (:mod:`.conflicts`); if none, the same actions are
retried at the next free version, up to ``max_retries`` times. Everything that
depends on the attempt - the version, the in-commit timestamp (``max(now,
winner's + 1 ms)``), the enablement version of in-commit timestamps - is
recomputed per attempt; everything else is validated once, before the first
write, so bad input fails with a typed error and nothing on disk.

Every commit carries a ``commitInfo`` (first, as in-commit timestamps require):
operation, parameters (values JSON-encoded strings, as Delta Spark writes them),
read version, isolation level, blind-append flag, metrics, engine and a txnId.
"""
from __future__ import annotations

import json
import logging
import uuid
from typing import Any, Callable, Iterable

import pyarrow as pa
import pyarrow.compute as pc

from . import ict
from .actions import AddFile, DomainMetadata, Metadata, Protocol, RemoveFile, Txn
from .commit_info import CommitProvenance
from .committer import CommitPlan, Committer
from .conflicts import ISOLATION_LEVELS, SNAPSHOT_ISOLATION, WRITE_SERIALIZABLE, ReadSet
from .errors import DeltaError, InvalidArgumentError
from .features import (APPEND_ONLY_PROPERTY, FEATURE_PROPERTY_PREFIX, ISOLATION_LEVEL_PROPERTY,
                       MANAGED_OWNER_PROPERTY, MIN_READER_VERSION_PROPERTY, MIN_WRITER_VERSION_PROPERTY,
                       check_can_add_data, check_writable, features_in_use, is_downgrade, is_true,
                       protocol_with_features)
from .managed_state import require_owner
from .names import LOG_DIR
from .schema import schema_to_arrow, serialize_partition_value, validate_partition_columns
from .snapshot import Snapshot
from .table_log import TableLog

log = logging.getLogger(__name__)

_PROTOCOL_REQUEST_PROPERTIES = (MIN_READER_VERSION_PROPERTY, MIN_WRITER_VERSION_PROPERTY)


def _json_safe(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{what} must be JSON-serializable: {e}") from None


def _dv_id(dv: dict[str, Any] | None) -> str | None:
    """The deletion vector's uniqueId (part of a logical file's key)."""
    if not dv:
        return None
    base = f"{dv.get('storageType')}{dv.get('pathOrInlineDv')}"
    return base if dv.get("offset") is None else f"{base}@{dv['offset']}"


def _canonical_value(value: str, t: pa.DataType | None) -> str | None:
    if t is None:
        return value
    try:
        return serialize_partition_value(value, t)
    except DeltaError:
        return value


class Transaction:
    """One optimistic commit. Use as a context manager (commits on a clean exit) or call :meth:`commit`.

    ``read_version`` pins the snapshot the transaction is based on (default: the
    latest); ``-1`` means the table must not exist yet (table creation). ``clock``
    returns epoch milliseconds; tests replace it to make time go backwards.
    ``isolation_level`` defaults to the table's ``delta.isolationLevel``, else
    ``WriteSerializable`` (Delta's default).
    """

    def __init__(self, table: TableLog, operation: str = "WRITE",
                 operation_parameters: dict[str, Any] | None = None, isolation_level: str | None = None,
                 user_metadata: str | None = None, job: dict[str, Any] | None = None, max_retries: int = 10,
                 read_version: int | None = None, clock: Callable[[], int] | None = None,
                 operation_metrics: dict[str, Any] | None = None):
        if not isinstance(operation, str) or not operation.strip():
            raise InvalidArgumentError("operation must be a non-empty string, e.g. 'WRITE'")
        if isolation_level is not None and isolation_level not in ISOLATION_LEVELS:
            raise InvalidArgumentError(f"isolation_level must be one of {ISOLATION_LEVELS}, got {isolation_level!r}")
        if isinstance(max_retries, bool) or not isinstance(max_retries, int) or max_retries < 0:
            raise InvalidArgumentError(f"max_retries must be a non-negative integer, got {max_retries!r}")
        if read_version is not None and (isinstance(read_version, bool) or not isinstance(read_version, int)
                                         or read_version < -1):
            raise InvalidArgumentError(f"read_version must be an integer >= -1, got {read_version!r}")
        if user_metadata is not None and not isinstance(user_metadata, str):
            raise InvalidArgumentError("user_metadata must be a string")
        if job is not None and not isinstance(job, dict):
            raise InvalidArgumentError("job must be a dict (e.g. dag_id, task_id, run_id, try_number)")
        self.table = table
        self.operation = operation
        self.operation_parameters = dict(operation_parameters or {})
        self.isolation_level = isolation_level
        self.user_metadata = user_metadata
        self.job = _json_safe(job, "job") if job else None
        self.max_retries = max_retries
        self.clock: Callable[[], int] = clock or ict.system_clock
        self.operation_metrics = dict(operation_metrics or {})
        self.txn_id = str(uuid.uuid4())
        self._read_version = read_version
        self._snapshot: Snapshot | None = None
        self._snapshot_loaded = read_version == -1
        self._adds: dict[tuple[str, str | None], AddFile] = {}
        self._removes: dict[tuple[str, str | None], RemoveFile | str] = {}
        self._remove_data_change: dict[str, bool] = {}
        self._txns: dict[str, Txn] = {}
        self._domains: dict[str, DomainMetadata] = {}
        self._metadata: Metadata | None = None
        self._protocol: Protocol | None = None
        self._protocol_requests: dict[str, str] = {}
        self._read = ReadSet()
        self._partition_types: dict[str, pa.DataType] = {}
        self._state = "open"
        #: the committed version, once :meth:`commit` succeeded
        self.version: int | None = None
        #: how many attempts the commit took
        self.attempts = 0
        #: True if a commit owner failed in a way that leaves the outcome unknown
        self.outcome_unknown = False

    # ----------------------------------------------------------------- reading
    @property
    def snapshot(self) -> Snapshot | None:
        """The snapshot this transaction reads (None when creating a table)."""
        if not self._snapshot_loaded:
            self._snapshot = self.table.snapshot(version=self._read_version)
            self._read_version = self._snapshot.version
            self._snapshot_loaded = True
        return self._snapshot

    @property
    def read_version(self) -> int:
        snap = self.snapshot
        return -1 if snap is None else snap.version

    @property
    def metadata(self) -> Metadata | None:
        """The metadata this transaction will commit against (its own change, else the snapshot's)."""
        if self._metadata is not None:
            return self._metadata
        snap = self.snapshot
        return snap.metadata if snap is not None else None

    def mark_read(self, paths: Iterable[str] | str) -> None:
        """Declare that the result depends on these files (``"all"``: on the whole table).

        Concurrent removal of a read file then conflicts (ConcurrentDeleteRead); reading
        everything also conflicts with concurrent non-blind appends (ConcurrentAppend).
        """
        self._check_open()
        if isinstance(paths, str):
            if paths == "all":
                self._read.read_all = True
                return
            paths = [paths]
        for p in paths:
            if not isinstance(p, str) or not p:
                raise InvalidArgumentError(f"file paths must be non-empty strings, got {p!r}")
            self._read.read_paths.add(p)

    def read_partitions(self, partitions: dict[str, Any]) -> None:
        """Declare that the result depends on the partitions matching ``{column: value or [values]}``."""
        self._check_open()
        self._read.partition_predicates.append(self._predicate(partitions))
        self._read.partition_types.update(self._partition_column_types())

    def read_files(self, partitions: dict[str, Any] | None = None) -> pa.Table:
        """The live files (optionally only in matching partitions), recorded as read."""
        self._check_open()
        snap = self._require_snapshot("read files")
        files = snap.files()
        if partitions is None:
            self._read.read_all = True
        else:
            predicate = self._predicate(partitions)
            self._read.partition_predicates.append(predicate)
            self._read.partition_types.update(self._partition_column_types())
            mask = None
            for col, allowed in predicate.items():
                values = pc.map_lookup(files["partition_values"], pa.scalar(col, pa.string()), "first")
                values = pc.if_else(pc.equal(values, ""), pa.scalar(None, pa.string()), values)
                # compare canonical forms: other writers may spell the same value differently
                types = self._read.partition_types
                raw = [u for u in pc.unique(values).to_pylist() if u is not None
                       and _canonical_value(u, types.get(col)) in allowed]
                m = pc.is_in(values, value_set=pa.array(raw, pa.string()))
                if None in allowed:
                    m = pc.or_(m, pc.is_null(values))
                m = pc.fill_null(m, False)
                mask = m if mask is None else pc.and_(mask, m)
            if mask is not None:
                files = files.filter(mask)
        self._read.read_paths.update(files.column("path").to_pylist())
        return files

    def transaction_version(self, app_id: str) -> int | None:
        """The table's version of application transaction ``app_id`` (None if unknown), recorded as read."""
        self._check_open()
        self._read.read_app_ids.add(app_id)
        snap = self.snapshot
        return None if snap is None else snap.transaction_version(app_id)

    def _predicate(self, partitions: dict[str, Any]) -> dict[str, set[str | None]]:
        if not isinstance(partitions, dict) or not partitions:
            raise InvalidArgumentError("partitions must be a non-empty dict {column: value or [values]}")
        meta = self.metadata
        cols = meta.partition_columns if meta is not None else ()
        types = self._partition_column_types()
        out: dict[str, set[str | None]] = {}
        for col, value in partitions.items():
            if col not in cols:
                raise InvalidArgumentError(f"{col!r} is not a partition column (partition columns: {list(cols)})")
            values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
            out[col] = {serialize_partition_value(v, types[col]) for v in values}
        return out

    def _partition_column_types(self) -> dict[str, pa.DataType]:
        meta = self.metadata
        if meta is None:
            return {}
        schema = schema_to_arrow(meta.schema_string)
        return {c: schema.field(c).type for c in meta.partition_columns}

    # ---------------------------------------------------------------- changes
    def add_file(self, add: AddFile) -> None:
        """Add one data file (path relative to the table root, not URL-encoded)."""
        self._check_open()
        if not isinstance(add, AddFile):
            raise InvalidArgumentError(f"add_file takes an AddFile, got {type(add).__name__}")
        self._check_path(add.path)
        if isinstance(add.size, bool) or not isinstance(add.size, int) or add.size < 0:
            raise InvalidArgumentError(f"file {add.path!r}: size must be a non-negative integer")
        key = (add.path, _dv_id(add.deletion_vector))
        if key in self._adds:
            raise InvalidArgumentError(f"file {add.path!r} is added twice in one transaction")
        self._adds[key] = add

    def add_files(self, adds: Iterable[AddFile]) -> None:
        for a in adds:
            self.add_file(a)

    def remove_file(self, file: str | AddFile | RemoveFile, data_change: bool = True) -> None:
        """Remove a live file: by path (its details are looked up in the snapshot), AddFile or RemoveFile."""
        self._check_open()
        if isinstance(file, AddFile):
            entry: RemoveFile | str = file.remove(0, data_change)
            path, dv = file.path, file.deletion_vector
        elif isinstance(file, RemoveFile):
            entry, path, dv = file, file.path, file.deletion_vector
        elif isinstance(file, str):
            entry, path, dv = file, file, None
        else:
            raise InvalidArgumentError(f"remove_file takes a path, AddFile or RemoveFile, got {type(file).__name__}")
        self._check_path(path)
        key = (path, _dv_id(dv))
        if key in self._removes or (isinstance(entry, str) and any(k[0] == path for k in self._removes)):
            raise InvalidArgumentError(f"file {path!r} is removed twice in one transaction")
        self._removes[key] = entry
        self._remove_data_change[path] = bool(data_change) if not isinstance(entry, RemoveFile) \
            else entry.data_change
        self._read.removed_paths.add(path)

    def remove_files(self, files: Iterable[str | AddFile | RemoveFile], data_change: bool = True) -> None:
        for f in files:
            self.remove_file(f, data_change)

    def set_txn(self, app_id: str, version: int) -> None:
        """Record application transaction ``app_id`` at ``version`` (exactly-once writers).

        A concurrent commit that sets the same ``app_id`` makes this commit fail
        instead of both landing.
        """
        self._check_open()
        if not isinstance(app_id, str) or not app_id:
            raise InvalidArgumentError("app_id must be a non-empty string")
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgumentError(f"txn version must be an integer, got {version!r}")
        self._txns[app_id] = Txn(app_id, version, None)
        self._read.read_app_ids.add(app_id)

    def set_domain_metadata(self, domain: str, configuration: str | None, removed: bool = False) -> None:
        """Set (or with ``removed=True`` delete) a user metadata domain."""
        self._check_open()
        if not isinstance(domain, str) or not domain:
            raise InvalidArgumentError("domain must be a non-empty string")
        if domain.startswith("delta."):
            raise InvalidArgumentError(f"metadata domain {domain!r} is reserved for Delta itself")
        self._domains[domain] = DomainMetadata(domain, configuration or "", removed)
        self._read.domains.add(domain)

    def set_metadata(self, metadata: Metadata) -> None:
        """Replace the table metadata (schema, partitioning, properties) in this commit."""
        self._check_open()
        if not isinstance(metadata, Metadata):
            raise InvalidArgumentError(f"set_metadata takes a Metadata, got {type(metadata).__name__}")
        conf = dict(metadata.configuration)
        requests = {k: conf.pop(k) for k in list(conf)
                    if k in _PROTOCOL_REQUEST_PROPERTIES or k.startswith(FEATURE_PROPERTY_PREFIX)}
        if requests:
            self._protocol_requests.update(requests)
            metadata = Metadata(metadata.id, metadata.schema_string, metadata.partition_columns, conf,
                                metadata.name, metadata.description, metadata.format_provider,
                                dict(metadata.format_options), metadata.created_time)
        self._metadata = metadata
        self._read.changes_metadata = True

    def set_properties(self, properties: dict[str, Any]) -> None:
        """Set table properties (``None`` removes one); e.g. ``delta.enableInCommitTimestamps``."""
        self._check_open()
        if not isinstance(properties, dict) or not properties:
            raise InvalidArgumentError("properties must be a non-empty dict")
        base = self.metadata
        if base is None:
            raise InvalidArgumentError("set_properties needs an existing table (or set_metadata first)")
        updates: dict[str, str | None] = {}
        for k, v in properties.items():
            if not isinstance(k, str) or not k:
                raise InvalidArgumentError(f"property names must be non-empty strings, got {k!r}")
            updates[k] = None if v is None else (("true" if v else "false") if isinstance(v, bool) else str(v))
        self.set_metadata(base.with_configuration(updates))

    def set_protocol(self, protocol: Protocol) -> None:
        """Upgrade the protocol in this commit (downgrades are refused at commit)."""
        self._check_open()
        if not isinstance(protocol, Protocol):
            raise InvalidArgumentError(f"set_protocol takes a Protocol, got {type(protocol).__name__}")
        self._protocol = protocol
        self._read.changes_protocol = True

    # ---------------------------------------------------------------- commit
    def __enter__(self) -> "Transaction":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            self.abort()
            return False
        if self._state == "open":
            self.commit()
        return False

    def abort(self) -> None:
        """Give up: nothing is committed and the transaction cannot be used any more."""
        if self._state == "open":
            self._state = "aborted"

    def commit(self) -> int:
        """Commit and return the new version.

        Raises ConcurrentModificationError on a logical conflict (nothing committed),
        CommitFailedError when retries are exhausted or the commit owner refuses, and
        InvalidArgumentError / UnsupportedFeatureError for invalid changes (nothing written).
        """
        self._check_open()
        self._state = "committing"
        try:
            plan = self._plan()
            committer = Committer(self.table, plan, self._provenance(), self.clock, self.max_retries)
            try:
                version = committer.commit()
            finally:
                self.attempts, self.outcome_unknown = committer.attempts, committer.outcome_unknown
        except BaseException:
            self._state = "failed"
            raise
        self._state = "committed"
        self.version = version
        return version

    def _provenance(self) -> CommitProvenance:
        return CommitProvenance(self.operation, self.operation_parameters, self.user_metadata, self.job,
                                self.operation_metrics, self.txn_id)

    def validate(self) -> None:
        """Check the changes gathered so far without committing (raises what :meth:`commit` would)."""
        self._check_open()
        self._plan()

    # ----- planning: validate everything once
    def _plan(self) -> CommitPlan:
        snap = self.snapshot
        old_protocol = snap.protocol if snap is not None else None
        old_metadata = snap.metadata if snap is not None else None
        if snap is None and self._metadata is None:
            raise InvalidArgumentError("creating a table needs its metadata (use DeltaTable.create)")
        metadata = self._metadata or old_metadata
        assert metadata is not None
        if self._metadata is not None:
            self._validate_metadata(metadata, old_metadata)

        base = self._protocol or old_protocol or Protocol(1, 2)
        if self._protocol is not None and old_protocol is not None and is_downgrade(old_protocol, self._protocol):
            raise InvalidArgumentError(
                f"protocol {self._protocol.to_json()} would drop support that the table has "
                f"({old_protocol.to_json()}); protocols can only be upgraded")
        features = features_in_use(metadata.schema_string, metadata.configuration) if self._metadata else set()
        features |= {k[len(FEATURE_PROPERTY_PREFIX):] for k, v in self._protocol_requests.items()
                     if k.startswith(FEATURE_PROPERTY_PREFIX) and str(v).lower() in ("supported", "enabled")}
        try:
            min_r = int(self._protocol_requests.get(MIN_READER_VERSION_PROPERTY, 1))
            min_w = int(self._protocol_requests.get(MIN_WRITER_VERSION_PROPERTY, 1))
        except ValueError:
            raise InvalidArgumentError(f"{MIN_READER_VERSION_PROPERTY}/{MIN_WRITER_VERSION_PROPERTY} must be "
                                       "integers") from None
        protocol = protocol_with_features(base, features, min_reader=min_r, min_writer=min_w)
        if old_protocol is not None:
            check_writable(old_protocol)
        check_writable(protocol)
        protocol_changed = old_protocol is None or protocol != old_protocol
        self._read.changes_protocol = protocol_changed
        self._read.changes_metadata = self._metadata is not None

        ict_before = snap is not None and ict.is_enabled(old_protocol, old_metadata)
        ict_after = ict.is_enabled(protocol, metadata)
        enabling = ict_after and not ict_before and snap is not None
        if self._metadata is not None and not ict_after and (
                ict.ENABLEMENT_VERSION_PROPERTY in metadata.configuration
                or ict.ENABLEMENT_TIMESTAMP_PROPERTY in metadata.configuration):
            metadata = ict.without_enablement(metadata)
        if self._metadata is not None and ict_before and ict_after and old_metadata is not None:
            # keep the provenance of the original enablement
            keep = {k: old_metadata.configuration.get(k) for k in
                    (ict.ENABLEMENT_VERSION_PROPERTY, ict.ENABLEMENT_TIMESTAMP_PROPERTY)}
            metadata = metadata.with_configuration(keep)

        if MANAGED_OWNER_PROPERTY in metadata.configuration and not ict_after:
            raise InvalidArgumentError("a managed-commit table needs in-commit timestamps; they cannot be "
                                       "turned off while a commit owner manages the table")
        removes = self._resolve_removes(snap)
        if self._metadata is not None and old_metadata is not None:
            self._check_layout_change(snap, old_metadata, metadata, removes)
        self._validate_adds(metadata)
        conf = metadata.configuration
        if is_true(conf, APPEND_ONLY_PROPERTY) and any(
                r.data_change for r in removes):
            raise InvalidArgumentError(
                "this table is append-only (delta.appendOnly=true): files cannot be removed with "
                "dataChange=true; unset the property first if you really mean to delete data")
        if any(a.data_change for a in self._adds.values()):
            check_can_add_data(protocol, metadata)

        level = self.isolation_level or conf.get(ISOLATION_LEVEL_PROPERTY) or WRITE_SERIALIZABLE
        if level not in ISOLATION_LEVELS:
            level = WRITE_SERIALIZABLE
        only_rearranges = (self._adds or removes) and not any(a.data_change for a in self._adds.values()) \
            and not any(r.data_change for r in removes)
        self._read.isolation_level = SNAPSHOT_ISOLATION if only_rearranges else level

        owner = require_owner(self.table.uri, self.table.commit_owner, old_protocol, old_metadata) \
            if old_protocol is not None and old_metadata is not None else None
        return CommitPlan(
            read_version=self.read_version, protocol=protocol if protocol_changed else None,
            metadata=metadata if self._metadata is not None else None, adds=list(self._adds.values()),
            removes=removes, txns=list(self._txns.values()), domains=list(self._domains.values()),
            read_set=self._read, ict_before=ict_before, ict_after=ict_after, enabling=enabling,
            isolation_level=self._read.isolation_level, blind_append=self._is_blind_append(removes),
            owner=owner, table_id=old_metadata.id if old_metadata is not None else metadata.id,
            prev_timestamp=snap.timestamp if snap is not None else None,
            final_configuration=dict(metadata.configuration))

    def _validate_metadata(self, metadata: Metadata, old: Metadata | None) -> None:
        if not metadata.id:
            raise InvalidArgumentError("metadata needs a table id")
        if old is not None and metadata.id != old.id:
            raise InvalidArgumentError(f"the table id cannot change (table {old.id}, new metadata {metadata.id})")
        if metadata.format_provider != "parquet":
            raise InvalidArgumentError(f"only parquet tables can be written, not {metadata.format_provider!r}")
        schema = schema_to_arrow(metadata.schema_string)
        validate_partition_columns(schema, metadata.partition_columns)
        for k, v in metadata.configuration.items():
            if not isinstance(k, str) or not isinstance(v, str):
                raise InvalidArgumentError(f"table property {k!r} must map a string to a string")
        if ict.ENABLE_PROPERTY in metadata.configuration and \
                metadata.configuration[ict.ENABLE_PROPERTY].strip().lower() not in ("true", "false"):
            raise InvalidArgumentError(f"{ict.ENABLE_PROPERTY} must be 'true' or 'false'")
        owner_old = (old.configuration.get(MANAGED_OWNER_PROPERTY) if old is not None else None)
        owner_new = metadata.configuration.get(MANAGED_OWNER_PROPERTY)
        if old is not None and owner_old != owner_new:
            # Ownership changes need the owner's cooperation (RFC conversion protocol): a plain
            # commit would never tell the new owner, or would bypass the old one's backfill.
            if owner_old and owner_new:
                what = "cannot be replaced directly; disable managed commits first"
            elif owner_new:
                what = "is set with table.enable_managed_commits(owner), not by a plain commit"
            else:
                what = "is removed with table.disable_managed_commits(), not by a plain commit"
            raise InvalidArgumentError(f"{MANAGED_OWNER_PROPERTY} {what}")

    def _check_layout_change(self, snap: Snapshot, old: Metadata, new: Metadata,
                             removes: list[RemoveFile]) -> None:
        """Partitioning or an incompatible schema may only change when all data is replaced.

        Files written under the old layout stay in the table otherwise, and readers
        would misread them. Additive changes (new nullable columns) are fine.
        """
        if new.partition_columns == old.partition_columns and new.schema_string == old.schema_string:
            return
        removed = {r.path for r in removes}
        live = set(snap.files().column("path").to_pylist())
        if live <= removed:
            return                              # everything is rewritten: any new layout is fine
        if new.partition_columns != old.partition_columns:
            raise InvalidArgumentError(
                f"partition columns cannot change from {list(old.partition_columns)} to "
                f"{list(new.partition_columns)} while the table keeps files written with the old "
                "partitioning; overwrite all data in the same commit")
        old_schema, new_schema = schema_to_arrow(old.schema_string), schema_to_arrow(new.schema_string)
        for f in old_schema:
            idx = new_schema.get_field_index(f.name)
            if idx < 0 or not new_schema.field(idx).type.equals(f.type, check_metadata=False):
                raise InvalidArgumentError(
                    f"column {f.name!r} would be dropped or change type while existing files still hold it; "
                    "overwrite all data in the same commit")
        for f in new_schema:
            if old_schema.get_field_index(f.name) < 0 and not f.nullable:
                raise InvalidArgumentError(f"new column {f.name!r} must be nullable: existing files have no values")

    def _validate_adds(self, metadata: Metadata) -> None:
        cols = set(metadata.partition_columns)
        for (path, dv), add in self._adds.items():
            keys = set(add.partition_values or {})
            if keys != cols:
                raise InvalidArgumentError(
                    f"file {path!r} has partition values for {sorted(keys)} but the table is partitioned "
                    f"by {sorted(cols)}")
            for k, v in (add.partition_values or {}).items():
                if v is not None and not isinstance(v, str):
                    raise InvalidArgumentError(f"file {path!r}: partition value of {k!r} must be a string or None")
            if (path, dv) in self._removes:
                raise InvalidArgumentError(f"file {path!r} is both added and removed in one transaction")

    def _resolve_removes(self, snap: Snapshot | None) -> list[RemoveFile]:
        """Turn removes into full RemoveFile actions, checking that each file is live at the read version."""
        if not self._removes:
            return []
        if snap is None:
            raise InvalidArgumentError("a table that does not exist yet has no files to remove")
        paths = sorted({k[0] for k in self._removes})
        files = snap.files()
        live = files.filter(pc.is_in(files["path"], value_set=pa.array(paths, pa.string())))
        rows = {r["path"]: r for r in live.select(
            [c for c in ("path", "partition_values", "size", "deletion_vector", "tags")
             if c in live.column_names]).to_pylist()}
        missing = [p for p in paths if p not in rows]
        if missing:
            raise InvalidArgumentError(
                f"cannot remove {len(missing)} file(s) that are not in the table at version {snap.version}: "
                f"{missing[:5]}{'...' if len(missing) > 5 else ''}")
        now = int(self.clock())
        out: list[RemoveFile] = []
        for (path, _dv), entry in self._removes.items():
            row = rows[path]
            if isinstance(entry, RemoveFile):
                rm = entry
                if rm.deletion_timestamp in (None, 0):
                    rm = RemoveFile(rm.path, now, rm.data_change, rm.extended_file_metadata, rm.partition_values,
                                    rm.size, rm.stats, rm.tags, rm.deletion_vector)
            else:
                dv = row.get("deletion_vector")
                dv = {k: v for k, v in dv.items() if v is not None} if dv else None
                tags = dict(row["tags"]) if row.get("tags") else None
                out_pv = dict(row["partition_values"]) if row.get("partition_values") is not None else {}
                rm = RemoveFile(path, now, self._remove_data_change.get(path, True), True, out_pv,
                                row.get("size"), None, tags, dv)
            out.append(rm)
        return out

    def _is_blind_append(self, removes: list[RemoveFile]) -> bool:
        return not removes and all(a.data_change for a in self._adds.values()) and not self._read.read_anything

    # ----- helpers
    def _check_open(self) -> None:
        if self._state != "open":
            raise InvalidArgumentError(f"transaction is {self._state}; start a new one")

    def _require_snapshot(self, what: str) -> Snapshot:
        snap = self.snapshot
        if snap is None:
            raise InvalidArgumentError(f"cannot {what}: the table does not exist yet")
        return snap

    @staticmethod
    def _check_path(path: Any) -> None:
        if not isinstance(path, str) or not path:
            raise InvalidArgumentError(f"file paths must be non-empty strings, got {path!r}")
        first = path.lstrip("/").split("/", 1)[0]
        if first == LOG_DIR:
            raise InvalidArgumentError(f"{path!r} is inside {LOG_DIR}: data files cannot live there")


def enable_in_commit_timestamps(table: TableLog, **kwargs: Any) -> int:
    """Turn on in-commit timestamps; returns the version from which they apply.

    One commit upgrades the protocol (writer 7 with ``inCommitTimestamp``, keeping
    every feature the table already had, legacy ones listed explicitly) and sets
    ``delta.enableInCommitTimestamps=true`` together with the enablement version and
    timestamp. If they are already on, nothing is committed and the version they
    started at is returned.
    """
    snap = table.snapshot()
    if ict.is_enabled(snap.protocol, snap.metadata):
        return int(snap.metadata.configuration.get(ict.ENABLEMENT_VERSION_PROPERTY, 0))
    kwargs.setdefault("operation", "SET TBLPROPERTIES")
    kwargs.setdefault("operation_parameters", {"properties": {ict.ENABLE_PROPERTY: "true"}})
    kwargs.setdefault("read_version", snap.version)
    txn = Transaction(table, **kwargs)
    txn.set_properties({ict.ENABLE_PROPERTY: "true"})
    return txn.commit()
