"""Opening a table from inside a Spark driver, commit owner included.

A Spark job gets table locations as plain strings (from the operator's JSON
arguments); a managed-commit table also needs its commit owner, or reads would
miss the un-backfilled commits and writes would be refused. The owner comes from
an explicit spec (the Airflow connection's, passed along by the operator), or
else is rebuilt from the table's own ``commitOwnerConf`` (which by the RFC holds
no secrets; a password may come from ``DELTA_COMMIT_OWNER_PASSWORD``).
"""
from __future__ import annotations

import os
from typing import Any

from ..log import DeltaTable, InvalidArgumentError, TableNotFoundError, owner_from_conf, owner_of

#: Environment variable holding the commit owner's password when it is rebuilt from table properties.
OWNER_PASSWORD_ENV = "DELTA_COMMIT_OWNER_PASSWORD"


def build_commit_owner(spec: Any) -> Any:
    """A commit owner from ``spec``: an owner object as is, or ``{"type": "sql", "url": ..., "options": {...}}``."""
    if spec is None or not isinstance(spec, dict):
        return spec
    kind = spec.get("type", "sql")
    if kind != "sql":
        raise InvalidArgumentError(f"unknown commit owner type {kind!r}: only 'sql' can be passed to a Spark job")
    if not spec.get("url"):
        raise InvalidArgumentError("a SQL commit owner spec needs a 'url'")
    from ..log import SqlCommitOwner     # SQLAlchemy: loaded only for a job given a SQL owner
    return SqlCommitOwner(spec["url"], **dict(spec.get("options") or {}))


def open_table(uri: str, storage_options: dict[str, Any] | None = None, commit_owner: Any = None,
               single_writer: bool = False) -> DeltaTable:
    """The table at ``uri``; for a managed-commit table, with its commit owner.

    With no ``commit_owner`` given, a table whose metadata names an owner gets one
    rebuilt from that metadata. A table that does not exist yet is returned as is
    (writers create it).
    """
    if not isinstance(uri, str) or not uri.strip():
        raise InvalidArgumentError("a table URI is required")
    owner = build_commit_owner(commit_owner)
    table = DeltaTable(uri, storage_options=storage_options, commit_owner=owner, single_writer=single_writer)
    if owner is not None:
        return table
    try:
        metadata = table.snapshot().metadata
    except TableNotFoundError:
        return table
    named = owner_of(metadata)
    if named is None:
        return table
    name, conf = named
    owner = owner_from_conf(name, conf, password=os.environ.get(OWNER_PASSWORD_ENV) or None)
    return DeltaTable(uri, storage_options=storage_options, commit_owner=owner, single_writer=single_writer)
