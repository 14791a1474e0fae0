"""RESTORE: make a table's files those of an earlier version again, in one new commit.

The rules are Delta Spark's ``RestoreTableCommand``:

- the new version removes every live file (by path and deletion vector) that the
  restored version did not have, and adds back every file it had that is not live now,
  each with ``dataChange=true`` and the add exactly as that version recorded it (same
  deletion vector, statistics, tags);
- the table gets that version's metadata, with identity columns' high water marks never
  lowered (``copySchemaWithMergedHighWaterMarks``); the protocol is never downgraded (the
  current one, with whatever the restored version's protocol supports added);
- ``commitInfo`` says ``RESTORE`` with ``version`` / ``timestamp`` parameters and
  Delta Spark's six metrics (the metrics of the restored version's size and file count,
  and what this commit removed and restored);
- ``commitInfo`` records ``readVersion`` (the latest version it read) and ``isolationLevel``
  ``Serializable``, as Delta Spark's ``commitLarge`` does; only a restore that landed after
  concurrent blind appends (which Delta Spark's restore never does, see below) records the
  ``WriteSerializable`` it was checked at;
- restoring to the latest version is a no-op (nothing is committed), as in Delta Spark's
  analyzer; restoring to an older version whose files happen to equal today's commits an
  empty restore, as Delta Spark does;
- a version older than ``delta.deletedFileRetentionDuration`` is refused (Delta Spark
  enforces time travel within that retention for RESTORE): a concurrent vacuum may be
  deleting its files. ``enforce_retention=False`` lifts this, as Delta Spark's internal
  flag does;
- every data and deletion-vector file the commit adds back must still exist, checked
  before anything is written (Delta Spark's ``spark.sql.files.ignoreMissingFiles=false``
  check); otherwise :class:`DataFileNotFoundError` and nothing changes.

What we decide where Delta Spark does not help: Delta Spark commits a restore with
``commitLarge``, which fails on *any* concurrent commit. We commit through the ordinary
committer with the restore's read set (it read the whole table), so a lost race is
checked like any other commit: concurrent *blind appends* are let through, and the rows
they appended **stay in the table** after the restore. For that a restore commits at
``WriteSerializable`` unless the table sets ``delta.isolationLevel`` (a table without the
property is ``Serializable`` for every other commit, as in Delta Spark, where a read-all
commit such as this one would fail on any concurrent append) (the restore is serialized before the append, which
WriteSerializable permits for blind appends; dropping them would silently undo a commit
whose writer was told it succeeded). Anything else conflicts and fails with
:class:`ConcurrentModificationError`, nothing written: a concurrent delete, update, merge or
compaction (it removed files), a concurrent non-blind append, a metadata or protocol change.
The same happens to concurrent appends when the restore changes the metadata (e.g. a
schema), since appended files were written for the schema the restore replaces, and under
``delta.isolationLevel=Serializable``.

We write the ``metaData`` action only when the restored metadata differs from the current
one (Delta Spark always writes it); an identical ``metaData`` changes nothing for readers but
would make every concurrent append a conflict. Commit-coordination properties (a managed
commit owner, and on such a table the in-commit timestamps it needs) are kept as they are
now: a restore does not convert a table between filesystem and managed commits. On other
tables in-commit timestamps follow the restored metadata like any property (restoring a
version from before they were enabled turns them off; the protocol keeps the feature).
Domain metadata stays as it is.

A guard of our own for rollbacks: ``expected_version`` (the version of the commit the caller
wants undone) makes the restore refuse, with :class:`UnexpectedVersionError` and nothing written,
unless that version is still the table's latest: a rollback then never undoes a commit it did
not mean to (another DAG run's published load, say). A blind append that races the restore's
own commit is kept, as above, so it is not undone either.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any, Iterable

from ..base import ict
from ..base.actions import Metadata, Protocol
from ..base.commit_actions import AddFile
from ..base.path_spelling import LOG_PATH_COLUMN, existing_spelling
from ..base.errors import (DataFileNotFoundError, DeltaError, InvalidArgumentError, TimestampOutOfRangeError,
                           UnexpectedVersionError, VersionNotFoundError)
from ..base.features import (COMMIT_COORDINATOR_PROPERTIES, ISOLATION_LEVEL_PROPERTY, MANAGED_OWNER_CONF_PROPERTY, Operation,
                             protocol_with_features, supported_features)
from ..base.intervals import deleted_file_retention_ms
from ..base.timeutil import format_ms, now_or, to_epoch_ms
from ..read.data_paths import path_exists
from ..read.deletion_vectors import dv_file_path
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog, version_arg
from .column_expressions import keep_identity_high_water_marks
from .isolation import WRITE_SERIALIZABLE
from .transaction import Transaction, file_key

RESTORE_OPERATION = "RESTORE"
#: how many missing files the error names (Delta Spark stops at 100 as well)
MISSING_FILES_SHOWN = 100
#: properties that belong to how commits are made, not to the table's content: kept as they are
_COORDINATION_PROPERTIES = (*COMMIT_COORDINATOR_PROPERTIES, MANAGED_OWNER_CONF_PROPERTY)
#: in-commit timestamps, which a coordinated table needs: kept on such tables only; elsewhere they
#: follow the restored version's metadata (Delta Spark's RESTORE makes no exception for them)
_ICT_PROPERTIES = (ict.ENABLE_PROPERTY, ict.ENABLEMENT_VERSION_PROPERTY, ict.ENABLEMENT_TIMESTAMP_PROPERTY)


@dataclass(frozen=True)
class RestoreResult:
    """What a restore did: the table's version afterwards, and Delta Spark's metrics.

    ``committed`` is False when the target was the latest version (nothing to do).
    """

    version: int
    restored_version: int
    committed: bool
    metrics: dict[str, int]


def spark_timestamp_text(ms: int) -> str:
    """A timestamp as Delta Spark's ``java.sql.Timestamp.toString`` shows it (UTC): its RESTORE parameter."""
    t = dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc)
    fraction = f"{ms % 1000:03d}".rstrip("0") or "0"
    return t.strftime("%Y-%m-%d %H:%M:%S") + "." + fraction


