"""The Delta transaction log in pure Python (pyarrow + fsspec; no Airflow, no Spark).

Public API: :class:`DeltaTable`, its :class:`Snapshot` and :class:`Transaction`, the
action types a writer builds (:class:`AddFile`, :class:`RemoveFile`, :class:`Metadata`,
:class:`Protocol`), the commit owners and the catalog of staged commits, the answer
of :meth:`DeltaTable.commits_since`, and the error types, all deriving from
:class:`DeltaError`. ``docs/architecture.md`` shows how the modules behind them are tiered.
"""
from .base.actions import Metadata, Protocol
from .base import commit_owner
from .base.commit_source import CommitSource
from .read.column_mapping import physical_schema
from .read.data_paths import file_uri, options_for_place
from .read.deletion_vectors import read_deletion_vector
from .base.errors import DeletionVectorError
from .base.errors import ConditionalCreateError
from .base.features import column_mapping_mode
from .base.errors import (
    CatalogUnavailableError, ChangeDataFeedNotEnabledError, CommitFailedError, GroupCommitError, InvalidCommittedVersionError, CommitOutcomeUnknownError, CommitOwnerUnavailableError, ConcurrentModificationError,
    ConcurrentAppendError, ConcurrentDeleteReadError, ConcurrentDeleteDeleteError, MetadataChangedError, ProtocolChangedError, ConcurrentTransactionError,
    CorruptLogError, DataFileNotFoundError, DeltaError,
    InvalidArgumentError, InvalidTableStateError, StorageError, TableAlreadyExistsError,
    TableNotFoundError, TimestampOutOfRangeError, UnsupportedFeatureError, CatalogRequiredError, UnexpectedVersionError, VersionNotFoundError,
    PairUndoneByRestoreError, PairRestoreUndecidedError, PositionUndoneByRestoreError,
)
from .read.managed_state import owner_of
from .read.new_commits import CommitRecord, CommitsSince
from .base.schema import (arrow_to_schema, partition_values_to_arrow, schema_string, schema_to_arrow,
                     serialize_partition_value)
from .read.snapshot import Snapshot
from .base.stats import collect_stats
from .base.secret_names import looks_like_secret
from .base.storage import normalize_uri
from .table import DeltaTable
from .base.timeutil import format_ms, to_epoch_ms

__all__ = [
    "DeltaTable", "Snapshot", "Transaction", "AddFile", "RemoveFile", "Metadata", "Protocol", "DomainMetadata",
    "CommitOwner", "InMemoryCommitOwner", "SqlCommitOwner", "CommitSource", "StagedCommitsCatalog",
    "SqlCatalog", "CatalogTransaction", "GroupCommitError", "CatalogUnavailableError",
    "CommitRecord", "CommitsSince", "to_epoch_ms", "format_ms",
    # for engines that write a checkpoint with parallel workers (spark/checkpoint_engine.py)
    "plan_checkpoint", "CheckpointPlan",
    # for engines that rewrite OPTIMIZE bins with parallel workers (spark/optimize_engine.py)
    "plan_optimize", "OptimizePlan", "rewrite_bin", "commit_optimize",
    # for engines that write data files themselves (the Spark integration): the same schema,
    # statistics and write-planning rules DeltaTable.write follows
    "schema_to_arrow", "arrow_to_schema", "schema_string", "partition_values_to_arrow",
    "serialize_partition_value", "collect_stats", "normalize_uri", "looks_like_secret", "owner_from_conf", "owner_of",
    # which storage options given for one place may go to another (hooks: a connection's to a table URI)
    "options_for_place",
    "WritePlan", "PlannedWrite", "plan_write", "write_transaction", "check_mode", "partition_arg", "column_mapping_mode",
    # table properties checked as a create checks them (names and values), for callers that hand them on
    "checked_properties",
    # for engines that read data files themselves (the Spark reader): deleted rows, physical names
    "read_deletion_vector", "physical_schema", "file_uri", "DeletionVectorError",
    # restore and shallow clone with what they did (DeltaTable.restore / .clone return less)
    "RestoreResult", "restore_table", "restored_version_of", "restore_target_of", "CloneResult", "clone_table", "cloned_source_version",
    # a writer's exactly-once pair whose commit a later RESTORE undid (what skips on a committed pair checks)
    "PairUndone", "pair_undone_by_restore", "check_pair_not_undone", "PairUndoneByRestoreError", "PairRestoreUndecidedError",
    # the same for an incremental consumer's position (what takes a position checks)
    "PositionUndone", "position_undone_by_restore", "check_position_not_undone", "PositionUndoneByRestoreError",
    # the change feed consumed incrementally, exactly once (position = the output's txn record)
    "ChangeRange", "IncrementalStep", "pending_changes", "process_changes",
    "DeltaError", "TableNotFoundError", "TableAlreadyExistsError",
    "VersionNotFoundError", "TimestampOutOfRangeError", "UnsupportedFeatureError", "CatalogRequiredError", "UnexpectedVersionError",
    "CorruptLogError", "DataFileNotFoundError", "InvalidTableStateError", "InvalidArgumentError", "StorageError", "ConditionalCreateError",
    "CommitFailedError", "InvalidCommittedVersionError", "ConcurrentModificationError",
    "ConcurrentAppendError", "ConcurrentDeleteReadError", "ConcurrentDeleteDeleteError", "MetadataChangedError", "ProtocolChangedError", "ConcurrentTransactionError", "ChangeDataFeedNotEnabledError", "CommitOwnerUnavailableError", "CommitOutcomeUnknownError",
]


