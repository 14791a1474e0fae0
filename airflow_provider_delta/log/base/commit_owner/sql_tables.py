"""The SQL tables of the commit owner and the catalog: their shared columns and their safe creation.

Both keep one row per Delta table (keyed by its table id) and one row per ratified commit
(keyed by table id and version, so "two commits at one version" is impossible even if the
ratification logic had a bug), and both create their tables the same way.

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


def table_key() -> sa.Column:
    """A Delta table's id (``metaData.id``), the key of a per-table row."""
    return sa.Column("table_id", sa.String(255), primary_key=True)


def commit_key() -> tuple[sa.Column, sa.Column]:
    """(table id, version): the key of a per-commit row."""
    return table_key(), sa.Column("version", sa.BigInteger, primary_key=True, autoincrement=False)


def staged_file() -> tuple[sa.Column, sa.Column]:
    """Where a ratified commit is stored: the staged file's name (in the table's commit folder) and size."""
    return sa.Column("file_name", sa.String(255), nullable=False), sa.Column("file_size", sa.BigInteger, nullable=False)


def number(name: str) -> sa.Column:
    """A required 64-bit number (versions, epoch milliseconds)."""
    return sa.Column(name, sa.BigInteger, nullable=False)


class SqlSchema:
    """A set of tables created together under one lock, named by eight ASCII letters (the key of
    the PostgreSQL advisory lock is those bytes: ``DELTAOWN``, ``DELTACAT``)."""

    def __init__(self, lock_name: str):
        if len(lock_name) != 8 or not lock_name.isascii():
            raise ValueError(f"a schema lock is named by eight ASCII letters, got {lock_name!r}")
        self.metadata = sa.MetaData()
        self.pg_lock_key = int.from_bytes(lock_name.encode("ascii"), "big")

    def table(self, name: str, *columns: sa.Column) -> sa.Table:
        return sa.Table(name, self.metadata, *columns)

    def ensure(self, engine: Engine) -> None:
        """Create the tables if any is missing; safe to run from many processes at once."""
        if self._have_tables(engine):
            return
        backend = engine.dialect.name
        try:
            with engine.connect() as conn:
                if backend == "sqlite":
                    conn = conn.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
                with conn.begin():
                    if backend == "postgresql":
                        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": self.pg_lock_key})
                    self.metadata.create_all(conn, checkfirst=True)
        except sa.exc.DBAPIError:
            if not self._have_tables(engine):  # lost a creation race on a database without our lock: fine
                raise

    def _have_tables(self, engine: Engine) -> bool:
        with engine.connect() as conn:
            insp = sa.inspect(conn)
            return all(insp.has_table(t.name) for t in self.metadata.sorted_tables)
