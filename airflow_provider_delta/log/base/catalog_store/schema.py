"""The SQL catalog's tables.

``delta_catalog_tables``: one row per catalog-managed table (its URI, the latest
ratified version, the highest version known to be published). ``delta_catalog_commits``:
one row per ratified commit, the staged file's name (the catalog stores the location,
not the content, PROTOCOL.md); rows stay after publishing, so the catalog can always
tell a ratified staged file from a rejected one. ``delta_catalog_groups``: multi-table
transactions, their state (open, staged, ratified, aborted) and their members.
``delta_catalog_tombstones``: staged files that cleanup decided are abandoned; a
ratification naming one is refused in the same database transaction, so a file is
never deleted and ratified both. ``delta_catalog_identity``: the catalog's own id (one row,
made once), which every table created through it records (:mod:`.identity`).
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from ..commit_owner.sql_tables import SqlSchema, commit_key, number, staged_file, table_key

schema = SqlSchema("DELTACAT")

tables = schema.table(
    "delta_catalog_tables",
    table_key(),
    sa.Column("table_uri", sa.Text, nullable=False),
    number("latest_version"),
    number("published_version"),
    number("updated_ms"),
)

commits = schema.table(
    "delta_catalog_commits",
    *commit_key(),
    *staged_file(),
    number("commit_timestamp"),
    sa.Column("group_id", sa.String(64), nullable=True),
    number("ratified_ms"),
)

groups = schema.table(
    "delta_catalog_groups",
    sa.Column("group_id", sa.String(64), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    #: JSON list of the staged members (see :class:`.records.GroupMember`)
    sa.Column("members", sa.Text, nullable=False),
    number("created_ms"),
    number("updated_ms"),
)

tombstones = schema.table(
    "delta_catalog_tombstones",
    table_key(),
    sa.Column("file_name", sa.String(255), primary_key=True),
    number("deleted_ms"),
)

identity = schema.table(
    "delta_catalog_identity",
    sa.Column("name", sa.String(64), primary_key=True),
    sa.Column("value", sa.String(64), nullable=False),
)


def ensure_schema(engine: Engine) -> None:
    """Create the catalog's tables if they are missing (safe from many processes at once)."""
    schema.ensure(engine)
