"""Logical conflict detection after losing a commit race, rule for rule Delta Spark's ConflictChecker.

Optimistic concurrency: a transaction reads version ``r`` and tries to commit ``r + 1``. If
another writer got there first, the loser reads every winning commit and asks whether the
winner changed anything the loser's result depended on. If not, the loser's actions are still
valid on top of the winner and it retries at the next version; if so, it fails with the error
named after Delta Spark's exception (:mod:`..base.errors`), because committing would silently
lose or duplicate data. The checks, in Delta Spark's order (``ConflictChecker.checkConflicts``):

1. :func:`check_protocol` - the winner's protocol must be one this package can write (else
   :class:`UnsupportedFeatureError`, as Delta Spark fails with its protocol error); if the winner
   changed the protocol and so do we, or the winner dropped a feature: ProtocolChangedException.
2. :func:`check_metadata` - a winner's metadata change conflicts unless we change none ourselves
   and the winner only *enabled* one of the features on Delta Spark's allow list (deletion
   vectors, v2 checkpoints, column mapping ``name`` on a table without it, in-commit timestamps,
   row tracking) or only updated identity high-water marks; we then continue on the winner's
   metadata. Otherwise MetadataChangedException.
3. :func:`check_domains` - both wrote the same metadata domain: ConcurrentTransactionException.
4. :func:`check_app_ids` - the winner set an application transaction id (``txn.appId``) we read
   or set: ConcurrentTransactionException (exactly-once writers must not both win).
5. :func:`check_appends` - the winner added files (with any ``dataChange``) that match what we
   read: ConcurrentAppendException. Which added files count depends on the isolation level
   (:mod:`.isolation`); a blind append of ours reads nothing and never conflicts; on an
   unpartitioned table, or after reading the whole table, any counted file matches; otherwise
   a file matches a partition predicate of ours, compared on the partition values keyed by the
   physical names of the read snapshot's partition columns (column mapping) in canonical form.
6. :func:`check_deletes_of_read_files` - the winner removed (with any ``dataChange``) a file we
   read, or removed anything after we read the whole table: ConcurrentDeleteReadException.
7. :func:`check_deletes_of_removed_files` - the winner removed a file we remove too:
   ConcurrentDeleteDeleteException.

Files are compared by path, as Delta Spark's checks do (a deletion-vector update of a file we
read or remove is a remove of that path), each path by its reconciliation key (Delta Spark's canonical
path, as replay cancels adds by): ``./p``, ``p=1//b`` and ``p`` are one file, ``/t/p`` and ``file:///t/p``.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable
from urllib.parse import unquote

from ..base.actions import Metadata, Protocol
from ..base.errors import (ConcurrentAppendError, ConcurrentDeleteDeleteError, ConcurrentDeleteReadError,
                           ConcurrentModificationError, ConcurrentTransactionError, DeltaError,
                           MetadataChangedError, ProtocolChangedError)
from ..base.features import (CHECKPOINT_POLICY_PROPERTY, COLUMN_ID_KEY, COLUMN_MAPPING_MODE_PROPERTY,
                             DELETION_VECTORS_PROPERTY, ICT_ENABLE_PROPERTY, ICT_ENABLEMENT_TIMESTAMP_PROPERTY,
                             ICT_ENABLEMENT_VERSION_PROPERTY, PHYSICAL_NAME_KEY, ROW_TRACKING_PROPERTY,
                             column_mapping_mode, is_downgrade, supported_features)
from ..base.path_spelling import keys_of_spellings, log_path_key
from ..base.schema import serialize_partition_value
from ..read.action_lines import action_kind
from .isolation import SERIALIZABLE, SNAPSHOT_ISOLATION, WRITE_SERIALIZABLE

#: commitInfo tag of a metadata change that only moved identity high-water marks
IDENTITY_ONLY_TAG = "delta.identity.schemaUpdate"
#: field metadata keys column mapping adds (DeltaColumnMapping.COLUMN_MAPPING_METADATA_KEYS)
COLUMN_MAPPING_FIELD_KEYS = frozenset({COLUMN_ID_KEY, PHYSICAL_NAME_KEY, "delta.columnMapping.nested.ids",
                                       "parquet.field.id", "parquet.field.nested.ids"})
ROW_ID_COLUMN_PROPERTY = "delta.rowTracking.materializedRowIdColumnName"
ROW_COMMIT_VERSION_COLUMN_PROPERTY = "delta.rowTracking.materializedRowCommitVersionColumnName"
COLUMN_MAPPING_MAX_ID_PROPERTY = "delta.columnMapping.maxColumnId"


@dataclass
class WinningCommit:
    """What a concurrent, already committed version did (parsed from its actions)."""

    version: int
    protocol: Protocol | None = None
    metadata: dict[str, Any] | None = None
    adds: list[dict[str, Any]] = field(default_factory=list)
    removes: list[dict[str, Any]] = field(default_factory=list)
    app_ids: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    commit_info: dict[str, Any] | None = None

    @classmethod
    def from_actions(cls, version: int, actions: Iterable[dict[str, Any]]) -> "WinningCommit":
        w = cls(version)
        for a in actions:
            kind = action_kind(a)     # one action a line, Delta Spark's SingleAction.unwrap order
            if kind == "add":
                w.adds.append(a["add"])
            elif kind == "remove":
                w.removes.append(a["remove"])
            elif kind == "txn":
                w.app_ids.add(a["txn"].get("appId"))
            elif kind == "metaData":
                w.metadata = a["metaData"]
            elif kind == "protocol":
                w.protocol = Protocol.from_json(a["protocol"])
            elif kind == "domainMetadata":
                w.domains.add(a["domainMetadata"].get("domain"))
            elif kind == "commitInfo":
                w.commit_info = a["commitInfo"]
        return w

    @property
    def is_blind_append(self) -> bool:
        """The winner's own ``isBlindAppend`` (absent: not a blind append)."""
        return bool((self.commit_info or {}).get("isBlindAppend") is True)

    @property
    def identity_only_metadata_update(self) -> bool:
        tags = (self.commit_info or {}).get("tags") or {}
        return str(tags.get(IDENTITY_ONLY_TAG, "")).lower() == "true"

    @property
    def operation(self) -> str:
        return str((self.commit_info or {}).get("operation") or "unknown operation")


