"""Planning a commit: validate a transaction's changes once, against the snapshot it read.

Everything that does not depend on the attempt is decided here, before the first
write, so bad input fails with a typed error and nothing on disk:

- metadata: table id unchanged, parquet only, valid partition columns, string
  properties; protocol requests (``delta.minReaderVersion``, ``delta.feature.*``)
  taken out of the properties and turned into protocol support;
- protocol: the smallest protocol for the features in use, never a downgrade, and
  one this package may write (:mod:`.features`);
- in-commit timestamps: turned on or off, their enablement provenance kept or
  dropped (:mod:`.ict`); managed-commit tables keep them on;
- column mapping: ids and physical names assigned (never taken from a new column), mode
  changes checked (:mod:`.column_mapping_ids`);
- files: removes resolved against the live files of the read version, partition
  values of adds match the table, layout changes (partitioning, a schema existing
  files cannot be read under: :mod:`.schema_evolution`) only together with a full rewrite; actions a feature governs (deletion
  vectors, domains, row tracking fields) only where the protocol written declares
  it, and append-only as read (:mod:`..base.feature_actions`);
- isolation: the table's level, or snapshot isolation when the commit only
  rearranges data, as Delta Spark chooses (:mod:`.isolation`); what the conflict checks
  need to know about this commit (:class:`~.conflicts.ReadSet`); the commit owner to commit
  through (:mod:`.managed_state`).

The result is a :class:`CommitPlan`; the :mod:`.committer` lands it.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Callable

import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base import ict
from ..base.actions import Metadata, Protocol
from ..base.commit_actions import AddFile, DomainMetadata, RemoveFile, Txn
from ..base.path_spelling import (LOG_PATH_COLUMN, canonical_log_path, encode_path, existing_spelling,
                                  spelling_may_differ)
from ..base.storage import Storage
from ..read.column_mapping import partition_keys
from ..read.data_paths import ABSOLUTE_PATH_REGEX, split_uri, table_relative_to
from .conflicts import ReadSet
from .isolation import check_isolation_property, isolation_level_to_use, table_isolation_level
from ..base.errors import InvalidArgumentError
from ..base.iceberg_compat import check_iceberg_enablement
from .check_constraints import check_new_constraints_hold
from ..base.feature_actions import (check_append_only, check_deletion_vectors, check_domains, check_live_file_replaced,
                                    check_row_tracking_fields, dv_unique_id)
from ..base.features import (FEATURE_PROPERTY_PREFIX, FILE_REINSTATING_OPERATIONS,
                       MANAGED_OWNER_PROPERTY, MIN_READER_VERSION_PROPERTY, MIN_WRITER_VERSION_PROPERTY,
                       Operation, check_can_add_data, column_mapping_mode, features_in_use, is_downgrade,
                       protocol_with_features)
from ..base.commit_source import CommitCoordinator, require_through
from .column_expressions import check_new_columns_have_no_default, drop_unsupported_expressions
from .column_mapping_ids import (assign_column_mapping, check_change_feed_with_mapping_change,
                                 check_new_columns_bring_no_mapping)
from .commit_route import is_catalog_managed, require_owner
from .restored_version import check_restored_files
from .schema_evolution import check_files_stay_readable
from .type_changes import keep_type_changes
from ..base.schema import schema_to_arrow, validate_partition_columns
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog

#: a logical file: its path and its deletion vector's unique id (None without one)
FileKey = tuple[str, "str | None"]


@dataclass
class PendingChanges:
    """What an open transaction has gathered: the actions to commit and what it read."""

    adds: dict[FileKey, AddFile] = field(default_factory=dict)
    #: a RemoveFile as given, or a path whose details come from the read snapshot
    removes: dict[FileKey, RemoveFile | str] = field(default_factory=dict)
    remove_data_change: dict[str, bool] = field(default_factory=dict)
    txns: dict[str, Txn] = field(default_factory=dict)
    domains: dict[str, DomainMetadata] = field(default_factory=dict)
    metadata: Metadata | None = None
    #: the snapshot whose metadata ``metadata`` is, restored with exactly its files (RESTORE;
    #: :mod:`.restored_version` checks both halves)
    restored_version: Snapshot | None = None
    protocol: Protocol | None = None
    #: protocol requests found among the properties (``delta.minReaderVersion``, ``delta.feature.*``)
    protocol_requests: dict[str, str] = field(default_factory=dict)
    read: ReadSet = field(default_factory=ReadSet)


@dataclass(frozen=True)
class CommitPlan:
    """Everything one commit writes, validated: the committer only serializes and retries it."""

    #: the version the transaction read (-1: the table is being created)
    read_version: int
    #: protocol and metadata to write (None: unchanged)
    protocol: Protocol | None
    metadata: Metadata | None
    adds: list[AddFile]
    removes: list[RemoveFile]
    txns: list[Txn]
    domains: list[DomainMetadata]
    #: what the transaction read and touched, for conflict checks against winners
    read_set: ReadSet
    #: in-commit timestamps active before / after this commit, and turned on by it
    ict_before: bool
    ict_after: bool
    enabling: bool
    isolation_level: str
    blind_append: bool
    #: the commit owner or catalog to commit through (None: put-if-absent into _delta_log)
    owner: CommitCoordinator | None
    table_id: str
    #: the read version's commit timestamp (the floor of the next in-commit timestamp)
    prev_timestamp: int | None
    #: table properties after this commit (the auto-checkpoint interval comes from them)
    final_configuration: dict[str, str]
    #: the snapshot the transaction read (None: creating the table); the hole check after the put asks
    #: it which paths the log named before this commit (:mod:`.commit_successor`)
    read_snapshot: Snapshot | None = None



def plan_commit(table: TableLog, snap: Snapshot | None, changes: PendingChanges, isolation_level: str | None,
                clock: Callable[[], int], operation: str = "WRITE") -> CommitPlan:
    """Validate ``changes`` against the read snapshot (None: creating the table) and plan the commit.

    ``operation`` is the commit's operation name (``WRITE``, ``DELETE``, ``RESTORE``...), for the
    rules that depend on it.

    Raises InvalidArgumentError / UnsupportedFeatureError for anything the protocol or the
    table forbids; nothing is written.
    """
    if snap is not None:
        require_through(table.commit_owner, snap.protocol, Operation.COMMIT,
                        f"{table.uri} at version {snap.version}")  # the gate first
        snap.check_commits()      # never commit on top of a log a full read rejects
        _ = snap.schema           # ...nor on a schema that does not parse (raises CorruptLogError)
    old_protocol = snap.protocol if snap is not None else None
    old_metadata = snap.metadata if snap is not None else None
    if snap is None and changes.metadata is None:
        raise InvalidArgumentError("creating a table needs its metadata (use DeltaTable.create)")
    metadata = changes.metadata or old_metadata
    assert metadata is not None
    restoring = snap is not None and changes.metadata is not None and changes.restored_version is not None
    if changes.metadata is not None:
        _validate_metadata(metadata, old_metadata)
        check_iceberg_enablement(old_metadata.configuration if old_metadata is not None else None,
                                 metadata.configuration, creating=snap is None)
        if not restoring:     # a restore brings back rows and constraints together
            if check_new_constraints_hold(old_metadata, metadata, snap):
                changes.read.read_all = True     # validated against the whole table: appends meanwhile conflict
        if old_protocol is not None and old_metadata is not None:
            metadata = drop_unsupported_expressions(old_protocol, metadata)
            check_new_columns_have_no_default(old_metadata, metadata)
            metadata = keep_type_changes(old_metadata, metadata)
        if not restoring:      # RESTORE brings back that version's own columns
            check_new_columns_bring_no_mapping(old_metadata, metadata)
        metadata = assign_column_mapping(old_metadata, metadata)
        check_change_feed_with_mapping_change(old_metadata, metadata, bool(changes.adds or changes.removes))

    base = changes.protocol or old_protocol or Protocol(1, 2)
    if changes.protocol is not None and old_protocol is not None and is_downgrade(old_protocol, changes.protocol):
        raise InvalidArgumentError(
            f"protocol {changes.protocol.to_json()} would drop support that the table has "
            f"({old_protocol.to_json()}); protocols can only be upgraded")
    features = features_in_use(metadata.schema_string, metadata.configuration) if changes.metadata else set()
    features |= {k[len(FEATURE_PROPERTY_PREFIX):] for k, v in changes.protocol_requests.items()
                 if k.startswith(FEATURE_PROPERTY_PREFIX) and str(v).lower() in ("supported", "enabled")}
    try:
        min_r = int(changes.protocol_requests.get(MIN_READER_VERSION_PROPERTY, 1))
        min_w = int(changes.protocol_requests.get(MIN_WRITER_VERSION_PROPERTY, 1))
    except ValueError:
        raise InvalidArgumentError(f"{MIN_READER_VERSION_PROPERTY}/{MIN_WRITER_VERSION_PROPERTY} must be "
                                   "integers") from None
    protocol = protocol_with_features(base, features, min_reader=min_r, min_writer=min_w)
    require_through(table.commit_owner, protocol, Operation.COMMIT, f"{table.uri}, the protocol this commit writes")
    protocol_changed = old_protocol is None or protocol != old_protocol
    changes.read.changes_protocol = protocol_changed
    changes.read.changes_metadata = changes.metadata is not None

    ict_before = snap is not None and ict.is_enabled(old_protocol, old_metadata)
    ict_after = ict.is_enabled(protocol, metadata)
    enabling = ict_after and not ict_before and snap is not None
    if changes.metadata is not None and not ict_after and (
            ict.ENABLEMENT_VERSION_PROPERTY in metadata.configuration
            or ict.ENABLEMENT_TIMESTAMP_PROPERTY in metadata.configuration):
        metadata = ict.without_enablement(metadata)
    if changes.metadata is not None and ict_before and ict_after and old_metadata is not None:
        # keep the provenance of the original enablement
        keep = {k: old_metadata.configuration.get(k) for k in
                (ict.ENABLEMENT_VERSION_PROPERTY, ict.ENABLEMENT_TIMESTAMP_PROPERTY)}
        metadata = metadata.with_configuration(keep)

    if is_catalog_managed(protocol) and not ict_after:
        raise InvalidArgumentError("a catalog-managed table needs in-commit timestamps (PROTOCOL.md, writer "
                                   "requirements for catalog-managed tables); they cannot be turned off")
    if MANAGED_OWNER_PROPERTY in metadata.configuration and not ict_after:
        raise InvalidArgumentError("a managed-commit table needs in-commit timestamps; they cannot be "
                                   "turned off while a commit owner manages the table")
    removes = _resolve_removes(changes, snap, clock)
    if restoring:
        assert snap is not None and changes.restored_version is not None
        check_restored_files(snap, changes.restored_version, changes.adds.values(), removes)
    if changes.metadata is not None and old_metadata is not None and not restoring:
        _check_layout_change(snap, old_metadata, metadata, removes)
    _validate_adds(changes, metadata)
    conf = metadata.configuration
    check_append_only(old_metadata, removes)
    adds = _spelled_like_live(list(changes.adds.values()), snap, operation)
    check_domains(protocol, changes.domains.values())
    check_row_tracking_fields(protocol, adds)
    live = _live_logical_files(snap, adds)
    check_deletion_vectors(protocol, metadata, adds, live, operation)
    spelled_otherwise, live_elsewhere = _live_files_spelled_otherwise(table.storage, snap, adds)
    check_live_file_replaced(adds, removes, live | live_elsewhere, spelled_otherwise)
    if any(a.data_change for a in adds) and operation not in FILE_REINSTATING_OPERATIONS:
        check_can_add_data(protocol, metadata)      # a restore or clone re-adds rows, it adds none

    only_file_actions = changes.metadata is None and not protocol_changed and not changes.txns \
        and not changes.domains
    changes.read.isolation_level = isolation_level_to_use(
        isolation_level or table_isolation_level(conf), only_file_actions,
        [a.data_change for a in changes.adds.values()] + [r.data_change for r in removes], operation)
    _describe_for_conflict_checks(changes.read, snap, protocol, metadata, removes)

    owner = require_owner(table.uri, table.commit_owner, old_protocol, old_metadata) \
        if old_protocol is not None and old_metadata is not None else None
    return CommitPlan(
        read_version=-1 if snap is None else snap.version, protocol=protocol if protocol_changed else None,
        metadata=metadata if changes.metadata is not None else None, adds=adds,
        removes=removes, txns=list(changes.txns.values()), domains=list(changes.domains.values()),
        read_set=changes.read, ict_before=ict_before, ict_after=ict_after, enabling=enabling,
        isolation_level=changes.read.isolation_level, blind_append=changes.read.blind_append,
        owner=owner, table_id=old_metadata.id if old_metadata is not None else metadata.id,
        prev_timestamp=snap.timestamp if snap is not None else None,
        final_configuration=dict(metadata.configuration), read_snapshot=snap)

def _validate_metadata(metadata: Metadata, old: Metadata | None) -> None:
    if not metadata.id:
        raise InvalidArgumentError("metadata needs a table id")
    if old is not None and metadata.id != old.id:
        raise InvalidArgumentError(f"the table id cannot change (table {old.id}, new metadata {metadata.id})")
    if metadata.format_provider != "parquet":
        raise InvalidArgumentError(f"only parquet tables can be written, not {metadata.format_provider!r}")
    schema = schema_to_arrow(metadata.schema_string)
    validate_partition_columns(schema, metadata.partition_columns)
    check_isolation_property(metadata.configuration, old.configuration if old is not None else None)
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

def _check_layout_change(snap: Snapshot, old: Metadata, new: Metadata,
                         removes: list[RemoveFile]) -> None:
    """Partitioning, or a schema the existing files cannot be read under, changes only with all data replaced.

    Files written under the old layout stay in the table otherwise, and readers would
    misread them; which schema changes they can be read under is :mod:`.schema_evolution`'s rule.
    """
    same_partitioning = tuple(new.partition_columns) == tuple(old.partition_columns)   # a list is no change
    if same_partitioning and new.schema_string == old.schema_string:
        return
    removed = {r.path for r in removes}
    live = set(snap.files().column("path").to_pylist())
    if live <= removed:
        return                              # everything is rewritten: any new layout is fine
    if not same_partitioning:
        raise InvalidArgumentError(
            f"partition columns cannot change from {list(old.partition_columns)} to "
            f"{list(new.partition_columns)} while the table keeps files written with the old "
            "partitioning; overwrite all data in the same commit")
    # Under column mapping a column is its physical name: renaming or dropping one is metadata only.
    mapped = column_mapping_mode(old.configuration) != "none" and column_mapping_mode(new.configuration) != "none"
    check_files_stay_readable(schema_to_arrow(old.schema_string), schema_to_arrow(new.schema_string), mapped)

def _validate_adds(changes: PendingChanges, metadata: Metadata) -> None:
    # the partitionValues keys: physical names under column mapping
    cols = set(partition_keys(metadata.partition_columns, metadata.schema_string, metadata.configuration))
    mapped = "" if cols == set(metadata.partition_columns) else " (keyed by physical name under column mapping)"
    added: dict[str, str | None] = {}
    for (path, dv), add in changes.adds.items():
        if path in added:
            # one add per path, whatever its DV (PROTOCOL.md "Action Reconciliation"; Delta Spark's
            # checkNoDuplicateActions, DELTA_DUPLICATE_ACTIONS_FOUND): two would be two live logical
            # files of one data file, its rows read twice
            raise InvalidArgumentError(
                f"file {path!r} is added twice in one transaction, with deletion vectors {added[path]!r} and "
                f"{dv!r}: a commit adds a path once (a logical file is its path and its deletion vector)")
        added[path] = dv
        keys = set(add.partition_values or {})
        if keys != cols:
            raise InvalidArgumentError(
                f"file {path!r} has partition values for {sorted(keys)} but the table is partitioned "
                f"by {sorted(cols)}{mapped}")
        for k, v in (add.partition_values or {}).items():
            if v is not None and not isinstance(v, str):
                raise InvalidArgumentError(f"file {path!r}: partition value of {k!r} must be a string or None")
        if (path, dv) in changes.removes:
            raise InvalidArgumentError(f"file {path!r} is both added and removed in one transaction")

def _resolve_removes(changes: PendingChanges, snap: Snapshot | None, clock: Callable[[], int]) -> list[RemoveFile]:
    """Turn removes into full RemoveFile actions, checking that each file is live at the read version.

    Each remove is spelled as its live add is in the log (:mod:`..base.path_spelling`); a path
    the log holds live under two spellings (one writer encoding it, another not) is removed
    under both, as both are live files for every reader.
    """
    if not changes.removes:
        return []
    if snap is None:
        raise InvalidArgumentError("a table that does not exist yet has no files to remove")
    paths = sorted({k[0] for k in changes.removes})
    rows = _live_rows_by_path(snap, paths)
    missing = [p for p in paths if p not in rows]
    if missing:
        raise InvalidArgumentError(
            f"cannot remove {len(missing)} file(s) that are not in the table at version {snap.version}: "
            f"{missing[:5]}{'...' if len(missing) > 5 else ''}")
    now = int(clock())
    out: list[RemoveFile] = []
    for (path, dv_id), entry in changes.removes.items():
        live = rows[path] if isinstance(entry, str) else \
            [r for r in rows[path] if dv_unique_id(r.get("deletion_vector")) == dv_id]
        if not live:
            # a logical file is its path and its deletion vector: a remove naming another DV
            # would leave the live file in the table
            live_ids = sorted({str(dv_unique_id(r.get("deletion_vector"))) for r in rows[path]})
            raise InvalidArgumentError(
                f"cannot remove file {path!r} with deletion vector {dv_id!r}: the live file at version "
                f"{snap.version} has deletion vector {', '.join(live_ids)} (a logical file is its path and its DV)")
        for row in live:
            out.append(_remove_of(entry, path, row, now, changes.remove_data_change.get(path, True)))
            changes.read.removed_paths.add(row["path"])   # a concurrent remove of the live spelling conflicts
            if row.get(LOG_PATH_COLUMN):
                changes.read.removed_paths.add(row[LOG_PATH_COLUMN])     # and one of its key
    return out


def _live_rows_by_path(snap: Snapshot, paths: list[str]) -> dict[str, list[dict]]:
    """The read snapshot's live files among decoded ``paths``: each path's rows (one per
    logical file: a spelling and a deletion vector)."""
    files = snap.files()
    columns = [c for c in ("path", LOG_PATH_COLUMN, "partition_values", "size", "deletion_vector", "tags")
               if c in files.column_names]
    live = ak.filter(files, ak.is_in(files["path"], ab.array(paths, pa.string())))
    out: dict[str, list[dict]] = {}
    for r in live.select(columns).to_pylist():
        out.setdefault(r["path"], []).append(r)
    # a path given as another spelling of a live file's reconciliation key (the canonical key replay and
    # Delta Spark match by: 'file:///t/p' of '/t/p', 'p' of './p') names that file too
    keyed = {canonical_log_path(encode_path(p)): p for p in paths if p not in out}
    if keyed and LOG_PATH_COLUMN in files.column_names:
        live = ak.filter(files, ak.is_in(files[LOG_PATH_COLUMN], ab.array(list(keyed), pa.string())))
        for r in live.select(columns).to_pylist():
            out.setdefault(keyed[r[LOG_PATH_COLUMN]], []).append(r)
    return out


def _remove_of(entry: RemoveFile | str, path: str, row: dict, now: int, data_change: bool) -> RemoveFile:
    """The remove of the live file ``row``, spelled as the log spells it."""
    if isinstance(entry, RemoveFile):
        return RemoveFile(entry.path, now if entry.deletion_timestamp in (None, 0) else entry.deletion_timestamp,
                          entry.data_change, entry.extended_file_metadata, entry.partition_values, entry.size,
                          entry.stats, entry.tags, entry.deletion_vector,
                          existing_spelling(row.get(LOG_PATH_COLUMN), row["path"]))
    dv = row.get("deletion_vector")
    dv = {k: v for k, v in dv.items() if v is not None} if dv else None
    tags = dict(row["tags"]) if row.get("tags") else None
    out_pv = dict(row["partition_values"]) if row.get("partition_values") is not None else {}
    return RemoveFile(path, now, data_change, True, out_pv, row.get("size"), None, tags, dv,
                      existing_spelling(row.get(LOG_PATH_COLUMN), row["path"]))


def _spelled_like_live(adds: list[AddFile], snap: Snapshot | None, operation: str) -> list[AddFile]:
    """Adds of files the log already names (a restored file, a new deletion vector for a live
    file) spelled as the log spells them, so every reader matches them to the same file.

    Adds that can name a live file are looked up - those with a deletion vector, every add of an
    operation that re-adds files (RESTORE), and any add whose path writers may spell differently
    (a plain re-add of Delta Spark's raw non-ASCII file must not be written encoded: two live
    files for other readers) - so a plain append of safely named new files never pays for the
    table's file list.
    """
    reinstating = operation in FILE_REINSTATING_OPERATIONS
    paths = sorted({a.path for a in adds if a.log_path is None
                    and (a.deletion_vector or reinstating or spelling_may_differ(a.path))})
    rows = _live_rows_by_path(snap, paths) if snap is not None and paths else {}
    return [replace(a, log_path=existing_spelling(rows[a.path][0].get(LOG_PATH_COLUMN), a.path))
            if a.log_path is None and a.path in rows
            else a for a in adds]


def _live_logical_files(snap: Snapshot | None, adds: list[AddFile]) -> set[FileKey]:
    """(path, DV unique id) of the read snapshot's live files among the paths the adds may share
    with one under another DV (:func:`~..base.feature_actions.check_live_file_replaced`).

    Adds with a DV are always looked up. An add without one can only hide a live file's DV, so its
    path is looked up only when the snapshot may hold a DV at all (:meth:`Snapshot.may_hold_deletion_vectors`:
    the protocol, the commits since the checkpoint and the checkpoint's footers, no replay): an append
    of new files to a table without deletion vectors - the common case - never pays for the table's
    file list. Where DVs exist every add's path is looked up: from the path alone no writer can tell
    a new file from a live one.
    """
    if snap is None:
        return set()
    paths = {a.path for a in adds if a.deletion_vector}
    if len(paths) < len(adds) and snap.may_hold_deletion_vectors():
        paths = {a.path for a in adds}
    if not paths:
        return set()
    files = snap.files()
    live = ak.filter(files, ak.is_in(files["path"], ab.array(sorted(paths), pa.string())))
    return {(r["path"], dv_unique_id(r["deletion_vector"]))
            for r in live.select(["path", "deletion_vector"]).to_pylist()}


def _live_files_spelled_otherwise(storage: Storage, snap: Snapshot | None,
                                  adds: list[AddFile]) -> tuple[dict[str, str], set[FileKey]]:
    """``{add path: live path}`` for adds that name a file the read snapshot holds live under a spelling
    replay keys apart (an absolute path or URI for a relative one, either way round: ``/t/p``,
    ``file:///t/p`` or ``file:/t/p`` for the live ``p`` or ``./p``, and ``p`` for a live ``/t/p``), and
    those live logical files (:func:`~..base.feature_actions.check_live_file_replaced`). Places are
    compared by :func:`~..read.data_paths.table_relative` (the rule vacuum keeps files by). The file list
    is read only when an absolute add lands under the root, or when the snapshot may hold an absolute
    path at all (:meth:`Snapshot.may_hold_absolute_paths`, no replay): appends of relative paths to a
    table of relative paths pay nothing."""
    if snap is None or not adds:
        return {}, set()
    place = table_relative_to(storage)
    placed: dict[str, str] = {}                 # absolute add -> the root-relative path it names
    relative: dict[str, str] = {}               # relative add -> its root-relative path, resolved
    for a in adds:
        rel = place(a.path)
        if not isinstance(rel, str):
            continue
        (placed if split_uri(a.path) is not None else relative)[a.path] = rel
    if not placed and not (relative and snap.may_hold_absolute_paths()):
        return {}, set()
    files = snap.files()
    wanted = set(placed.values()) | set(relative.values())
    # live rows spelled relatively, found by decoded path or by replay's key ('./p' is keyed 'p')
    near = ak.filter(files, ak.or_(ak.is_in(files["path"], ab.array(sorted(wanted), pa.string())),
                                   ak.is_in(files[LOG_PATH_COLUMN],
                                            ab.array(sorted(wanted | {encode_path(w) for w in wanted}),
                                                     pa.string())))) if placed else files.slice(0, 0)
    absolute = ak.filter(files, ak.fill_null(ak.match_substring_regex(files["path"], ABSOLUTE_PATH_REGEX),
                                             ab.scalar(False))) \
        if relative else files.slice(0, 0)
    by_place: dict[str, list[dict]] = {}
    for r in pa.concat_tables([near, absolute]).select(["path", LOG_PATH_COLUMN, "deletion_vector"]).to_pylist():
        rel = place(r["path"])
        if isinstance(rel, str) and rel in wanted:
            by_place.setdefault(rel, []).append(r)
    spelled: dict[str, str] = {}
    live: set[FileKey] = set()
    for path, rel in {**placed, **relative}.items():
        own_key = canonical_log_path(encode_path(path))
        others = [r for r in by_place.get(rel, ()) if r[LOG_PATH_COLUMN] != own_key and r["path"] != path]
        if others:
            spelled[path] = others[0]["path"]
            live |= {(r["path"], dv_unique_id(r.get("deletion_vector"))) for r in others}
    return spelled, live


def _describe_for_conflict_checks(read: ReadSet, snap: Snapshot | None, protocol: Protocol, metadata: Metadata,
                                  removes: list[RemoveFile]) -> None:
    """Fill in what the conflict checks judge this commit by (Delta Spark's CurrentTransactionInfo).

    ``isBlindAppend`` is Delta Spark's: only adds (whatever their ``dataChange``) and nothing
    read. Partition predicates are matched on the read snapshot's partition columns, keyed as
    its files' ``partitionValues`` are (physical names under column mapping).
    """
    read.blind_append = not removes and not read.read_anything
    read.protocol, read.metadata = protocol, metadata
    if snap is not None:
        read.read_protocol = snap.protocol
        old = snap.metadata
        read.partition_keys = tuple(partition_keys(old.partition_columns, old.schema_string, old.configuration))

