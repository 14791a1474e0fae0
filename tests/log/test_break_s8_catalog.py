"""Adversarial tests of the s8-catalog fixes (#25): SqlCatalog.register, CatalogRequiredError, the
shared SQL schema helper (review branch s8-break-catalog).

Each xfail(strict) test is a finding: it fails on the reviewed code until the bug is fixed; the
plain tests pin what held. Real files, real SQLite files and the catalog tests' own PostgreSQL
database (tests/log/conftest.py), real processes for the code of an older commit.
"""
from __future__ import annotations

import io
import os
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import pyarrow as pa
import pytest
import sqlalchemy as sa

from airflow_provider_delta.log import (CatalogRequiredError, CommitFailedError, DeltaTable, InvalidTableStateError, SqlCatalog)
from airflow_provider_delta.log.base.commit_owner import InMemoryCommitOwner, SqlCommitOwner
from airflow_provider_delta.log.base.commit_owner.sql_engine import engine_url

SCHEMA = pa.schema([("g", pa.string()), ("n", pa.int64())])
REPO = Path(__file__).resolve().parents[2]
#: the last main commit before the shared SQL schema helper (commit_owner/sql_tables.py)
BEFORE_SHARED_SCHEMA = "908ce95"


def rows(g: str) -> pa.Table:
    return pa.table({"g": [g], "n": [1]}, schema=SCHEMA)


def groups_in(table: DeltaTable) -> list[str]:
    return sorted(table.snapshot().to_pyarrow(columns=["g"]).column("g").to_pylist())


# ------------------------------------------------------------------ register()
def test_register_refuses_a_table_another_catalog_holds(tmp_path):
    owner = SqlCatalog(f"sqlite:///{tmp_path}/a.db", publish_grace_ms=0)
    other = SqlCatalog(f"sqlite:///{tmp_path}/b.db", publish_grace_ms=0)
    uri = DeltaTable.create(str(tmp_path / "t"), SCHEMA, catalog=owner).uri
    try:
        other.register(uri)
    except InvalidTableStateError:
        assert not other.manages(uri)                             # the fix: refused, nothing changed
        assert owner.register(uri) == DeltaTable(uri, catalog=owner).snapshot().metadata.id   # its own: fine
        DeltaTable(uri, catalog=owner).write(rows("through-a"))
        with pytest.raises(InvalidTableStateError):
            other.register(uri, adopt=True)                       # adopt never takes another catalog's table
        assert not other.manages(uri)
        return
    DeltaTable(uri, catalog=owner).write(rows("through-a"))
    DeltaTable(uri, catalog=other).write(rows("through-b"))      # no error: b ratified its own version 1
    assert groups_in(DeltaTable(uri, catalog=owner)) == groups_in(DeltaTable(uri, catalog=other)), \
        "the table forked: each catalog serves a different version 1"


def test_register_of_a_table_recording_no_catalog_needs_adopt(tmp_path):
    """A catalog-managed version 0 without the catalog id (what code before the property wrote)
    is refused, nothing registered, unless the caller adopts it explicitly."""
    from airflow_provider_delta.log.base.catalog_store.identity import CATALOG_ID_PROPERTY
    import json
    creator = SqlCatalog(f"sqlite:///{tmp_path}/a.db", publish_grace_ms=0)
    uri = DeltaTable.create(str(tmp_path / "t"), SCHEMA, catalog=creator).uri
    v0 = tmp_path / "t" / "_delta_log" / f"{0:020d}.json"
    lines = [json.loads(line) for line in v0.read_text().splitlines()]
    for action in lines:
        if "metaData" in action:
            del action["metaData"]["configuration"][CATALOG_ID_PROPERTY]
    v0.write_text("\n".join(json.dumps(a) for a in lines) + "\n")
    fresh = SqlCatalog(f"sqlite:///{tmp_path}/b.db", publish_grace_ms=0)
    with pytest.raises(InvalidTableStateError, match="adopt=True"):
        fresh.register(uri)
    assert not fresh.manages(uri)
    fresh.register(uri, adopt=True)
    DeltaTable(uri, catalog=fresh).write(rows("adopted"))
    assert groups_in(DeltaTable(uri, catalog=fresh)) == ["adopted"]