@dataclass
class ReadSet:
    """What the current transaction depends on and touches (Delta Spark's CurrentTransactionInfo).

    ``partition_predicates`` are ``{partitionValues key: {canonical value or None, ...}}``,
    keyed like the files' ``partitionValues`` (physical names under column mapping): a file
    matches when every listed key's value is in its set. ``protocol`` and ``metadata`` start as
    the read snapshot's (or this commit's own) and follow the winners the checks let through.
    """

    isolation_level: str = SERIALIZABLE
    read_all: bool = False
    read_paths: set[str] = field(default_factory=set)
    partition_predicates: list[dict[str, set[str | None]]] = field(default_factory=list)
    read_app_ids: set[str] = field(default_factory=set)
    removed_paths: set[str] = field(default_factory=set)
    #: paths this commit adds (decoded): a winner removing one of them makes the add a second
    #: logical file of a path the table no longer holds as read (:func:`check_removes_of_added_files`)
    added_paths: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    changes_metadata: bool = False
    changes_protocol: bool = False
    #: ``isBlindAppend`` of this commit: only adds, nothing read
    blind_append: bool = False
    #: partitionValues keys of the read snapshot's partition columns, and their types
    partition_keys: tuple[str, ...] = ()
    partition_types: dict[str, Any] = field(default_factory=dict)
    #: the read snapshot's protocol (feature drops are judged against it)
    read_protocol: Protocol | None = None
    protocol: Protocol | None = None
    metadata: Metadata | None = None

    @property
    def read_anything(self) -> bool:
        return self.read_all or bool(self.read_paths) or bool(self.partition_predicates)


def _path(action: dict[str, Any]) -> str:
    return unquote(action.get("path") or "")


