"""Shared fixtures: the external corpus, table copies, and the PostgreSQL server."""
from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
CORPUS = (ROOT.parent / "shared" / "corpus").resolve()
POSTGRES_URL = os.environ.get("DELTA_TEST_POSTGRES_URL", "postgresql://postgres@127.0.0.1:5432/test")


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not CORPUS.is_dir():
        pytest.fail(f"the shared corpus is missing at {CORPUS}: check out ../shared beside the project")
    return CORPUS


@pytest.fixture
def copy_table(tmp_path, corpus):
    """Copy a corpus table (e.g. 'delta-golden/checkpoint') into tmp_path and return its path.

    The corpus is read-only and copytree keeps file modes, so the copy is made writable:
    tests that copy a table do so to change it.
    """
    def _copy(rel: str) -> Path:
        dst = tmp_path / rel.replace("/", "__")
        shutil.copytree(corpus / rel, dst)
        for d, dirs, files in os.walk(dst):
            for n in dirs + files:
                os.chmod(os.path.join(d, n), 0o755 if n in dirs else 0o644)
        os.chmod(dst, 0o755)
        return dst
    return _copy


def _postgres_reachable(url: str) -> str | None:
    try:
        import sqlalchemy as sa
        from airflow_provider_delta.log.commit_owner.sql_engine import engine_url
        eng = sa.create_engine(engine_url(sa.engine.make_url(url)))
        with eng.connect() as c:
            c.execute(sa.text("select 1"))
        eng.dispose()
        return None
    except Exception as e:  # any failure to connect means: skip with the reason
        return f"{type(e).__name__}: {e}".splitlines()[0]


@pytest.fixture(scope="session")
def postgres_url() -> str:
    reason = _postgres_reachable(POSTGRES_URL)
    if reason:
        print(f"\nSKIP PostgreSQL tests: no server answers at {POSTGRES_URL} ({reason})")
        pytest.skip(f"PostgreSQL not reachable at {POSTGRES_URL}: {reason}")
    return POSTGRES_URL
