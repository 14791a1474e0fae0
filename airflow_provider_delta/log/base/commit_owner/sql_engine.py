"""Connecting the SQL commit owner: URL handling and the SQLite locking setup.

Two concerns kept out of the owner's logic:

* The URL given by a user may carry a password; the one written into the table
  (the owner conf) must not. It also must not depend on which PostgreSQL driver
  this machine has, while the engine must use one that is installed (SQLAlchemy
  2.1 defaults ``postgresql://`` to psycopg 3, 1.4 to psycopg2).
* SQLite allows one writer at a time. A transaction that starts as a reader and
  later writes can fail at once with "database is locked" instead of waiting, so
  write transactions start with ``BEGIN IMMEDIATE`` (taking the write lock up
  front, waiting up to the busy timeout) and the database runs in WAL mode so that
  readers (sensors polling ``get_commits``) never block the writer.
"""
from __future__ import annotations

import importlib.util
import os
from contextlib import contextmanager
from typing import Any, Iterator

import sqlalchemy as sa
from sqlalchemy.engine import URL, Connection, Engine, make_url

from ..errors import InvalidArgumentError
from ..secret_names import secret_looking_keys

#: Execution option that selects the SQLite BEGIN mode of a transaction.
SQLITE_BEGIN = "delta_owner_sqlite_begin"
#: How long a SQLite writer waits for the lock before failing.
SQLITE_BUSY_TIMEOUT_S = 60.0


def parse_url(url: Any) -> URL:
    """Parse a SQLAlchemy URL, refusing what cannot hold shared owner state."""
    try:
        u = make_url(url)
    except Exception as e:
        raise InvalidArgumentError(f"not a SQLAlchemy database URL: {_redact(url)!r} ({e})") from None
    if u.get_backend_name() == "sqlite":
        db = u.database or ""
        if db in ("", ":memory:") or u.query.get("mode") == "memory":
            raise InvalidArgumentError(
                "an in-memory SQLite database lives in one connection and cannot hold commit-owner state "
                "shared by processes; use a SQLite file (sqlite:////abs/path/owner.db) or "
                "InMemoryCommitOwner")
        if not db.startswith("file:") and not os.path.isabs(db):
            u = u.set(database=os.path.abspath(os.path.expanduser(db)))
    return u


def public_url(u: URL) -> str:
    """The URL as written into the table's owner conf: no password, no secret-looking query keys."""
    secret = set(secret_looking_keys(dict(u.query)))
    query = {k: v for k, v in u.query.items() if k not in secret}
    # (URL.set ignores None, so rebuild the URL to drop the password)
    u = URL.create(u.drivername, username=u.username, password=None, host=u.host, port=u.port,
                   database=u.database, query=query)
    return u.render_as_string(hide_password=False)


def engine_url(u: URL) -> URL:
    """``u`` with a PostgreSQL driver that is actually installed when none is named."""
    if u.drivername == "postgresql":
        for module, driver in (("psycopg2", "postgresql+psycopg2"), ("psycopg", "postgresql+psycopg")):
            if importlib.util.find_spec(module) is not None:
                return u.set(drivername=driver)
    return u


def create_owner_engine(u: URL, engine_kwargs: dict[str, Any] | None = None) -> Engine:
    """An engine for the owner's database, with SQLite set up for concurrent processes."""
    kwargs = dict(engine_kwargs or {})
    u = engine_url(u)
    if u.get_backend_name() == "sqlite":
        connect_args = dict(kwargs.get("connect_args") or {})    # the caller's dict stays as given
        timeout = sqlite_busy_timeout(connect_args.get("timeout", u.query.get("timeout", SQLITE_BUSY_TIMEOUT_S)))
        path = u.database or ""
        if path and not path.startswith("file:"):                # (after the checks: bad input creates nothing)
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        kwargs["connect_args"] = {**connect_args, "timeout": timeout}
        engine = sa.create_engine(u, **kwargs)
        _setup_sqlite(engine, timeout)
        return engine
    kwargs.setdefault("pool_pre_ping", True)
    return sa.create_engine(u, **kwargs)


#: SQLite's busy timeout is a C int of milliseconds: from 2**31 ms it reads as negative, no wait at all.
_SQLITE_MAX_BUSY_MS = 2**31 - 1