#: Public names of the commit-owner package, loaded with it on first use.
_COMMIT_OWNER_NAMES = ("CommitOwner", "InMemoryCommitOwner", "SqlCommitOwner", "owner_from_conf")


def __getattr__(name: str):
    """Public names of the write side, imported on first use (PEP 562).

    Reading a table is what most task processes do, each from a cold start; these names
    pull in the write engine (transaction, committer, checkpoint writer, write planner),
    the commit owners (SQLAlchemy for the SQL one), the catalog of staged commits and
    the action classes only a writer builds, none of which a read of a filesystem table
    runs. ``DeltaTable`` loads its own write modules the same way (see :mod:`.operations`).
    """
    if name in _COMMIT_OWNER_NAMES:
        value = getattr(commit_owner, name)
    elif name in ("AddFile", "RemoveFile", "DomainMetadata"):
        from .base import commit_actions as module
        value = getattr(module, name)
    elif name == "SqlCatalog":
        from .catalogs.sql_catalog import SqlCatalog as value
    elif name == "CatalogTransaction":
        from .catalogs.group import CatalogTransaction as value
    elif name == "StagedCommitsCatalog":
        from .base.catalog import StagedCommitsCatalog as value
    elif name == "Transaction":
        from .write.transaction import Transaction as value
    elif name in ("CheckpointPlan", "plan_checkpoint"):
        from .maintenance import distributed_checkpoint as module
        value = getattr(module, name)
    elif name in ("OptimizePlan", "plan_optimize", "commit_optimize"):
        from .write import optimize as module
        value = getattr(module, name)
    elif name == "rewrite_bin":
        from .write.optimize_rewrite import rewrite_bin as value
    elif name in ("ChangeRange", "IncrementalStep", "pending_changes", "process_changes"):
        from . import incremental as module
        value = getattr(module, name)
    elif name in ("PairUndone", "pair_undone_by_restore", "check_pair_not_undone", "PositionUndone",
                  "position_undone_by_restore", "check_position_not_undone"):
        from .write import pair_undone_by_restore as module
        value = getattr(module, name)
    elif name in ("RestoreResult", "restore_table", "restored_version_of", "restore_target_of"):
        from .write import restore as module
        value = getattr(module, name)
    elif name in ("CloneResult", "clone_table", "cloned_source_version"):
        from .write import clone as module
        value = getattr(module, name)
    elif name == "checked_properties":
        from .base.property_values import checked_properties as value
    elif name in ("WritePlan", "PlannedWrite", "check_mode", "partition_arg", "plan_write", "write_transaction"):
        from .write import write_plan as module
        value = getattr(module, name)
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