def test_catalog_id_is_stable_per_database(tmp_path):
    a = SqlCatalog(f"sqlite:///{tmp_path}/a.db")
    assert a.catalog_id == SqlCatalog(f"sqlite:///{tmp_path}/a.db").catalog_id
    assert a.catalog_id != SqlCatalog(f"sqlite:///{tmp_path}/b.db").catalog_id


# ----------------------------------------------------------- CatalogRequiredError
def test_every_entry_without_the_catalog_refuses_and_changes_nothing(tmp_path):
    """What held: reads, maintenance, writes, restore and clone from a catalog-managed table opened
    without its catalog all raise CatalogRequiredError and leave the table's files as they were."""
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db", publish_grace_ms=0)
    uri = DeltaTable.create(str(tmp_path / "t"), SCHEMA, catalog=catalog).uri
    DeltaTable(uri, catalog=catalog).write(rows("a"))
    root = tmp_path / "t"

    def files() -> list[str]:
        return sorted(str(p.relative_to(root)) for p in root.rglob("*"))

    before = files()
    entries = {
        "latest_version": lambda t: t.latest_version(),
        "snapshot": lambda t: t.snapshot(),
        "history": lambda t: t.history(),
        "version_at": lambda t: t.version_at("2100-01-01", allow_after_latest=True),
        "commits_since": lambda t: t.commits_since(-1),
        "changes": lambda t: t.changes(0),
        "vacuum": lambda t: t.vacuum(0, dry_run=False, enforce_retention=False),
        "cleanup_metadata": lambda t: t.cleanup_metadata(),
        "checkpoint": lambda t: t.checkpoint(),
        "optimize": lambda t: t.optimize(),
        "restore": lambda t: t.restore(0),
        "clone": lambda t: t.clone(str(tmp_path / "clone")),
        "write": lambda t: t.write(rows("x")),
        "enable_in_commit_timestamps": lambda t: t.enable_in_commit_timestamps(),
    }
    for name, call in entries.items():
        with pytest.raises(CatalogRequiredError):
            call(DeltaTable(uri))
        assert files() == before, name
    assert not (tmp_path / "clone").exists()


@pytest.mark.parametrize("owner_kind", ["memory", "sql"])
def test_latest_version_through_a_foreign_commit_owner_refuses(tmp_path, owner_kind):
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db", publish_grace_ms=0)
    uri = DeltaTable.create(str(tmp_path / "t"), SCHEMA, catalog=catalog).uri
    DeltaTable(uri, catalog=catalog).write(rows("a"))
    owner = InMemoryCommitOwner() if owner_kind == "memory" else SqlCommitOwner(f"sqlite:///{tmp_path}/o.db")
    table = DeltaTable(uri, commit_owner=owner)
    with pytest.raises(CatalogRequiredError):
        table.snapshot()
    with pytest.raises(CatalogRequiredError):
        table.latest_version()


# ------------------------------------------------- databases created by older code
OLD_SIDE = textwrap.dedent("""
    import sys
    import pyarrow as pa
    from airflow_provider_delta.log import DeltaTable, SqlCatalog
    from airflow_provider_delta.log.base.commit_owner import SqlCommitOwner
    url, root = sys.argv[1], sys.argv[2]
    S = pa.schema([("g", pa.string()), ("n", pa.int64())])
    cat = SqlCatalog(url, publish_grace_ms=0)
    for n in ("a", "b"):
        DeltaTable.create(f"{root}/{n}", S, catalog=cat)
    DeltaTable(f"{root}/a", catalog=cat).write(pa.table({"g": ["old"], "n": [1]}, schema=S))
    tx = cat.begin().record()
    g = cat.group(tx.id)
    g.write(f"{root}/a", pa.table({"g": ["group"], "n": [1]}, schema=S))
    g.stage()
    owner = SqlCommitOwner(url)
    DeltaTable.create(f"{root}/m", S, commit_owner=owner)
    DeltaTable(f"{root}/m", commit_owner=owner).write(pa.table({"g": ["m"], "n": [1]}, schema=S))
    print(tx.id)
""")


def old_code(tmp_path: Path) -> Path:
    """The package as of :data:`BEFORE_SHARED_SCHEMA`, unpacked from git into ``tmp_path``."""
    out = tmp_path / "old_code"
    archive = subprocess.run(["git", "-C", str(REPO), "archive", BEFORE_SHARED_SCHEMA, "airflow_provider_delta"],
                             check=True, capture_output=True).stdout
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(out, filter="data")
    return out