def file_actions(snapshot: Snapshot) -> dict[tuple[str, str | None], AddFile]:
    """The live files of ``snapshot`` as AddFile actions, keyed by (decoded path, DV id), each
    spelled as the log spells it (a restored file is re-added under its own spelling)."""
    out: dict[tuple[str, str | None], AddFile] = {}
    for row in snapshot.files().to_pylist():
        dv = row.get("deletion_vector")
        dv = {k: v for k, v in dv.items() if v is not None} if dv else None
        add = AddFile(row["path"], int(row["size"]), dict(row.get("partition_values") or {}),
                      int(row.get("modification_time") or 0), True, row.get("stats"),
                      dict(row["tags"]) if row.get("tags") else None, dv, row.get("base_row_id"),
                      row.get("default_row_commit_version"),
                      existing_spelling(row.get(LOG_PATH_COLUMN), row["path"]))
        out[file_key(add.path, dv)] = add
    return out


def merged_protocol(current: Protocol, restored: Protocol) -> Protocol:
    """The current protocol plus whatever the restored version's supported: never a downgrade."""
    reader, writer = supported_features(restored)
    return protocol_with_features(current, reader | writer, restored.min_reader_version,
                                  restored.min_writer_version)


def restored_metadata(current: Snapshot, restored: Metadata) -> Metadata:
    """The restored version's metadata, with today's commit-coordination properties and identity
    high water marks (an identity value handed out after the restored version stays used)."""
    names = _COORDINATION_PROPERTIES + (_ICT_PROPERTIES if current.commits_are_coordinated else ())
    conf = current.metadata.configuration
    keep = {k: conf.get(k) for k in names if k in conf or k in restored.configuration}
    restored = keep_identity_high_water_marks(restored, current.metadata)
    return restored.with_configuration(keep) if keep else restored


def missing_files(table: TableLog, adds: Iterable[AddFile]) -> list[str]:
    """Data and deletion-vector files of ``adds`` that are gone (vacuumed or deleted by hand)."""
    missing: list[str] = []
    for add in adds:
        paths = [add.path]
        if add.deletion_vector and add.deletion_vector.get("storageType") in ("u", "p"):
            paths.append(dv_file_path(add.deletion_vector) or "")
        for p in paths:
            if not path_exists(table.storage, p):
                missing.append(p)
                if len(missing) >= MISSING_FILES_SHOWN:
                    return missing
    return missing


