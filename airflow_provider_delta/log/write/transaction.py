"""Optimistic transactions: gather changes against one snapshot, then commit them once.

A :class:`Transaction` reads one snapshot (its *read version*) and gathers what the
caller wants to change (files added and removed, application transaction ids,
domain metadata, metadata, protocol) and what the caller's result depends on
(files or partitions read, app ids looked up). Committing is two steps, each in
its own module:

1. :func:`~.commit_plan.plan_commit` validates everything once, against the read
   snapshot, into a typed :class:`~.commit_plan.CommitPlan`; bad input fails there
   with a typed error and nothing on disk;
2. the :class:`~.committer.Committer` writes it as the next free version, checking
   winners of lost races for conflicts and retrying, and runs post-commit hooks.
"""
from __future__ import annotations

import json
import logging
import uuid
from typing import Any, Callable, Iterable

import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base import ict
from ..base.actions import Metadata, Protocol
from ..base.commit_actions import AddFile, DomainMetadata, RemoveFile, Txn
from .commit_info import CommitProvenance, is_own_commit
from .commit_plan import CommitPlan, PendingChanges, dv_unique_id, plan_commit
from .commit_successor import commit_is_read
from .committer import Committer
from .conflicts import canonical_partition_value
from .isolation import ISOLATION_LEVELS
from .restored_version import check_restored_metadata
from ..base.errors import InvalidArgumentError, TableNotFoundError, VersionNotFoundError
from ..base.features import (FEATURE_PROPERTY_PREFIX, MIN_READER_VERSION_PROPERTY,
                             MIN_WRITER_VERSION_PROPERTY)
from ..base.names import LOG_DIR
from ..base.path_spelling import LOG_PATH_COLUMN
from ..base.property_values import check_property_values, checked_names
from ..base.schema import schema_to_arrow, serialize_partition_value
from ..read.column_mapping import partition_keys
from ..read.protocol_metadata import load_protocol_metadata
from ..read.segment import build_segment
from ..read.snapshot import Snapshot, load_snapshot
from ..read.table_log import TableLog

log = logging.getLogger(__name__)

_PROTOCOL_REQUEST_PROPERTIES = (MIN_READER_VERSION_PROPERTY, MIN_WRITER_VERSION_PROPERTY)


