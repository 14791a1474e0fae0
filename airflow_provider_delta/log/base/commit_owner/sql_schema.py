"""The SQL commit owner's two tables.

``delta_owner_tables`` holds one row per table (state, latest ratified version,
highest backfilled version); ``delta_owner_commits`` one row per ratified commit not
yet backfilled. How they are created safely from many processes: :mod:`.sql_tables`.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .sql_tables import SqlSchema, commit_key, number, staged_file, table_key

schema = SqlSchema("DELTAOWN")

tables = schema.table(
    "delta_owner_tables",
    table_key(),
    sa.Column("table_uri", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    number("latest_version"),
    number("backfilled_version"),
    number("updated_ms"),
)

commits = schema.table(
    "delta_owner_commits",
    *commit_key(),
    *staged_file(),
    number("modification_time"),
    number("commit_timestamp"),
)


def ensure_schema(engine: Engine) -> None:
    """Create the owner's tables if they are missing; safe to run from many processes at once."""
    schema.ensure(engine)
