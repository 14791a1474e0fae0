"""Rebuilding the commit owner a table names from its properties.

A managed-commit table says who owns it (``delta.managedCommit.commitOwner``) and
how to reach it (``delta.managedCommit.commitOwnerConf``) but, by the RFC, never
with credentials. Hooks and tools that open a table by URI use this to get an
owner, adding the password from an Airflow connection or the environment.
"""
from __future__ import annotations

from typing import Any

from ..errors import InvalidArgumentError, UnsupportedFeatureError
from .base import CommitOwner
from .conf import check_owner_conf


def owner_from_conf(name: str, conf: dict[str, str], password: str | None = None,
                    **kwargs: Any) -> CommitOwner:
    """The owner called ``name`` configured by ``conf`` (extra kwargs go to its constructor)."""
    conf = check_owner_conf(conf)
    if name == "sql":
        from .sql import SqlCommitOwner    # SQLAlchemy: loaded only for a table owned by a SQL owner
        return SqlCommitOwner.from_conf(conf, password=password, **kwargs)
    if name == "in-memory":
        raise InvalidArgumentError(
            "an in-memory commit owner lives inside the process that created it and cannot be rebuilt "
            "from the table's properties; pass that InMemoryCommitOwner object to DeltaTable")
    raise UnsupportedFeatureError(f"unknown commit owner '{name}': this package implements 'sql' and "
                                  "'in-memory'", feature=name)
