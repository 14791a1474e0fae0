"""A commit owner backed by a SQL database (SQLite file or PostgreSQL) through SQLAlchemy.

Ratification is one database transaction: ``UPDATE delta_owner_tables SET
latest_version = v WHERE table_id = t AND latest_version = v - 1 AND state =
'active'`` followed by inserting the commit row. Of concurrent proposers of v the
database lets exactly one UPDATE match (PostgreSQL re-checks the WHERE clause on
the row the winner committed; SQLite runs one writer at a time), and the primary
key on (table_id, version) backs that up. Every other state change is a
compare-and-set on the table's row, so several processes and machines can share
one owner database safely.

Works with SQLAlchemy 1.4 and 2.x (explicit transactions, Core only).
"""
from __future__ import annotations

import time
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection

from ..errors import CommitOwnerUnavailableError, InvalidArgumentError
from .base import CommitOwner
from .conf import check_owner_conf
from .records import ACTIVE, Commit, TableState
from .sql_engine import UNREACHABLE, SqlDatabase, parse_url, public_url
from .sql_schema import commits, ensure_schema, tables


class SqlCommitOwner(CommitOwner):
    """Commit owner on a SQL database (``delta.managedCommit.commitOwner = sql``).

    ``url`` is a SQLAlchemy URL, e.g. ``sqlite:////var/lib/delta/owner.db`` or
    ``postgresql://delta@db:5432/delta``. The password, if any, is used to connect but
    never appears in :meth:`owner_conf`; rebuild an owner from a table's conf with
    :meth:`from_conf` and the password from the environment or an Airflow connection.
    The schema is created on first use.
    """

    name = "sql"

    def __init__(self, url: str | URL, backfill_batch_size: int = 1,
                 engine_kwargs: dict[str, Any] | None = None):
        super().__init__(backfill_batch_size)
        self._db = SqlDatabase(url, engine_kwargs, "the commit owner database", CommitOwnerUnavailableError)
        self._url = self._db.url
        self._engine_kwargs = self._db.engine_kwargs
        self.engine = self._db.engine
        self._backend = self._db.backend
        try:
            ensure_schema(self.engine)
        except UNREACHABLE as e:
            raise self._db.unavailable(e) from None

    @classmethod
    def from_conf(cls, conf: dict[str, str], password: str | None = None,
                  backfill_batch_size: int | None = None,
                  engine_kwargs: dict[str, Any] | None = None) -> "SqlCommitOwner":
        """Rebuild the owner a table names from its ``commitOwnerConf`` (plus the password, if any)."""
        conf = check_owner_conf(conf)
        url = conf.get("url")
        if not url:
            raise InvalidArgumentError("a SQL commit owner conf needs a 'url'")
        u = parse_url(url)
        if password is not None:
            u = u.set(password=password)
        if backfill_batch_size is None:
            try:
                backfill_batch_size = int(conf.get("backfillBatchSize", "1"))
            except ValueError:
                raise InvalidArgumentError(
                    f"backfillBatchSize in the owner conf is not an integer: {conf['backfillBatchSize']!r}") from None
        return cls(u, backfill_batch_size, engine_kwargs)

    def __repr__(self) -> str:
        return f"SqlCommitOwner({public_url(self._url)!r}, backfill_batch_size={self.backfill_batch_size})"

    def __getstate__(self) -> dict[str, Any]:
        # Engines do not pickle; a copy in another process reconnects with the same settings.
        return {"url": self._url, "backfill_batch_size": self.backfill_batch_size,
                "engine_kwargs": self._engine_kwargs}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["url"], state["backfill_batch_size"], state["engine_kwargs"])

    def dispose(self) -> None:
        """Close pooled connections (e.g. before forking, or at the end of a task)."""
        self.engine.dispose()

    def owner_conf(self) -> dict[str, str]:
        return {"url": public_url(self._url), "backfillBatchSize": str(self.backfill_batch_size)}

    # --------------------------------------------------------------- storage
    def _retry_safe(self):
        return self._db.retry_safe()

    def _tx(self, write: bool):
        return self._db.tx(write)

    def _read_table(self, table_id: str) -> TableState | None:
        with self._retry_safe(), self._tx(write=False) as conn:
            return _select_table(conn, table_id)

    def _read_commits(self, table_id: str, start: int, end: int | None) -> tuple[TableState | None, list[Commit]]:
        cond = [commits.c.table_id == table_id, commits.c.version >= start]
        if end is not None:
            cond.append(commits.c.version <= end)
        with self._retry_safe(), self._tx(write=False) as conn:
            state = _select_table(conn, table_id)
            rows = conn.execute(sa.select(commits).where(*cond).order_by(commits.c.version)).fetchall()
        return state, [Commit(int(r.version), r.file_name, int(r.file_size), int(r.modification_time),
                              int(r.commit_timestamp)) for r in rows]

    def _replace_table(self, table_id: str, expected: TableState | None, new: TableState | None,
                       clear_commits: bool = False) -> bool:
        try:
            with self._retry_safe(), self._tx(write=True) as conn:
                if expected is None:
                    if _select_table(conn, table_id) is not None:
                        return False
                    if new is not None:
                        conn.execute(sa.insert(tables).values(table_id=table_id, **_row(new)))
                else:
                    where = sa.and_(tables.c.table_id == table_id, tables.c.state == expected.state,
                                    tables.c.latest_version == expected.latest_version,
                                    tables.c.backfilled_version == expected.backfilled_version,
                                    tables.c.table_uri == expected.table_uri)
                    stmt = (sa.delete(tables).where(where) if new is None
                            else sa.update(tables).where(where).values(**_row(new)))
                    if conn.execute(stmt).rowcount != 1:
                        return False
                if clear_commits or new is None:
                    conn.execute(sa.delete(commits).where(commits.c.table_id == table_id))
        except sa.exc.IntegrityError:  # a concurrent insert of the same table id won
            return False
        return True

    def _ratify(self, table_id: str, commit: Commit) -> bool:
        v = commit.version
        try:
            with self._tx(write=True) as conn:
                moved = conn.execute(
                    sa.update(tables)
                    .where(tables.c.table_id == table_id, tables.c.state == ACTIVE,
                           tables.c.latest_version == v - 1)
                    .values(latest_version=v, updated_ms=_now_ms())).rowcount
                if moved != 1:
                    return False
                conn.execute(sa.insert(commits).values(
                    table_id=table_id, version=v, file_name=commit.file_name, file_size=commit.file_size,
                    modification_time=commit.modification_time, commit_timestamp=commit.commit_timestamp))
        except sa.exc.IntegrityError:  # (table_id, v) exists: someone else holds v; rolled back
            return False
        return True

    def _mark_backfilled(self, table_id: str, version: int) -> None:
        with self._retry_safe(), self._tx(write=True) as conn:
            conn.execute(sa.update(tables)
                         .where(tables.c.table_id == table_id, tables.c.backfilled_version < version)
                         .values(backfilled_version=version, updated_ms=_now_ms()))
            conn.execute(sa.delete(commits).where(commits.c.table_id == table_id, commits.c.version <= version))


def _select_table(conn: Connection, table_id: str) -> TableState | None:
    r = conn.execute(sa.select(tables).where(tables.c.table_id == table_id)).first()
    if r is None:
        return None
    return TableState(r.table_id, r.table_uri, r.state, int(r.latest_version), int(r.backfilled_version))


def _row(state: TableState) -> dict[str, Any]:
    return {"table_uri": state.table_uri, "state": state.state, "latest_version": state.latest_version,
            "backfilled_version": state.backfilled_version, "updated_ms": _now_ms()}


def _now_ms() -> int:
    return int(time.time() * 1000)
