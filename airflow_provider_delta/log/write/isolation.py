"""Isolation levels: which one a commit uses, as Delta Spark chooses it.

Delta Spark knows three levels (``isolationLevels.scala``), strictest first:

- ``Serializable``: a concurrent commit that added files into what this transaction read is a
  conflict, blind appends included;
- ``WriteSerializable``: the same, except that concurrent blind appends are ignored (unless this
  transaction changes the metadata);
- ``SnapshotIsolation``: concurrent appends are never a conflict.

The table's level is ``delta.isolationLevel``, parsed case-insensitively; a table without the
property is ``Serializable`` (``DeltaConfigs.ISOLATION_LEVEL``: that is the level of every table
Delta Spark creates), and the property may only be *set* to ``Serializable`` (Delta Spark's
validation of the property; tables written by other engines may hold the other names, which
are honoured). A commit then downgrades to ``SnapshotIsolation`` when reordering it before the
concurrent commits cannot change anyone's result (``TransactionHelper.canDowngradeToSnapshotIsolation``):
every action it writes is a file action with ``dataChange=false`` (no metadata, protocol, txn or
domain metadata action) and, on a ``WriteSerializable`` table, its operation is not one that
changes data. A commit with a metadata change is never downgraded.
"""
from __future__ import annotations

from typing import Iterable

from ..base.errors import InvalidArgumentError, InvalidTableStateError
from ..base.features import ISOLATION_LEVEL_PROPERTY

SERIALIZABLE = "Serializable"
WRITE_SERIALIZABLE = "WriteSerializable"
SNAPSHOT_ISOLATION = "SnapshotIsolation"
#: every level, strictest first (IsolationLevel.allLevelsInDescOrder)
ALL_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE, SNAPSHOT_ISOLATION)
#: levels a transaction may ask for explicitly (IsolationLevel.validTableIsolationLevels)
ISOLATION_LEVELS = (SERIALIZABLE, WRITE_SERIALIZABLE)
#: the level of a table without ``delta.isolationLevel`` (DeltaConfigs.ISOLATION_LEVEL's default)
TABLE_DEFAULT = SERIALIZABLE

#: Operations whose ``changesData`` is true in Delta Spark's DeltaOperations: on a
#: WriteSerializable table they keep the table's level even when all their actions are
#: ``dataChange=false``.
OPERATIONS_CHANGING_DATA = frozenset({
    "WRITE", "STREAMING UPDATE", "DELETE", "TRUNCATE", "CONVERT", "MERGE", "UPDATE", "RESTORE", "CLONE",
    "CREATE TABLE AS SELECT", "REPLACE TABLE", "REPLACE TABLE AS SELECT", "CREATE OR REPLACE TABLE",
    "CREATE OR REPLACE TABLE AS SELECT",
})


def parse_isolation_level(value: str) -> str:
    """The level named by ``value`` (any case), as IsolationLevel.fromString parses it."""
    for level in ALL_LEVELS:
        if isinstance(value, str) and value.lower() == level.lower():
            return level
    raise InvalidTableStateError(
        f"{ISOLATION_LEVEL_PROPERTY}={value!r} is not an isolation level; Delta knows {list(ALL_LEVELS)}")


def table_isolation_level(configuration: dict[str, str]) -> str:
    """The table's level: its ``delta.isolationLevel``, else ``Serializable``."""
    value = configuration.get(ISOLATION_LEVEL_PROPERTY)
    return TABLE_DEFAULT if value is None else parse_isolation_level(value)


def check_isolation_property(new: dict[str, str], old: dict[str, str] | None) -> None:
    """Setting ``delta.isolationLevel`` to anything but ``Serializable`` is refused (Delta Spark's
    validation of the property); a value the table already holds may stay."""
    value = new.get(ISOLATION_LEVEL_PROPERTY)
    if value is None or (old is not None and old.get(ISOLATION_LEVEL_PROPERTY) == value):
        return
    try:
        level = parse_isolation_level(value)
    except InvalidTableStateError:
        level = None
    if level != SERIALIZABLE:
        raise InvalidArgumentError(
            f"{ISOLATION_LEVEL_PROPERTY} must be Serializable (as Delta Spark requires), not {value!r}; "
            "pass isolation_level= to a transaction to relax one commit")


def isolation_level_to_use(default_level: str, only_file_actions: bool, data_change_flags: Iterable[bool],
                           operation: str) -> str:
    """The level a commit runs its conflict checks at (OptimisticTransaction.getIsolationLevelToUse).

    ``only_file_actions``: the commit writes nothing but adds and removes (no metadata,
    protocol, txn or domain metadata); ``data_change_flags``: their ``dataChange`` values.
    """
    if not only_file_actions or any(data_change_flags):
        return default_level
    if default_level == SERIALIZABLE:
        return SNAPSHOT_ISOLATION
    if default_level == WRITE_SERIALIZABLE and operation.strip().upper() not in OPERATIONS_CHANGING_DATA:
        return SNAPSHOT_ISOLATION
    return default_level
