"""The SQL catalog's tables.

``delta_catalog_tables``: one row per catalog-managed table (its URI, the latest
ratified version, the highest version known to be published). ``delta_catalog_commits``:
one row per ratified commit, the staged file's name (the catalog stores the location,
not the content, PROTOCOL.md); rows stay after publishing, so the catalog can always
tell a ratified staged file from a rejected one. ``delta_catalog_groups``: multi-table
transactions, their state (open, staged, ratified, aborted) and their members.
``delta_catalog_tombstones``: staged files that cleanup decided are abandoned; a
ratification naming one is refused in the same database transaction, so a file is
never deleted and ratified both.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..commit_owner.sql_schema import ensure_tables

metadata = sa.MetaData()

tables = sa.Table(
    "delta_catalog_tables", metadata,
    sa.Column("table_id", sa.String(255), primary_key=True),
    sa.Column("table_uri", sa.Text, nullable=False),
    sa.Column("latest_version", sa.BigInteger, nullable=False),
    sa.Column("published_version", sa.BigInteger, nullable=False),
    sa.Column("updated_ms", sa.BigInteger, nullable=False),
)

commits = sa.Table(
    "delta_catalog_commits", metadata,
    sa.Column("table_id", sa.String(255), primary_key=True),
    sa.Column("version", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("file_name", sa.String(255), nullable=False),
    sa.Column("file_size", sa.BigInteger, nullable=False),
    sa.Column("commit_timestamp", sa.BigInteger, nullable=False),
    sa.Column("group_id", sa.String(64), nullable=True),
    sa.Column("ratified_ms", sa.BigInteger, nullable=False),
)

groups = sa.Table(
    "delta_catalog_groups", metadata,
    sa.Column("group_id", sa.String(64), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    #: JSON list of the staged members (see :class:`.records.GroupMember`)
    sa.Column("members", sa.Text, nullable=False),
    sa.Column("created_ms", sa.BigInteger, nullable=False),
    sa.Column("updated_ms", sa.BigInteger, nullable=False),
)

tombstones = sa.Table(
    "delta_catalog_tombstones", metadata,
    sa.Column("table_id", sa.String(255), primary_key=True),
    sa.Column("file_name", sa.String(255), primary_key=True),
    sa.Column("deleted_ms", sa.BigInteger, nullable=False),
)

# Arbitrary constant naming the schema-creation lock ("DELTACAT" in ASCII).
_PG_LOCK_KEY = 0x44454C5441434154


def ensure_schema(engine: Engine) -> None:
    """Create the catalog's tables if they are missing (safe from many processes at once)."""
    ensure_tables(engine, metadata, _PG_LOCK_KEY)
