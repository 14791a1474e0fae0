"""Managed commits: the commit-owner API and its in-memory and SQL implementations.

See :class:`CommitOwner` for the protocol. The names load on first use (PEP 562): a
read of a filesystem table needs only :mod:`.conf` (to check a table's owner
properties), and ``SqlCommitOwner`` imports SQLAlchemy.
"""
from __future__ import annotations

import importlib

#: public name -> the submodule defining it
_HOMES = {
    "CommitOwner": "base", "InMemoryCommitOwner": "in_memory", "SqlCommitOwner": "sql",
    "Commit": "records", "GetCommitsResponse": "records", "TableState": "records",
    "owner_from_conf": "registry",
}

__all__ = list(_HOMES)


def __getattr__(name: str):
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{home}", __name__), name)
    globals()[name] = value
    return value