def sqlite_busy_timeout(value: Any) -> float:
    """How long (seconds) a SQLite writer waits for the lock: ``connect_args["timeout"]``, else the URL's
    ``?timeout=`` (SQLAlchemy's spelling), else :data:`SQLITE_BUSY_TIMEOUT_S`; a finite number >= 0."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = float("nan")
    if isinstance(value, bool) or not 0 <= seconds < float("inf"):
        raise InvalidArgumentError(f"the SQLite busy timeout (engine_kwargs connect_args 'timeout', or the URL's "
                                   f"?timeout=) must be a number of seconds >= 0, got {value!r}")
    return seconds


def _setup_sqlite(engine: Engine, busy_timeout_s: float) -> None:
    """WAL mode, explicit BEGINs, and the busy timeout the caller chose (:func:`sqlite_busy_timeout`)."""
    busy_ms = min(int(busy_timeout_s * 1000), _SQLITE_MAX_BUSY_MS)

    @sa.event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn, _record):  # pragma: no cover - exercised through every SQLite test
        # Let SQLAlchemy's BEGIN (below) start transactions instead of the driver's implicit ones.
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        try:
            cur.execute(f"PRAGMA busy_timeout = {busy_ms}")
            try:
                cur.execute("PRAGMA journal_mode = WAL")
            except Exception:  # e.g. a file system without shared memory: stay in rollback mode
                pass
        finally:
            cur.close()

    @sa.event.listens_for(engine, "begin")
    def _on_begin(conn):  # pragma: no cover - exercised through every SQLite test
        mode = conn.get_execution_options().get(SQLITE_BEGIN, "DEFERRED")
        conn.exec_driver_sql(f"BEGIN {mode}")


def _redact(url: Any) -> str:
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:
        return "<unparseable URL>"


#: what SQLAlchemy raises when the database does not answer or drops the connection
UNREACHABLE = (sa.exc.OperationalError, sa.exc.InterfaceError)


class SqlDatabase:
    """One shared-state database (the SQL commit owner's, the SQL catalog's): its engine and
    the transaction discipline both rely on.

    Write transactions take SQLite's write lock up front (``BEGIN IMMEDIATE``); read
    transactions on PostgreSQL run at REPEATABLE READ, so every SELECT of one read sees
    the same committed state. A connection that cannot be opened, or a read or an
    idempotent write that loses its connection, is reported as ``unavailable(error)``:
    the caller knows nothing changed.
    """

    def __init__(self, url: Any, engine_kwargs: dict[str, Any] | None, label: str,
                 unavailable: Any):
        self.url = parse_url(url)
        self.engine_kwargs = dict(engine_kwargs or {})
        self.engine = create_owner_engine(self.url, self.engine_kwargs)
        self.backend = self.engine.dialect.name
        #: e.g. "the commit owner database"; names the database in errors
        self.label = label
        #: the DeltaError subclass raised for an unreachable database
        self._error_type = unavailable

    def unavailable(self, error: Exception) -> Exception:
        """The typed error for a database that does not answer; the password never appears in it."""
        detail = str(getattr(error, "orig", None) or error).strip().splitlines()[0][:300]
        if self.url.password:
            detail = detail.replace(str(self.url.password), "***")
        return self._error_type(
            f"{self.label} {public_url(self.url)} cannot be reached "
            f"({type(getattr(error, 'orig', None) or error).__name__}: {detail}); nothing was "
            "committed, retry when it is back")

    @contextmanager
    def connect(self) -> Iterator[Connection]:
        """A connection, or the unavailable error if none can be opened (then no statement ran)."""
        try:
            conn = self.engine.connect()
        except UNREACHABLE as e:
            raise self.unavailable(e) from None
        with conn:
            yield conn

    @contextmanager
    def retry_safe(self) -> Iterator[None]:
        """A step that is safe to run again (a read, an idempotent or compare-and-swap write): a lost
        connection in it is "unavailable", never an unknown outcome."""
        try:
            yield
        except UNREACHABLE as e:
            raise self.unavailable(e) from None

    @contextmanager
    def tx(self, write: bool) -> Iterator[Connection]:
        """One database transaction: committed on a clean exit, rolled back otherwise."""
        with self.connect() as conn:
            if write and self.backend == "sqlite":
                conn = conn.execution_options(**{SQLITE_BEGIN: "IMMEDIATE"})
            elif not write and self.backend == "postgresql":
                conn = conn.execution_options(isolation_level="REPEATABLE READ")
            with conn.begin():
                yield conn

    def dispose(self) -> None:
        self.engine.dispose()