def _first_of(removes: list[dict[str, Any]], paths: set[str], by_key: bool = True) -> dict[str, Any] | None:
    """The first of the winner's ``removes`` whose file is in ``paths``, which may hold it decoded (as
    ``files()`` gives paths), as the log spells it (as a caller of ``mark_read`` may pass them) or as
    its reconciliation key (``files()``' ``log_path``). Files are compared by that key, Delta Spark's
    canonical path (:func:`~..base.path_spelling.canonical_log_path`), which replay cancels an add by:
    Delta Spark's read files and removes carry it (``Snapshot.stateReconstruction``), so its
    ConflictChecker matches ``./p`` read with ``p`` removed, ``/t/p`` with ``file:///t/p``. The keys
    of ``paths`` are made only when a spelling alone does not match (plain paths: a pattern test), and
    not at all when ``by_key`` is False."""
    if not removes or not paths:
        return None
    keys = None
    for rm in removes:
        raw = rm.get("path") or ""
        if raw in paths or unquote(raw) in paths:
            return rm
        if not by_key:
            continue
        if keys is None:
            keys = keys_of_spellings(paths)
        if log_path_key(raw) in keys:
            return rm
    return None


def canonical_partition_value(value: str | None, t: Any) -> str | None:
    """A partition value in canonical form: other writers spell some values differently (e.g.
    timestamps with or without fractional seconds), and Delta Spark compares them typed."""
    if value in (None, ""):
        return None
    if t is None:
        return value
    try:
        return serialize_partition_value(value, t)
    except DeltaError:
        return value


def _matches(action: dict[str, Any], predicate: dict[str, set[str | None]], types: dict[str, Any]) -> bool:
    values = action.get("partitionValues") or {}
    return all(canonical_partition_value(values.get(key), types.get(key)) in allowed for key, allowed in predicate.items())


def _conflict(cls: type[ConcurrentModificationError], winner: WinningCommit, reason: str,
              detail: str) -> ConcurrentModificationError:
    return cls(f"{cls.spark_name}: {detail} (concurrent commit at version {winner.version}, "
               f"{winner.operation}). Refresh the table and run the operation again.",
               winning_version=winner.version, reason=reason)


def check_conflicts(current: ReadSet, winner: WinningCommit,
                    can_write: Callable[[Protocol], None] | None = None) -> None:
    """Raise if ``winner`` invalidates ``current``; else fold the winner's protocol/metadata into it.

    ``can_write(protocol)`` raises if this package cannot write the winner's protocol.
    """
    check_protocol(current, winner, can_write)
    check_metadata(current, winner)
    check_domains(current, winner)
    check_app_ids(current, winner)
    check_appends(current, winner)
    check_deletes_of_read_files(current, winner)
    check_deletes_of_removed_files(current, winner)
    check_removes_of_added_files(current, winner)


def check_protocol(current: ReadSet, winner: WinningCommit, can_write: Callable[[Protocol], None] | None) -> None:
    """ConflictChecker.checkProtocolCompatibility."""
    if winner.protocol is None:
        return
    if can_write is not None:
        can_write(winner.protocol)
    current.protocol = winner.protocol
    if current.changes_protocol:
        raise _conflict(ProtocolChangedError, winner, "protocol_changed",
                        "the protocol version of the table was changed by a concurrent update")
    if current.read_protocol is not None and is_downgrade(current.read_protocol, winner.protocol):
        raise _conflict(ProtocolChangedError, winner, "protocol_changed",
                        "a concurrent update dropped a table feature")


def check_metadata(current: ReadSet, winner: WinningCommit) -> None:
    """ConflictChecker.attemptToResolveMetadataConflicts (Delta Spark's default path)."""
    if winner.metadata is None:
        return
    if current.changes_metadata:
        raise _conflict(MetadataChangedError, winner, "metadata_changed",
                        "the metadata of the table (schema, partitioning or properties) was changed by a "
                        "concurrent update, and this transaction changes it too")
    if winner.identity_only_metadata_update:
        return
    theirs = Metadata.from_json(winner.metadata)
    ours = current.metadata
    if ours is None or not _only_allowed_changes(ours, theirs, current.protocol):
        raise _conflict(MetadataChangedError, winner, "metadata_changed",
                        "the metadata of the table (schema, partitioning or properties) was changed by a "
                        "concurrent update")
    current.metadata = theirs


