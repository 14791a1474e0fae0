"""The Delta transaction log in pure Python (pyarrow + fsspec; no Airflow, no Spark).

Public API: :class:`DeltaTable`, the commit owners, and the error types, all
deriving from :class:`DeltaError`.
"""
from .errors import (
    CommitFailedError, ConcurrentModificationError, CorruptLogError, DataFileNotFoundError, DeltaError,
    InvalidArgumentError, InvalidTableStateError, StorageError, TableAlreadyExistsError,
    TableNotFoundError, TimestampOutOfRangeError, UnsupportedFeatureError, VersionNotFoundError,
)
from .catalog import StagedCommitsCatalog
from .table import DeltaTable

__all__ = [
    "DeltaTable", "StagedCommitsCatalog", "DeltaError", "TableNotFoundError", "TableAlreadyExistsError",
    "VersionNotFoundError", "TimestampOutOfRangeError", "UnsupportedFeatureError",
    "CorruptLogError", "DataFileNotFoundError", "InvalidTableStateError", "InvalidArgumentError", "StorageError",
    "CommitFailedError", "ConcurrentModificationError",
    "CommitOwner", "InMemoryCommitOwner", "SqlCommitOwner",
]


def __getattr__(name: str):
    # Commit owners import SQLAlchemy; load them only when asked for.
    if name in ("CommitOwner", "InMemoryCommitOwner", "SqlCommitOwner"):
        from . import commit_owner
        return getattr(commit_owner, name)
    raise AttributeError(name)