def _target_version(table: TableLog, latest: Snapshot, version: Any, timestamp: Any) -> int:
    if (version is None) == (timestamp is None):
        raise InvalidArgumentError("restore needs exactly one of version or timestamp")
    if version is not None:
        target = version_arg(version)
        if target < 0 or target > latest.version:
            raise VersionNotFoundError(
                f"cannot restore {table.uri} to version {target}: the latest version is {latest.version}",
                version=target, latest=latest.version)
        return target
    ts = to_epoch_ms(timestamp)
    try:
        return table.version_at(ts)                   # before the first / after the latest commit: errors
    except TimestampOutOfRangeError as e:
        if e.latest is None:
            raise                                     # before the first commit: its message says so
        # Delta Spark's RESTORE refuses a time after the latest commit too (it has no way to ask otherwise);
        # version_at's own advice names a parameter restore does not have
        raise TimestampOutOfRangeError(
            f"cannot restore {table.uri} to {format_ms(ts)}: that is after its latest commit (version "
            f"{latest.version} at {format_ms(e.latest)}), so the table as of that time is the latest version and "
            f"there is nothing to restore. Nothing was written. Pass a time at or before {format_ms(e.latest)}, or "
            f"version={latest.version} (a restore to the latest version commits nothing)",
            timestamp=ts, latest=e.latest) from None


def restored_version_of(table: TableLog, operation_parameters: dict[str, Any] | None, version: Any = None,
                        timestamp: Any = None) -> int | None:
    """The version a recorded RESTORE (its ``operationParameters``) restored when it was asked for the same
    target as ``version`` / ``timestamp``, else None. A restore to a timestamp records no version (as
    Delta Spark's), only the timestamp: its target is the version at that timestamp, which later
    commits do not change."""
    params = operation_parameters or {}
    recorded, when = params.get("version"), params.get("timestamp")
    try:
        if version is not None:
            return int(recorded) if recorded is not None and int(recorded) == version_arg(version) else None
        if timestamp is None or recorded is not None or when != spark_timestamp_text(to_epoch_ms(timestamp)):
            return None
        return table.version_at(to_epoch_ms(timestamp))
    except (TypeError, ValueError, DeltaError):
        return None             # not readable or no longer resolvable: not known to be the same restore


def restore_target_of(table: TableLog, operation_parameters: dict[str, Any] | None) -> int | None:
    """The version a recorded RESTORE (its ``operationParameters``) restored: its ``version``, else the
    version at its ``timestamp`` (Delta Spark records only the timestamp then; later commits do not
    change which version that is). None when neither can be read or resolved.

    The timestamp has no zone and is read as UTC: right for our own :func:`restore_table` (it writes
    :func:`spark_timestamp_text`, UTC), and for Delta Spark only when its JVM ran in UTC: Delta Spark writes
    ``java.sql.Timestamp.toString()``, the JVM's local wall-clock time, so a RESTORE from a JVM in another
    zone resolves to the version at a time off by that zone's offset. A best guess, for display; a decision
    that must be right (whether a RESTORE undid a commit: :mod:`.pair_undone_by_restore`) does not read the
    timestamp but what the RESTORE did to the files."""
    params = operation_parameters or {}
    recorded, when = params.get("version"), params.get("timestamp")
    try:
        if recorded is not None:
            return version_arg(int(recorded))
        return None if when is None else table.version_at(to_epoch_ms(when))
    except (TypeError, ValueError, DeltaError):
        return None


def check_expected_version(table: TableLog, latest: Snapshot, expected_version: Any) -> None:
    """The rollback guard: refuse unless the table's latest version is ``expected_version`` (None: no guard)."""
    if expected_version is None:
        return
    expected = version_arg(expected_version, "expected_version")
    if latest.version != expected:
        raise UnexpectedVersionError(
            f"refusing to restore {table.uri}: it is at version {latest.version}, not at the expected version "
            f"{expected}; the commits after {expected} would be undone too. Nothing was written: look at the "
            "table's history and restore by hand if that is what you want", expected=expected, latest=latest.version)


