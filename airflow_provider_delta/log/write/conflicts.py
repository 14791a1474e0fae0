"""Logical conflict detection after losing a commit race (Delta Spark's ConflictChecker).

Optimistic concurrency: a transaction reads version ``r`` and tries to commit
``r + 1``. If another writer got there first, the loser reads every winning
commit and asks whether the winner changed anything the loser's result depended
on. If not, the loser's actions are still valid on top of the winner and it
retries at the next version; if so, it must fail, because committing would
silently lose or duplicate data.

The checks, in Delta Spark's order and with its names in the messages:

1. ProtocolChanged - the winner changed the protocol and so do we (or we cannot
   write the winner's protocol).
2. MetadataChanged - the winner changed the metadata (schema, properties...).
3. ConcurrentDomainMetadata - both touched the same metadata domain.
4. ConcurrentAppend - the winner added data files into what we read. Under
   ``WriteSerializable`` (the default) blind appends by the winner are ignored
   unless we change metadata; under ``Serializable`` every data-changing add counts.
5. ConcurrentDeleteRead - the winner removed a file we read.
6. ConcurrentDeleteDelete - the winner removed a file we remove too.
7. ConcurrentTransaction - the winner advanced an application transaction id
   (``txn.appId``) we read or set: exactly-once writers must not both win.

A transaction that read nothing and only adds files (a blind append) passes
checks 4-7 by construction, so concurrent appends never conflict with each other.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable
from urllib.parse import unquote

from ..base.actions import Protocol
from ..base.errors import ConcurrentModificationError, DeltaError
from ..base.schema import serialize_partition_value

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)


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
            if "add" in a and a["add"] is not None:
                w.adds.append(a["add"])
            elif "remove" in a and a["remove"] is not None:
                w.removes.append(a["remove"])
            elif "txn" in a and a["txn"] is not None:
                w.app_ids.add(a["txn"].get("appId"))
            elif "metaData" in a and a["metaData"] is not None:
                w.metadata = a["metaData"]
            elif "protocol" in a and a["protocol"] is not None:
                w.protocol = Protocol.from_json(a["protocol"])
            elif "domainMetadata" in a and a["domainMetadata"] is not None:
                w.domains.add(a["domainMetadata"].get("domain"))
            elif "commitInfo" in a and a["commitInfo"] is not None:
                w.commit_info = a["commitInfo"]
        return w

    @property
    def is_blind_append(self) -> bool:
        return bool((self.commit_info or {}).get("isBlindAppend") is True)

    @property
    def operation(self) -> str:
        return str((self.commit_info or {}).get("operation") or "unknown operation")


@dataclass
class ReadSet:
    """What the current transaction depends on and touches.

    ``partition_predicates`` are ``{column: {serialized value or None, ...}}``: a file
    matches when every listed column's partition value is in its set.
    """

    isolation_level: str = WRITE_SERIALIZABLE
    read_all: bool = False
    read_paths: set[str] = field(default_factory=set)
    partition_predicates: list[dict[str, set[str | None]]] = field(default_factory=list)
    read_app_ids: set[str] = field(default_factory=set)
    removed_paths: set[str] = field(default_factory=set)
    domains: set[str] = field(default_factory=set)
    changes_metadata: bool = False
    changes_protocol: bool = False
    #: partition column types, to compare a winner's partition values in canonical form
    partition_types: dict[str, Any] = field(default_factory=dict)

    @property
    def read_anything(self) -> bool:
        return self.read_all or bool(self.read_paths) or bool(self.partition_predicates)


def _path(action: dict[str, Any]) -> str:
    return unquote(action.get("path") or "")


def _partition_value(action: dict[str, Any], col: str, types: dict[str, Any]) -> str | None:
    """The file's partition value of ``col``, re-serialized canonically when its type is known.

    Other writers spell some values differently (e.g. timestamps with or without
    fractional seconds); comparing canonical forms keeps such files from slipping
    past a conflict check.
    """
    value = (action.get("partitionValues") or {}).get(col)
    if value in (None, ""):
        return None
    t = types.get(col)
    if t is not None:
        try:
            return serialize_partition_value(value, t)
        except DeltaError:
            return value
    return value


def _matches(action: dict[str, Any], predicate: dict[str, set[str | None]], types: dict[str, Any]) -> bool:
    return all(_partition_value(action, col, types) in allowed for col, allowed in predicate.items())


def _conflict(winner: WinningCommit, reason: str, spark_name: str, detail: str) -> ConcurrentModificationError:
    return ConcurrentModificationError(
        f"{spark_name}: {detail} (concurrent commit at version {winner.version}, {winner.operation}). "
        "Refresh the table and retry the operation.", winning_version=winner.version, reason=reason)


def check_conflicts(current: ReadSet, winner: WinningCommit, can_write: Any = None) -> None:
    """Raise :class:`ConcurrentModificationError` if ``winner`` invalidates ``current``.

    ``can_write(protocol)`` raises if this package cannot write the winner's protocol.
    """
    if winner.protocol is not None:
        if can_write is not None:
            try:
                can_write(winner.protocol)
            except DeltaError as e:
                raise _conflict(winner, "protocol_changed", "ProtocolChangedException",
                                f"the table's protocol changed to one this package cannot write: {e}") from None
        if current.changes_protocol:
            raise _conflict(winner, "protocol_changed", "ProtocolChangedException",
                            "the protocol version of the table was changed by a concurrent update")
    if winner.metadata is not None:
        raise _conflict(winner, "metadata_changed", "MetadataChangedException",
                        "the metadata of the table (schema, partitioning or properties) was changed "
                        "by a concurrent update")
    both = current.domains & winner.domains
    if both:
        raise _conflict(winner, "concurrent_domain_metadata", "ConcurrentTransactionException",
                        f"metadata domain {sorted(both)[0]!r} was changed by a concurrent update")
    _check_appends(current, winner)
    _check_deletes(current, winner)
    both_ids = current.read_app_ids & winner.app_ids
    if both_ids:
        raise _conflict(winner, "concurrent_transaction", "ConcurrentTransactionException",
                        f"application transaction {sorted(both_ids)[0]!r} was advanced by a concurrent "
                        "update; this commit may be a duplicate")


def _check_appends(current: ReadSet, winner: WinningCommit) -> None:
    if not current.read_anything:
        return
    if current.isolation_level == WRITE_SERIALIZABLE and not current.changes_metadata \
            and winner.is_blind_append:
        return                            # blind appends do not break WriteSerializable readers
    if current.isolation_level == SNAPSHOT_ISOLATION:
        return
    for add in winner.adds:
        if add.get("dataChange", True) is False:
            continue
        path = _path(add)
        if current.read_all or path in current.read_paths or any(
                _matches(add, p, current.partition_types) for p in current.partition_predicates):
            raise _conflict(winner, "concurrent_append", "ConcurrentAppendException",
                            f"file {path!r} was added to data this transaction read")


def _check_deletes(current: ReadSet, winner: WinningCommit) -> None:
    for rm in winner.removes:
        path = _path(rm)
        if rm.get("dataChange", True) is not False and (
                current.read_all or path in current.read_paths
                or any(_matches(rm, p, current.partition_types) for p in current.partition_predicates)):
            raise _conflict(winner, "concurrent_delete_read", "ConcurrentDeleteReadException",
                            f"file {path!r} that this transaction read was removed")
        if path in current.removed_paths:
            raise _conflict(winner, "concurrent_delete_delete", "ConcurrentDeleteDeleteException",
                            f"file {path!r} that this transaction removes was already removed")
