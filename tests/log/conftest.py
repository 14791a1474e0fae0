"""Fixtures shared by the log-layer tests."""
from __future__ import annotations

import pytest

from airflow_provider_delta.log.base.commit_owner import CommitOwner, InMemoryCommitOwner, SqlCommitOwner


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def backend(request):
    return request.param


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