def _only_allowed_changes(ours: Metadata, theirs: Metadata, protocol: Protocol | None) -> bool:
    """True when ``theirs`` differs from ``ours`` only by enabling an allow-listed feature."""
    a, b = ours.to_json(), theirs.to_json()
    differing = {k for k in set(a) | set(b) if a.get(k) != b.get(k)}
    if not differing <= {"configuration", "schemaString"}:
        return False
    if "configuration" in differing and not _configuration_change_allowed(ours, theirs, protocol):
        return False
    if "schemaString" in differing and not _schema_change_allowed(ours, theirs):
        return False
    return True


def _supports(protocol: Protocol | None, feature: str) -> bool:
    return protocol is not None and feature in supported_features(protocol)[1]


def _configuration_change_allowed(ours: Metadata, theirs: Metadata, protocol: Protocol | None) -> bool:
    """ConflictChecker.checkConfigurationChangesForConflicts with its allow list."""
    old, new = ours.configuration, theirs.configuration
    if set(old) - set(new):
        return False                                 # unsetting a property is never resolved
    for key in (k for k in new if old.get(k) != new[k]):
        value, is_new = new[key], key not in old
        enabled = value.strip().lower() == "true"
        if key == DELETION_VECTORS_PROPERTY:
            ok = _supports(protocol, "deletionVectors") and enabled
        elif key == CHECKPOINT_POLICY_PROPERTY:
            ok = _supports(protocol, "v2Checkpoint") and value == "v2"
        elif key == COLUMN_MAPPING_MODE_PROPERTY:
            ok = _enables_name_mapping(ours, theirs) and _supports(protocol, "columnMapping")
        elif key == COLUMN_MAPPING_MAX_ID_PROPERTY:
            ok = True
        elif key == ICT_ENABLE_PROPERTY:
            ok = (_supports(protocol, "inCommitTimestamp") or _supports(protocol, "inCommitTimestamps")) and enabled
        elif key in (ICT_ENABLEMENT_VERSION_PROPERTY, ICT_ENABLEMENT_TIMESTAMP_PROPERTY):
            ok = is_new
        elif key == ROW_TRACKING_PROPERTY:
            ok = _supports(protocol, "rowTracking") and enabled
        elif key in (ROW_ID_COLUMN_PROPERTY, ROW_COMMIT_VERSION_COLUMN_PROPERTY):
            ok = new.get(ROW_TRACKING_PROPERTY, "false").strip().lower() == "true"
        else:
            ok = False                               # not on the allow list
        if not ok:
            return False
    return True


def _enables_name_mapping(ours: Metadata, theirs: Metadata) -> bool:
    return column_mapping_mode(ours.configuration) == "none" and column_mapping_mode(theirs.configuration) == "name"


def _schema_change_allowed(ours: Metadata, theirs: Metadata) -> bool:
    """ConflictChecker.checkSchemaChangesForConflicts: only column mapping's field metadata may
    change, on the same top-level fields, while column mapping ``name`` is being enabled."""
    old_fields = json.loads(ours.schema_string).get("fields") or []
    new_fields = json.loads(theirs.schema_string).get("fields") or []
    if len(old_fields) != len(new_fields) or not _enables_name_mapping(ours, theirs):
        return False
    for o, n in zip(old_fields, new_fields):
        if o.get("name") != n.get("name") or o.get("type") != n.get("type") \
                or bool(o.get("nullable", True)) != bool(n.get("nullable", True)):
            return False
        om, nm = o.get("metadata") or {}, n.get("metadata") or {}
        changed = {k for k in set(om) | set(nm) if om.get(k) != nm.get(k)}
        if not changed <= COLUMN_MAPPING_FIELD_KEYS:
            return False
    return True