def _json_safe(value: Any, what: str) -> Any:
    try:
        return json.loads(json.dumps(value, default=str))
    except (TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{what} must be JSON-serializable: {e}") from None


def file_key(path: str, dv: dict[str, Any] | None) -> tuple[str, str | None]:
    """A logical file's identity in a transaction: its path and its deletion vector's uniqueId."""
    return path, dv_unique_id(dv)


def check_same_table(table: TableLog, snapshot: Snapshot) -> None:
    """Refuse a read snapshot of another table than the one now at ``table``'s location.

    The URI is not enough: a table deleted and created again at the same place (then appended to)
    has a version ``snapshot.version`` too, and a transaction based on the former table's snapshot
    would check conflicts against the new table's commits as if they followed it and commit the
    former table's metaData over the new one. The table id (``metaData.id``, fixed for a table's
    life) of the table at that version must be the snapshot's; a version the location no longer
    has (a shorter new table, a managed or staged version this handle does not see) is refused too.
    Cost: one listing and the protocol/metadata of that version (the commits since its checkpoint),
    no file list. Raises :class:`InvalidArgumentError`; nothing is written.
    """
    where = f"{table.uri} at version {snapshot.version}"
    try:
        _, metadata = load_protocol_metadata(table.storage, build_segment(table.storage, table.listing(),
                                                                          snapshot.version))
    except (TableNotFoundError, VersionNotFoundError) as e:
        raise InvalidArgumentError(f"read_snapshot is not a snapshot of the table now at {table.uri}: {e}; nothing "
                                   "was written") from None
    if metadata.id != snapshot.metadata.id:
        raise InvalidArgumentError(
            f"read_snapshot is a snapshot of another table (id {snapshot.metadata.id}) than the one now at {where} "
            f"(id {metadata.id}): the table was deleted and created again there. Nothing was written; load a "
            "snapshot of the table as it is now")


class Transaction:
    """One optimistic commit. Use as a context manager (commits on a clean exit) or call :meth:`commit`.

    ``read_version`` pins the snapshot the transaction is based on (default: the
    latest); ``-1`` means the table must not exist yet (table creation). ``read_snapshot``:
    that snapshot, already loaded by the caller (a snapshot of this table's location), so its
    file list is not loaded a second time; its version is the read version. ``clock``
    returns epoch milliseconds; tests replace it to make time go backwards.
    ``isolation_level`` defaults to the table's ``delta.isolationLevel``, else
    ``Serializable`` (Delta Spark's default; see :mod:`.isolation`). ``large_commit_info``:
    write ``commitInfo`` as Delta Spark's ``commitLarge`` (RESTORE, CLONE) does, see
    :meth:`~.commit_info.CommitProvenance.recorded_isolation_level`.
    """

    def __init__(self, table: TableLog, operation: str = "WRITE",
                 operation_parameters: dict[str, Any] | None = None, isolation_level: str | None = None,
                 user_metadata: str | None = None, job: dict[str, Any] | None = None, max_retries: int | None = None,
                 read_version: int | None = None, clock: Callable[[], int] | None = None,
                 operation_metrics: dict[str, Any] | None = None,
                 enlist: Callable[["Transaction"], None] | None = None,
                 large_commit_info: bool = False, read_snapshot: Snapshot | None = None):
        if not isinstance(operation, str) or not operation.strip():
            raise InvalidArgumentError("operation must be a non-empty string, e.g. 'WRITE'")
        if isolation_level is not None and isolation_level not in ISOLATION_LEVELS:
            raise InvalidArgumentError(f"isolation_level must be one of {ISOLATION_LEVELS}, got {isolation_level!r}")
        if max_retries is not None and (isinstance(max_retries, bool) or not isinstance(max_retries, int)
                                        or max_retries < 0):
            raise InvalidArgumentError(f"max_retries must be a non-negative integer or None, got {max_retries!r}")
        if read_version is not None and (isinstance(read_version, bool) or not isinstance(read_version, int)
                                         or read_version < -1):
            raise InvalidArgumentError(f"read_version must be an integer >= -1, got {read_version!r}")
        if read_snapshot is not None and (not isinstance(read_snapshot, Snapshot) or read_snapshot.uri != table.uri
                                          or read_version not in (None, read_snapshot.version)):
            raise InvalidArgumentError(f"read_snapshot must be a snapshot of {table.uri} (at read_version when both "
                                       f"are given), got {read_snapshot!r}")
        if read_snapshot is not None:
            check_same_table(table, read_snapshot)
        if user_metadata is not None and not isinstance(user_metadata, str):
            raise InvalidArgumentError("user_metadata must be a string")
        if job is not None and not isinstance(job, dict):
            raise InvalidArgumentError("job must be a dict (e.g. dag_id, task_id, run_id, try_number)")
        self.table = table
        self.operation = operation
        self.operation_parameters = dict(operation_parameters or {})
        self.isolation_level = isolation_level
        self.large_commit_info = bool(large_commit_info)
        self.user_metadata = user_metadata
        self.job = _json_safe(job, "job") if job else None
        self.max_retries = max_retries
        self.clock: Callable[[], int] = clock or ict.system_clock
        self.operation_metrics = dict(operation_metrics or {})
        self.txn_id = str(uuid.uuid4())
        self._read_version = read_version if read_snapshot is None else read_snapshot.version
        self._snapshot: Snapshot | None = read_snapshot
        self._snapshot_loaded = read_version == -1 or read_snapshot is not None
        self._changes = PendingChanges()
        self._state = "open"
        #: the committed version, once :meth:`commit` succeeded
        self.version: int | None = None
        #: how many attempts the commit took
        self.attempts = 0
        #: True if a commit owner failed in a way that leaves the outcome unknown
        self.outcome_unknown = False
        #: set for a participant of a multi-table transaction: :meth:`commit` validates and
        #: hands the transaction to the group, which commits it with the other participants
        self._enlist = enlist
        self._plan: CommitPlan | None = None

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
        if self._changes.metadata is not None:
            return self._changes.metadata
        snap = self.snapshot
        return snap.metadata if snap is not None else None

    def mark_read(self, paths: Iterable[str] | str) -> None:
        """Declare that the result depends on these files (``"all"``: on the whole table).

        Paths may be given as ``files()`` returns them or as the log spells them. Concurrent
        removal of a read file then conflicts (ConcurrentDeleteRead); reading everything also
        conflicts with concurrent appends (ConcurrentAppend; blind appends only count under
        Serializable, the default).
        """
        self._check_open()
        if isinstance(paths, str):
            if paths == "all":
                self._changes.read.read_all = True
                return
            paths = [paths]
        for p in paths:
            if not isinstance(p, str) or not p:
                raise InvalidArgumentError(f"file paths must be non-empty strings, got {p!r}")
            self._changes.read.read_paths.add(p)

    def read_partitions(self, partitions: dict[str, Any]) -> None:
        """Declare that the result depends on the partitions matching ``{column: value or [values]}``.

        As Delta Spark's ``filterFiles`` does, the live files of those partitions count as read
        too: a concurrent remove of one of them conflicts (ConcurrentDeleteRead).
        """
        self.read_files(partitions)

    def read_files(self, partitions: dict[str, Any] | None = None) -> pa.Table:
        """The live files (optionally only in matching partitions), recorded as read."""
        self._check_open()
        snap = self._require_snapshot("read files")
        files = snap.files()
        if partitions is None:
            self._changes.read.read_all = True
        else:
            predicate = self._predicate(partitions)
            self._changes.read.partition_predicates.append(predicate)
            types = self._partition_key_types()
            self._changes.read.partition_types.update(types)
            mask = None
            for key, allowed in predicate.items():
                values = ak.map_lookup(files["partition_values"], ab.scalar(key, pa.string()), "first")
                values = ak.if_else(ak.equal(values, ab.scalar("")), pa.nulls(1, pa.string())[0], values)
                # compare canonical forms: other writers may spell the same value differently
                raw = [u for u in ak.unique(values).to_pylist() if u is not None
                       and canonical_partition_value(u, types.get(key)) in allowed]
                m = ak.is_in(values, ab.array(raw, pa.string()))
                if None in allowed:
                    m = ak.or_(m, ak.is_null(values))
                m = ak.fill_null(m, ab.scalar(False))
                mask = m if mask is None else ak.and_(mask, m)
            if mask is not None:
                files = ak.filter(files, mask)
        self._changes.read.read_paths.update(files.column("path").to_pylist())
        if LOG_PATH_COLUMN in files.column_names:      # the keys too: a winner's remove is matched by its key
            self._changes.read.read_paths.update(k for k in files.column(LOG_PATH_COLUMN).to_pylist() if k)
        return files

    def transaction_version(self, app_id: str) -> int | None:
        """The table's version of application transaction ``app_id`` (None if unknown), recorded as read."""
        self._check_open()
        self._changes.read.read_app_ids.add(app_id)
        snap = self.snapshot
        return None if snap is None else snap.transaction_version(app_id)

    def _predicate(self, partitions: dict[str, Any]) -> dict[str, set[str | None]]:
        """``{partitionValues key: {canonical values}}`` of ``{column: value or [values]}``.

        Predicates are on the read snapshot's partition columns (Delta Spark's
        ``partitionSchemaAtReadTime``), keyed as its files' ``partitionValues`` are: by
        physical name under column mapping.
        """
        if not isinstance(partitions, dict) or not partitions:
            raise InvalidArgumentError("partitions must be a non-empty dict {column: value or [values]}")
        meta = self._require_snapshot("read partitions").metadata
        cols = list(meta.partition_columns)
        keys = dict(zip(cols, partition_keys(cols, meta.schema_string, meta.configuration)))
        types = self._partition_key_types()
        out: dict[str, set[str | None]] = {}
        for col, value in partitions.items():
            if col not in keys:
                raise InvalidArgumentError(f"{col!r} is not a partition column (partition columns: {cols})")
            values = value if isinstance(value, (list, tuple, set, frozenset)) else [value]
            out[keys[col]] = {serialize_partition_value(v, types[keys[col]]) for v in values}
        return out

    def _partition_key_types(self) -> dict[str, pa.DataType]:
        """The read snapshot's partition column types by ``partitionValues`` key."""
        snap = self.snapshot
        if snap is None:
            return {}
        meta = snap.metadata
        schema = schema_to_arrow(meta.schema_string)
        cols = list(meta.partition_columns)
        return {key: schema.field(c).type
                for c, key in zip(cols, partition_keys(cols, meta.schema_string, meta.configuration))}

    # ---------------------------------------------------------------- changes
    def add_file(self, add: AddFile) -> None:
        """Add one data file (path relative to the table root, not URL-encoded)."""
        self._check_open()
        if not isinstance(add, AddFile):
            raise InvalidArgumentError(f"add_file takes an AddFile, got {type(add).__name__}")
        self._check_path(add.path)
        if any(seg in (".", "..") for seg in add.path.split("/")):
            # Delta Spark's canonical path (new Path(new URI(p))) drops such segments, our replay
            # does not (and delta-rs cannot open "./p"): "./p" beside "p" is one file to it, two to us
            raise InvalidArgumentError(f"file path {add.path!r} has a '.' or '..' segment: name the file without "
                                       "them (readers disagree on whether it is the same file as without)")
        if isinstance(add.size, bool) or not isinstance(add.size, int) or add.size < 0:
            raise InvalidArgumentError(f"file {add.path!r}: size must be a non-negative integer")
        key = file_key(add.path, add.deletion_vector)
        if key in self._changes.adds:
            raise InvalidArgumentError(f"file {add.path!r} is added twice in one transaction")
        self._changes.adds[key] = add
        self._changes.read.added_paths.add(add.path)

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
        key = file_key(path, dv)
        if key in self._changes.removes or (isinstance(entry, str) and any(k[0] == path for k in self._changes.removes)):
            raise InvalidArgumentError(f"file {path!r} is removed twice in one transaction")
        self._changes.removes[key] = entry
        self._changes.remove_data_change[path] = bool(data_change) if not isinstance(entry, RemoveFile) \
            else entry.data_change
        self._changes.read.removed_paths.add(path)

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
        earlier = self._changes.txns.get(app_id)
        if earlier is not None and earlier.version != version:
            # Delta Spark's checkForSetTransactionConflictAndDedup: one commit, one version per app id
            raise InvalidArgumentError(f"application transaction {app_id!r} is set to {earlier.version} and "
                                       f"{version} in one transaction; a commit records one version per app id")
        self._changes.txns[app_id] = Txn(app_id, version, None)
        self._changes.read.read_app_ids.add(app_id)

    def set_domain_metadata(self, domain: str, configuration: str | None, removed: bool = False) -> None:
        """Set (or with ``removed=True`` delete) a user metadata domain.

        The commit checks it (:func:`..base.feature_actions.check_domains`): the table needs the
        ``domainMetadata`` feature (this commit may add it), and ``delta.*`` domains belong to Delta.
        """
        self._check_open()
        if not isinstance(domain, str) or not domain:
            raise InvalidArgumentError("domain must be a non-empty string")
        self._changes.domains[domain] = DomainMetadata(domain, configuration or "", removed)
        self._changes.read.domains.add(domain)

    def set_metadata(self, metadata: Metadata, *, of_restored_version: int | Snapshot | None = None) -> None:
        """Replace the table metadata (schema, partitioning, properties) in this commit. Known
        ``delta.*`` values it changes are checked (:mod:`..base.property_values`); values the table
        already has pass as they are.

        ``of_restored_version``: the version whose metadata this is (or its snapshot, already
        loaded), committed together with exactly that version's files (RESTORE). Every file it
        keeps was written under that metadata, so the rules for changing a schema over existing
        files (layout, new columns' mapping, new CHECK constraints) do not apply - which is why the
        claim is verified (:mod:`.restored_version`): the schema, partitioning and constraints must
        be that version's own, and the commit must leave exactly that version's files live.
        """
        self._check_open()
        if not isinstance(metadata, Metadata):
            raise InvalidArgumentError(f"set_metadata takes a Metadata, got {type(metadata).__name__}")
        restored = None
        if of_restored_version is not None:
            restored = self._restored_snapshot(of_restored_version)
            check_restored_metadata(metadata, restored)
        snap = self.snapshot
        current = snap.metadata.configuration if snap is not None else {}
        changed: dict[str, str | None] = {k: v for k, v in metadata.configuration.items() if current.get(k) != v}
        changed.update({k: None for k in current if k not in metadata.configuration})
        check_property_values(changed, metadata.configuration)
        conf = dict(metadata.configuration)
        requests = {k: conf.pop(k) for k in list(conf)
                    if k in _PROTOCOL_REQUEST_PROPERTIES or k.startswith(FEATURE_PROPERTY_PREFIX)}
        if requests:
            self._changes.protocol_requests.update(requests)
            metadata = Metadata(metadata.id, metadata.schema_string, metadata.partition_columns, conf,
                                metadata.name, metadata.description, metadata.format_provider,
                                dict(metadata.format_options), metadata.created_time)
        self._changes.metadata = metadata
        self._changes.restored_version = restored
        self._changes.read.changes_metadata = True

    def _restored_snapshot(self, version: Any) -> Snapshot:
        """The snapshot of the version a restore brings back: loaded, or the caller's own of this table."""
        if isinstance(version, Snapshot):
            snap = self._require_snapshot("restore a version")
            if version.metadata.id != snap.metadata.id or version.version > snap.version:
                raise InvalidArgumentError(f"of_restored_version must be a snapshot of this table ({snap.uri}) at "
                                           f"or before version {snap.version}, got {version!r}")
            return version
        if isinstance(version, bool) or not isinstance(version, int):
            raise InvalidArgumentError(f"of_restored_version must be the version whose metadata this is, got "
                                       f"{version!r}")
        return self.table.snapshot(version=version)

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
        updates = checked_names(updates, base.configuration)
        metadata = base.with_configuration(updates)
        check_property_values(updates, metadata.configuration)
        self.set_metadata(metadata)

    def set_protocol(self, protocol: Protocol) -> None:
        """Upgrade the protocol in this commit (downgrades are refused at commit)."""
        self._check_open()
        if not isinstance(protocol, Protocol):
            raise InvalidArgumentError(f"set_protocol takes a Protocol, got {type(protocol).__name__}")
        self._changes.protocol = protocol
        self._changes.read.changes_protocol = True

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
        if self._enlist is not None:
            self._check_open()
            self._plan = plan_commit(self.table, self.snapshot, self._changes, self.isolation_level, self.clock)
            self._enlist(self)
            self._state = "enlisted"
            return self.read_version + 1        # proposed; the group decides the final version
        self._state = "committing"
        try:
            plan = plan_commit(self.table, self.snapshot, self._changes, self.isolation_level, self.clock,
                               self.operation)
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

    def landed_version(self) -> int | None:
        """The version holding this transaction's commit, found in the log and read by snapshots (None if none).

        After :meth:`commit` raised, this resolves the outcome before anything the commit
        would reference is deleted: the commits after the version it read are searched
        for its ``commitInfo.txnId``. Only an answer from the log counts; a transaction
        whose outcome is unknown (:attr:`outcome_unknown`) and not found may still land.
        A commit file found by name counts only if a snapshot reads it: no hole is possible
        around it (:func:`.commit_successor.commit_is_read`), or the latest snapshot shows
        the txn records it set. One left in a hole (an undecided hole check keeps its file; a
        failed withdrawal leaves it) is not the table's, and neither is it surely not committed.
        """
        if self.version is not None:
            return self.version
        found = self._own_commit_file()
        if found is None or self.table.commit_owner is not None:
            return found        # commits through an owner or catalog are ratified by it: no hole
        if commit_is_read(self.table.storage, found):
            return found
        txns = self._changes.txns
        if txns:
            try:   # a fresh load: an incremental update of a cached snapshot replays a commit file in a hole
                latest = load_snapshot(self.table, None)
            except Exception:   # noqa: BLE001 - not readable now: not shown read
                return None
            if all(latest.transaction_version(t.app_id) == t.version for t in txns.values()):
                return found
        return None

    def _own_commit_file(self) -> int | None:
        """The version whose commit file carries this transaction's ``txnId`` (None if none does)."""
        if self._state in ("open", "aborted"):
            return None
        start = self._read_version + 1 if isinstance(self._read_version, int) else 0
        try:
            latest = self.table.latest_version()
        except TableNotFoundError:
            return None
        for v in range(start, latest + 1):
            try:
                actions = self.table.read_commit(v)
            except (VersionNotFoundError, FileNotFoundError):
                continue
            if is_own_commit(actions, self.txn_id):
                return v
        return None

    def surely_not_committed(self) -> bool:
        """Whether the log shows that this transaction did not commit: only then may what it would
        have referenced be deleted. False on any doubt (outcome unknown, its commit file found in the
        log, even one no snapshot reads, or the log cannot be read)."""
        if self._state in ("open", "aborted"):
            return True
        if self._state == "committed" or self.outcome_unknown:
            return False
        try:
            return self._own_commit_file() is None
        except Exception:  # the log cannot be read now: keep everything
            return False

    def _provenance(self, tags: dict[str, str] | None = None) -> CommitProvenance:
        return CommitProvenance(self.operation, self.operation_parameters, self.user_metadata, self.job,
                                self.operation_metrics, self.txn_id, dict(tags or {}),
                                self.large_commit_info)

    def committer(self, tags: dict[str, str] | None = None) -> Committer:
        """The validated plan of an enlisted transaction, ready to serialize (a group stages it).

        The plan is made against the transaction's read snapshot, as :meth:`commit` makes it.
        """
        if self._state != "enlisted" or self._plan is None:
            raise InvalidArgumentError(f"transaction is {self._state}; only an enlisted one is planned by its group")
        return Committer(self.table, self._plan, self._provenance(tags), self.clock, self.max_retries)

    def settle(self, version: int | None) -> None:
        """The group's outcome for an enlisted transaction: its version, or None (not committed)."""
        self._state = "committed" if version is not None else "failed"
        self.version = version

    def validate(self) -> None:
        """Check the changes gathered so far without committing (raises what :meth:`commit` would)."""
        self._check_open()
        plan_commit(self.table, self.snapshot, self._changes, self.isolation_level, self.clock, self.operation)

    # ----- planning: validate everything once
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

