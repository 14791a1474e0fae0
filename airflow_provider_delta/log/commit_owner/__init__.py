"""Managed commits: the commit-owner API and its in-memory and SQL implementations.

See :class:`CommitOwner` for the protocol. ``SqlCommitOwner`` is imported lazily
so that using the in-memory owner (or none) does not import SQLAlchemy.
"""
from .base import CommitOwner
from .in_memory import InMemoryCommitOwner
from .records import Commit, GetCommitsResponse, TableState
from .registry import owner_from_conf

__all__ = [
    "CommitOwner", "Commit", "GetCommitsResponse", "TableState", "InMemoryCommitOwner",
    "SqlCommitOwner", "owner_from_conf",
]


def __getattr__(name: str):
    if name == "SqlCommitOwner":
        from .sql import SqlCommitOwner
        return SqlCommitOwner
    raise AttributeError(name)
