"""Managed commits: the commit-owner API and its in-memory and SQL implementations.

See :class:`CommitOwner` for the protocol. The names load on first use (PEP 562): a
read of a filesystem table needs only :mod:`.conf` (to check a table's owner
properties), and ``SqlCommitOwner`` imports SQLAlchemy.
"""
from __future__ import annotations

__all__ = ["CommitOwner", "InMemoryCommitOwner", "SqlCommitOwner", "Commit", "GetCommitsResponse", "TableState",
           "owner_from_conf"]


def __getattr__(name: str):
    # Plain import statements, not importlib with a string: the architecture test reads the
    # import graph from the source and sees only these.
    if name == "CommitOwner":
        from .base import CommitOwner as value
    elif name == "InMemoryCommitOwner":
        from .in_memory import InMemoryCommitOwner as value
    elif name == "SqlCommitOwner":
        from .sql import SqlCommitOwner as value
    elif name in ("Commit", "GetCommitsResponse", "TableState"):
        from . import records
        value = getattr(records, name)
    elif name == "owner_from_conf":
        from .registry import owner_from_conf as value
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value