def restore_table(table: TableLog, version: Any = None, timestamp: Any = None, *, enforce_retention: bool = True,
                  now_ms: int | None = None, expected_version: Any = None, **commit_kwargs: Any) -> RestoreResult:
    """Restore ``table`` to ``version`` or to the version as of ``timestamp`` (exactly one).

    ``expected_version``: restore only if that is still the table's latest version (else
    UnexpectedVersionError, nothing written): a rollback passes the version of its own commit.

    ``commit_kwargs`` go to the :class:`~.transaction.Transaction` (``job``,
    ``user_metadata``, ``max_retries``, ``clock``...). Raises VersionNotFoundError /
    TimestampOutOfRangeError for a target the log cannot reconstruct,
    InvalidArgumentError for one beyond the deleted-file retention, DataFileNotFoundError
    when a file to restore is gone, ConcurrentModificationError when a concurrent commit
    conflicts (see the module docstring); in each case nothing is written.
    """
    latest = table.snapshot()
    table.require(latest, Operation.COMMIT)
    check_expected_version(table, latest, expected_version)
    target = _target_version(table, latest, version, timestamp)
    if target == latest.version:
        return RestoreResult(latest.version, target, False, _metrics({}, {}, latest))
    old = table.snapshot(version=target)
    retention = deleted_file_retention_ms(latest.configuration)
    if enforce_retention and old.timestamp < now_or(now_ms) - retention:
        raise InvalidArgumentError(
            f"cannot restore {table.uri} to version {target} of {format_ms(old.timestamp)}: it is older than "
            f"the table's delta.deletedFileRetentionDuration ({retention / 3_600_000:g} hours), so vacuum may "
            "be deleting its files. Pass enforce_retention=False if you are sure no vacuum runs.")
    now_files, then_files = file_actions(latest), file_actions(old)
    to_add = {k: a for k, a in then_files.items() if k not in now_files}
    to_remove = {k: a for k, a in now_files.items() if k not in then_files}
    gone = missing_files(table, to_add.values())
    if gone:
        raise DataFileNotFoundError(
            f"cannot restore {table.uri} to version {target}: {len(gone)}{'+' if len(gone) >= MISSING_FILES_SHOWN else ''}"
            f" of its files are gone (vacuumed or deleted), e.g. {gone[:5]}; restore a newer version",
            path=gone[0])
    metrics = _metrics(to_add, to_remove, old)
    params = {"version": None if version is None else target,
              "timestamp": None if timestamp is None else spark_timestamp_text(to_epoch_ms(timestamp))}
    commit_kwargs.setdefault("operation_parameters", params)
    commit_kwargs.setdefault("operation_metrics", metrics)
    if ISOLATION_LEVEL_PROPERTY not in latest.metadata.configuration:
        commit_kwargs.setdefault("isolation_level", WRITE_SERIALIZABLE)   # see the module docstring
    commit_kwargs.setdefault("large_commit_info", True)     # commitInfo as Delta Spark's commitLarge writes it
    # the snapshot whose file list this restore loaded: the transaction reads it, not a second copy
    txn = Transaction(table, operation=RESTORE_OPERATION, read_snapshot=latest, **commit_kwargs)
    txn.mark_read("all")
    metadata = restored_metadata(latest, old.metadata)
    if metadata.to_json() != latest.metadata.to_json():
        txn.set_metadata(metadata, of_restored_version=old)     # its files are loaded: the check reuses them
    protocol = merged_protocol(latest.protocol, old.protocol)
    if protocol != latest.protocol:
        txn.set_protocol(protocol)
    txn.remove_files([a.remove(0, True) for a in to_remove.values()])
    txn.add_files(to_add.values())
    return RestoreResult(txn.commit(), target, True, metrics)


def _metrics(to_add: dict[Any, AddFile], to_remove: dict[Any, AddFile], restored: Snapshot) -> dict[str, int]:
    """Delta Spark's RESTORE metrics (``RestoreTableCommandBase``)."""
    sizes = restored.files().column("size").to_pylist()
    return {
        "numRestoredFiles": len(to_add),
        "restoredFilesSize": sum(a.size for a in to_add.values()),
        "numRemovedFiles": len(to_remove),
        "removedFilesSize": sum(a.size for a in to_remove.values()),
        "numOfFilesAfterRestore": len(sizes),
        "tableSizeAfterRestore": sum(s or 0 for s in sizes),
    }