@pytest.fixture(params=["sqlite", "postgres"])
def fresh_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/old.db"
    base = sa.engine.make_url(request.getfixturevalue("postgres_url"))
    name = "s8_break_catalog_old_schema"
    eng = sa.create_engine(engine_url(base), isolation_level="AUTOCOMMIT")
    with eng.connect() as c:
        c.execute(sa.text(f"drop database if exists {name}"))
        c.execute(sa.text(f"create database {name}"))
    eng.dispose()
    return base.set(database=name).render_as_string(hide_password=False)


def test_databases_created_by_the_previous_code_still_open(tmp_path, fresh_url):
    """What held: a catalog and owner database created by main@908ce95 (an open group staged by an
    anonymous writer included) is used by the new code: the group publishes, tables commit."""
    env = {**os.environ, "PYTHONPATH": str(old_code(tmp_path))}
    tx_id = subprocess.run([sys.executable, "-c", OLD_SIDE, fresh_url, str(tmp_path)], env=env, check=True,
                           capture_output=True, text=True).stdout.strip().splitlines()[-1]
    cat = SqlCatalog(fresh_url, publish_grace_ms=0)
    a, b, m = (str(tmp_path / n) for n in ("a", "b", "m"))
    g = cat.group(tx_id)
    g.write(b, rows("b"), writer="dag.b")
    g.stage()
    assert sorted(cat.group(tx_id).publish().values()) == [1, 2]
    DeltaTable(a, catalog=cat).write(rows("new"))
    assert groups_in(DeltaTable(a, catalog=cat)) == ["group", "new", "old"]
    owner = SqlCommitOwner(fresh_url)
    DeltaTable(m, commit_owner=owner).write(rows("m2"))
    assert groups_in(DeltaTable(m, commit_owner=owner)) == ["m", "m2"]
    owner.dispose()
    cat.dispose()


def test_a_creator_whose_table_another_client_registered_first_is_not_told_it_failed(tmp_path):
    """A creator publishes version 0, then registers it; ``register(uri)`` by another client (what
    it is for: finishing a creation that looks cut short) can win in between. Seen on PostgreSQL:
    2 of 40 creations racing a client that retried register() got CommitFailedError ("already
    registered") although their table was created and registered as they asked (a retried create
    then gets TableAlreadyExistsError). The creator's registration step, run when the same table
    (same id, same URI) is already registered, must be a success, as register() itself is."""
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db", publish_grace_ms=0)
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, catalog=catalog)
    table_id = table.snapshot().metadata.id
    assert catalog.register(table.uri) == table_id                 # register() is idempotent
    catalog.source(table.uri).register(table_id)                   # the creator's own step: must be too
    other = DeltaTable.create(str(tmp_path / "u"), SCHEMA, catalog=catalog)
    with pytest.raises(CommitFailedError) as refused:                      # another table's id: still refused
        catalog.source(str(tmp_path / "elsewhere")).register(other.snapshot().metadata.id)
    assert "already registered" in str(refused.value)


def test_a_fresh_latest_version_refuses_a_catalog_table_whose_protocol_is_only_in_a_checkpoint(tmp_path):
    """The cheap check (the checkpoint's protocol column alone) still sees catalogManaged; a plain
    table with a checkpoint answers."""
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db", publish_grace_ms=0)
    uri = DeltaTable.create(str(tmp_path / "t"), SCHEMA, catalog=catalog).uri
    for g in ("a", "b"):
        DeltaTable(uri, catalog=catalog).write(rows(g))
    DeltaTable(uri, catalog=catalog).checkpoint()
    DeltaTable(uri, catalog=catalog).write(rows("c"))              # a commit without protocol after it
    with pytest.raises(CatalogRequiredError):
        DeltaTable(uri).latest_version()
    with pytest.raises(CatalogRequiredError):
        DeltaTable(uri).commits_since(-1)
    plain = DeltaTable.create(str(tmp_path / "p"), SCHEMA)
    plain.write(rows("a"))
    plain.checkpoint()
    plain.write(rows("b"))
    assert DeltaTable(plain.uri).latest_version() == 2