def check_domains(current: ReadSet, winner: WinningCommit) -> None:
    """ConflictChecker.checkIfDomainMetadataConflict (row tracking's own domain we never write)."""
    both = current.domains & winner.domains
    if both:
        raise _conflict(ConcurrentTransactionError, winner, "concurrent_domain_metadata",
                        f"a conflicting metadata domain {sorted(both)[0]!r} was written by a concurrent update")


def check_app_ids(current: ReadSet, winner: WinningCommit) -> None:
    """ConflictChecker.checkForUpdatedApplicationTransactionIdsThatCurrentTxnDependsOn."""
    both = current.read_app_ids & winner.app_ids
    if both:
        raise _conflict(ConcurrentTransactionError, winner, "concurrent_transaction",
                        f"application transaction {sorted(both)[0]!r} was advanced by a concurrent update; "
                        "this commit may be a duplicate")


def counted_appends(isolation_level: str, changes_metadata: bool, winner: WinningCommit) -> list[dict[str, Any]]:
    """The winner's added files that can conflict at this isolation level (any ``dataChange``)."""
    if isolation_level == SNAPSHOT_ISOLATION:
        return []
    if isolation_level == WRITE_SERIALIZABLE and not changes_metadata and winner.is_blind_append:
        return []                                    # blind appends do not break WriteSerializable
    return list(winner.adds)


def check_appends(current: ReadSet, winner: WinningCommit) -> None:
    """ConflictChecker.checkForAddedFilesThatShouldHaveBeenReadByCurrentTxn."""
    if current.blind_append:
        return                                       # a blind append read nothing
    added = counted_appends(current.isolation_level, current.changes_metadata, winner)
    if not added:
        return
    if current.read_all or not current.partition_keys:
        hit = added[0]
    else:
        hit = next((a for a in added if any(_matches(a, p, current.partition_types)
                                             for p in current.partition_predicates)), None)
    if hit is not None:
        raise _conflict(ConcurrentAppendError, winner, "concurrent_append",
                        f"file {_path(hit)!r} was added to data this transaction read "
                        f"(isolation level {current.isolation_level})")


def check_deletes_of_read_files(current: ReadSet, winner: WinningCommit) -> None:
    """ConflictChecker.checkForDeletedFilesAgainstCurrentTxnReadFiles."""
    # having read the whole table, any remove conflicts: the keys need not be made to name the file
    rm = _first_of(winner.removes, current.read_paths, by_key=not current.read_all)
    if rm is not None:
        raise _conflict(ConcurrentDeleteReadError, winner, "concurrent_delete_read",
                        f"file {_path(rm)!r} that this transaction read was removed")
    if winner.removes and current.read_all:
        raise _conflict(ConcurrentDeleteReadError, winner, "concurrent_delete_read",
                        f"file {_path(winner.removes[0])!r} was removed while this transaction read the whole table")


def check_deletes_of_removed_files(current: ReadSet, winner: WinningCommit) -> None:
    """ConflictChecker.checkForDeletedFilesAgainstCurrentTxnDeletedFiles."""
    rm = _first_of(winner.removes, current.removed_paths)
    if rm is not None:
        raise _conflict(ConcurrentDeleteDeleteError, winner, "concurrent_delete_delete",
                        f"file {_path(rm)!r} that this transaction removes was already removed")


def check_removes_of_added_files(current: ReadSet, winner: WinningCommit) -> None:
    """F4b across a rebase: a winner that removed a path this commit adds changed the logical
    file the add was judged against (a DELETE giving it a deletion vector, an OPTIMIZE compacting
    it away). The add - checked against the read snapshot, where it was the live file again or a
    new one - would now put a second logical file of the path next to the winner's (the deleted
    rows back, the others read twice) or bring back rows the winner rewrote elsewhere. Delta Spark
    has no such check because its writers add only fresh paths; ours may re-add a live one
    (:func:`~..base.feature_actions.check_live_file_replaced`)."""
    rm = _first_of(winner.removes, current.added_paths)
    if rm is not None:
        raise _conflict(ConcurrentDeleteDeleteError, winner, "concurrent_delete_delete",
                        f"file {_path(rm)!r} that this transaction adds was removed (replaced or rewritten)")
