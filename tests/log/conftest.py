"""Fixtures shared by the log-layer tests."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

from airflow_provider_delta.log import SqlCatalog
from airflow_provider_delta.log.base.commit_owner import CommitOwner, InMemoryCommitOwner, SqlCommitOwner
from airflow_provider_delta.log.base.commit_owner.sql_engine import engine_url

#: the PostgreSQL database of the SQL catalog tests (other engineers use ``test``)
CATALOG_TEST_DATABASE = "delta_catalog_tests"


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request):
    return request.param


@pytest.fixture(scope="session")
def own_pg_url(postgres_url):
    """A database of the catalog tests' own on the shared PostgreSQL server, created once."""
    base = sa.engine.make_url(postgres_url)
    eng = sa.create_engine(engine_url(base), isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        if not c.execute(sa.text("select 1 from pg_database where datname = :n"), {"n": CATALOG_TEST_DATABASE}).first():
            c.execute(sa.text(f"create database {CATALOG_TEST_DATABASE}"))
    eng.dispose()
    return base.set(database=CATALOG_TEST_DATABASE).render_as_string(hide_password=False)


@pytest.fixture(params=["sqlite", "postgres"])
def url(request, tmp_path):
    """The SQL catalog's database of a test: a SQLite file of its own, or the catalog tests' PostgreSQL database."""
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/catalog.db"
    return request.getfixturevalue("own_pg_url")


@pytest.fixture
def catalog(url):
    """A SqlCatalog on :func:`url` whose readers publish overdue commits at once (no grace period)."""
    c = SqlCatalog(url, publish_grace_ms=0)
    yield c
    c.dispose()


@pytest.fixture
def make_owner(backend, request, tmp_path):
    """Factory of owners on the test's backend; SQL owners made twice share one database."""
    made: list[CommitOwner] = []

    def make(batch: int = 1) -> CommitOwner:
        if backend == "memory":
            owner: CommitOwner = InMemoryCommitOwner(backfill_batch_size=batch)
        elif backend == "sqlite":
            owner = SqlCommitOwner(f"sqlite:///{tmp_path}/owner.db", backfill_batch_size=batch)
        else:
            owner = SqlCommitOwner(request.getfixturevalue("postgres_url"), backfill_batch_size=batch)
        made.append(owner)
        return owner

    yield make
    for o in made:
        if isinstance(o, SqlCommitOwner):
            o.dispose()


