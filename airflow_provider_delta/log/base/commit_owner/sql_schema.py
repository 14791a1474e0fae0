"""The SQL commit owner's two tables, and creating them safely from many processes at once.

``delta_owner_tables`` holds one row per table (state, latest ratified version,
highest backfilled version); ``delta_owner_commits`` one row per ratified commit not
yet backfilled. The primary key (table_id, version) makes "two commits at one
version" impossible even if the ratification logic had a bug.

``CREATE TABLE IF NOT EXISTS`` alone is not enough when processes start together:
PostgreSQL can still fail one of two concurrent creations on its catalog's unique
index. So creation happens inside a transaction that first takes a lock (a
transaction-level advisory lock on PostgreSQL, ``BEGIN IMMEDIATE`` on SQLite) and
then checks for the tables; other databases fall back to re-checking after a failure.
"""
from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Engine

from .sql_engine import SQLITE_BEGIN

metadata = sa.MetaData()

tables = sa.Table(
    "delta_owner_tables", metadata,
    sa.Column("table_id", sa.String(255), primary_key=True),
    sa.Column("table_uri", sa.Text, nullable=False),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("latest_version", sa.BigInteger, nullable=False),
    sa.Column("backfilled_version", sa.BigInteger, nullable=False),
    sa.Column("updated_ms", sa.BigInteger, nullable=False),
)

commits = sa.Table(
    "delta_owner_commits", metadata,
    sa.Column("table_id", sa.String(255), primary_key=True),
    sa.Column("version", sa.BigInteger, primary_key=True, autoincrement=False),
    sa.Column("file_name", sa.String(255), nullable=False),
    sa.Column("file_size", sa.BigInteger, nullable=False),
    sa.Column("modification_time", sa.BigInteger, nullable=False),
    sa.Column("commit_timestamp", sa.BigInteger, nullable=False),
)

# Arbitrary constant naming the schema-creation lock ("DELTAOWN" in ASCII).
_PG_LOCK_KEY = 0x44454C54414F574E


def ensure_schema(engine: Engine) -> None:
    """Create the owner's tables if they are missing; safe to run from many processes at once."""
    ensure_tables(engine, metadata, _PG_LOCK_KEY)


def ensure_tables(engine: Engine, schema: sa.MetaData, pg_lock_key: int) -> None:
    """Create ``schema``'s tables if any is missing, under a lock (``pg_lock_key`` names the
    PostgreSQL advisory lock): the SQL commit owner's and the SQL catalog's schemas both use it."""
    backend = engine.dialect.name
    if _have_tables(engine, schema):
        return
    try:
        with engine.connect() as conn:
            if backend == "sqlite":
                conn = conn.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
            with conn.begin():
                if backend == "postgresql":
                    conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": pg_lock_key})
                schema.create_all(conn, checkfirst=True)
    except sa.exc.DBAPIError:
        if not _have_tables(engine, schema):  # lost a creation race on a database without our lock: fine
            raise


def _have_tables(engine: Engine, schema: sa.MetaData) -> bool:
    with engine.connect() as conn:
        insp = sa.inspect(conn)
        return all(insp.has_table(t.name) for t in schema.sorted_tables)
