"""Adversarial tests of the SQL catalog and multi-table transactions (review branch break-catalog).

Each test is a finding: it fails on the reviewed code (xfail strict) until the bug is fixed.
Real files, a real SQLite file or the PostgreSQL server (the catalog tests' own database, tests/log/conftest.py).
"""
from __future__ import annotations

import os
import threading
import time

import pyarrow as pa
import pytest
import sqlalchemy as sa

from airflow_provider_delta.log import DeltaTable, GroupCommitError, SqlCatalog
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.commit_owner.sql_engine import engine_url
from airflow_provider_delta.log.base.names import STAGED_COMMITS_DIR

SCHEMA = pa.schema([("g", pa.string()), ("n", pa.int64())])


def rows(g: str, n: int = 1) -> pa.Table:
    return pa.table({"g": [g] * n, "n": list(range(n))}, schema=SCHEMA)


def make(catalog, tmp_path, *names):
    return [DeltaTable.create(str(tmp_path / n), SCHEMA, catalog=catalog) for n in names]


def groups_in(table: DeltaTable) -> list[str]:
    return sorted(table.snapshot().to_pyarrow(columns=["g"]).column("g").to_pylist())


def staged_names(table: DeltaTable) -> list[str]:
    return sorted(e.name for e in table.storage.list_dir(STAGED_COMMITS_DIR))


# ----------------------------------------------------------- cleanup vs ratification (PostgreSQL)
def _lock_waiters(eng) -> int:
    with eng.connect() as mon:      # pg_stat_activity is cached per transaction: a fresh one each time
        return mon.execute(sa.text("select count(*) from pg_stat_activity where wait_event_type = 'Lock' "
                                   "and datname = current_database()")).scalar()


def test_cleanup_deletes_a_staged_commit_that_is_being_ratified(own_pg_url, tmp_path):
    cat = SqlCatalog(own_pg_url, publish_grace_ms=0)
    (t,) = make(cat, tmp_path, "a")
    eng = sa.create_engine(engine_url(sa.engine.make_url(own_pg_url)))
    staged_dir = tmp_path / "a" / "_delta_log" / "_staged_commits"
    # a real slow ratification: another session holds the catalog's table row lock for a while
    locker = eng.connect()
    ltx = locker.begin()
    locker.execute(sa.text("LOCK TABLE delta_catalog_tables IN EXCLUSIVE MODE"))
    outcome: dict[str, object] = {}

    def writer():
        try:
            DeltaTable(t.uri, catalog=SqlCatalog(own_pg_url, publish_grace_ms=0)).write(rows("w"))
            outcome["writer"] = "ok"
        except Exception as e:  # noqa: BLE001 - a typed refusal is a fine outcome
            outcome["writer"] = e

    def cleaner():
        try:
            outcome["cleanup"] = DeltaTable(t.uri, catalog=SqlCatalog(own_pg_url)).cleanup_metadata(orphan_age_ms=0)
        except Exception as e:  # noqa: BLE001
            outcome["cleanup"] = e

    w = threading.Thread(target=writer)
    w.start()
    deadline = time.monotonic() + 60
    while not (staged_dir.is_dir() and os.listdir(staged_dir) and _lock_waiters(eng) >= 1):
        assert time.monotonic() < deadline, "the writer never reached ratification"
        time.sleep(0.05)
    c = threading.Thread(target=cleaner)
    c.start()
    while c.is_alive() and _lock_waiters(eng) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)                      # cleanup finished, or it waits for the same lock (fixed)
    ltx.rollback()
    locker.close()
    w.join(120), c.join(120)
    eng.dispose()
    latest = cat.latest_versions([t.uri])[t.uri]
    snap = DeltaTable(t.uri, catalog=SqlCatalog(own_pg_url)).snapshot()       # must be readable
    assert snap.version == latest
    if outcome["writer"] == "ok":
        assert groups_in(DeltaTable(t.uri, catalog=cat)) == ["w"]
    cat.dispose()


# ------------------------------------------------------------- vacuum vs a stale staged group
def test_vacuum_deletes_data_of_a_staged_group_whose_version_was_taken(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    tx = catalog.begin()
    tx.write(a.uri, rows("g1"))
    tx.write(b.uri, rows("g1"))
    tx.stage()                                                # proposes a@1, b@1
    DeltaTable(a.uri, catalog=catalog).write(rows("single"))  # a@1 is taken: the group is re-staged on publish
    res = DeltaTable(a.uri, catalog=catalog).vacuum(retention_hours=0, dry_run=False, enforce_retention=False,
                                                    now_ms=10 ** 13)
    assert res["num_files_deleted"] == 0, res                 # nothing is unreferenced in `a`
    assert tx.publish() == {a.uri: 2, b.uri: 1}
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == ["g1", "single"]


# ------------------------------------------------ a group ratified whose answer was lost
def _ratified_behind_the_clients_back(catalog, tx):
    """The group's one database transaction committed, but the client never heard it (a connection
    dropped at COMMIT, a task timeout signal): done here by running that same ratification."""
    catalog.store.ratify_group(tx.id, tx.members)


def _staged_unrecorded_group(catalog, a, b):
    tx = catalog.transaction()          # the `with` form: the group is recorded by its ratification only
    tx.write(a.uri, rows("g1"))
    tx.write(b.uri, rows("g1"))
    tx._stage_files()                   # what publish() does first for a group never staged
    return tx


def test_publish_again_after_a_lost_ratification_answer_destroys_the_ratified_commits(url, tmp_path):
    catalog = SqlCatalog(url)           # the default publish grace: readers do not publish at once
    a, b = make(catalog, tmp_path, "a", "b")
    tx = _staged_unrecorded_group(catalog, a, b)
    _ratified_behind_the_clients_back(catalog, tx)
    # the retry must find the group ratified and publish it (it re-stages 50 times, deletes the ratified
    # staged files and says "nothing was ratified")
    assert tx.publish() == {a.uri: 1, b.uri: 1}
    for t in (a, b):
        assert groups_in(DeltaTable(t.uri, catalog=catalog)) == ["g1"]


def test_abort_after_a_lost_ratification_answer_deletes_ratified_commits(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    tx = _staged_unrecorded_group(catalog, a, b)
    _ratified_behind_the_clients_back(catalog, tx)
    with pytest.raises(GroupCommitError):
        tx.abort()                      # the catalog says ratified: a ratified group cannot be aborted
    for t in (a, b):
        assert groups_in(DeltaTable(t.uri, catalog=catalog)) == ["g1"]


# ------------------------------------------------ abort deletes files the table still uses
def test_abort_deletes_a_live_data_file_that_the_staged_commit_re_adds(catalog, tmp_path):
    (a,) = make(catalog, tmp_path, "a")
    a.write(rows("kept", 3))
    live = a.snapshot().files().to_pylist()[0]
    readd = AddFile(path=live["path"], size=live["size"], partition_values={}, modification_time=1,
                    data_change=False, stats=live.get("stats"), tags={"audited": "yes"})
    tx = catalog.begin()
    with tx.table(a.uri).transaction(operation="SET TAGS") as t:
        t.add_files([readd])                                  # replaces the live entry (same path)
    tx.stage()
    tx.abort()                                                # the group is given up: nothing of it happened
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == ["kept"] * 3


# ------------------------------------------------------- SQLite: a locked catalog database
def test_group_publish_on_a_locked_sqlite_catalog_raises_an_untyped_error(tmp_path):
    import sqlite3
    from airflow_provider_delta.log import DeltaError

    import time
    db = tmp_path / "catalog.db"
    # the busy timeout the user gives (SQLAlchemy's connect_args) is the one waited out (was always 60 s)
    catalog = SqlCatalog(f"sqlite:///{db}", publish_grace_ms=0, engine_kwargs={"connect_args": {"timeout": 2}})
    a, b = make(catalog, tmp_path, "a", "b")
    tx = catalog.begin()
    tx.write(a.uri, rows("g1"))
    tx.write(b.uri, rows("g1"))
    tx.stage()
    other = sqlite3.connect(db, isolation_level=None)       # another process's long write transaction
    other.execute("BEGIN EXCLUSIVE")
    try:
        started = time.monotonic()
        with pytest.raises(DeltaError, match="unknown"):     # waits out the busy timeout first
            tx.publish()
        assert 2 <= time.monotonic() - started < 50
    finally:
        other.execute("ROLLBACK")
        other.close()
    assert catalog.latest_versions([a.uri, b.uri]) == {a.uri: 0, b.uri: 0}
    assert tx.publish() == {a.uri: 1, b.uri: 1}             # and it can be retried once the lock is gone


# ------------------------------------------- cleanup of "rejected" files of a live group
def test_cleanup_deletes_the_staged_commit_of_a_live_group_that_lost_its_version(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    tx = catalog.begin()
    tx.write(a.uri, rows("g1"))
    tx.write(b.uri, rows("g1"))
    tx.stage()                                                 # a@1, b@1; the audit runs now
    DeltaTable(a.uri, catalog=catalog).write(rows("single"))   # takes a@1
    res = DeltaTable(a.uri, catalog=catalog).cleanup_metadata()   # defaults: a one-hour orphan age
    assert res["abandoned_staged"] == [], res["abandoned_staged"]
    assert DeltaTable(a.uri, catalog=catalog).snapshot(transaction=tx.id).to_pyarrow().num_rows == 1
    assert tx.publish() == {a.uri: 2, b.uri: 1}
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == ["g1", "single"]


def test_publish_of_a_group_whose_staged_commit_cleanup_removed_is_a_typed_error(catalog, tmp_path):
    """Cleanup with a tiny orphan age removes an in-flight group's stale staged file; publish then
    re-stages from it: a GroupCommitError (it was a raw FileNotFoundError), nothing ratified."""
    a, b = make(catalog, tmp_path, "a", "b")
    tx = _staged_unrecorded_group(catalog, a, b)
    DeltaTable(a.uri, catalog=catalog).write(rows("single"))           # takes a@1: publish re-stages
    DeltaTable(a.uri, catalog=catalog).cleanup_metadata(orphan_age_ms=0)
    with pytest.raises(GroupCommitError, match="gone") as e:
        tx.publish()
    assert e.value.retryable
    assert catalog.latest_versions([a.uri, b.uri]) == {a.uri: 1, b.uri: 0}
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == ["single"]


def test_latest_version_without_the_catalog_is_refused_with_a_typed_error(tmp_path):
    """A filesystem-only client asking a catalog-managed table its latest version is refused, as
    snapshot() is: PROTOCOL.md (catalog-managed tables) says "Filesystem-based access to
    catalog-managed tables is not supported" and "Readers must contact the catalog for information
    about unpublished ratified commits". The published files lag the catalog (here: version 2 is
    ratified, only 1 is published), so answering from them would be a stale version a sensor polls
    forever. Through the catalog the answer is 2; a table that is not catalog-managed still answers."""
    from airflow_provider_delta.log import CatalogRequiredError, UnsupportedFeatureError
    from airflow_provider_delta.log.base.catalog_store.table_source import write_staged
    from airflow_provider_delta.log.base.names import commit_path

    catalog = SqlCatalog(f"sqlite:///{tmp_path}/catalog.db")        # default grace: no reader publishes
    (t,) = make(catalog, tmp_path, "a")
    t.write(rows("v1"))
    staged = write_staged(t.storage, 2, t.storage.read_bytes(commit_path(1)), 0)
    assert catalog.store.ratify(t.snapshot().metadata.id, staged)      # ratified, its writer died before publishing
    assert catalog.latest_versions([t.uri]) == {t.uri: 2}
    for ask in (lambda: DeltaTable(t.uri).latest_version(), lambda: DeltaTable(t.uri).snapshot(),
                lambda: DeltaTable(t.uri).commits_since(0)):                 # what a sensor polls
        with pytest.raises(CatalogRequiredError, match="catalog-managed .*catalog=SqlCatalog") as e:
            ask()
        assert isinstance(e.value, UnsupportedFeatureError) and e.value.feature == "catalogManaged"
    assert DeltaTable(t.uri, catalog=catalog).latest_version() == 2
    plain = DeltaTable.create(str(tmp_path / "plain"), SCHEMA)
    plain.write(rows("p"))
    assert DeltaTable(plain.uri).latest_version() == 1
    assert [c.version for c in DeltaTable(plain.uri).commits_since(0).commits] == [1]


def test_a_table_made_catalog_managed_later_is_refused_from_that_version_on(tmp_path):
    """A filesystem reader that found a table listable keeps polling cheaply (new commits without a
    protocol action keep the answer), but a commit that changes the protocol is looked at: here a
    later version whose protocol holds catalogManaged (as if the table had been handed to a catalog)."""
    import json as json_
    from airflow_provider_delta.log import CatalogRequiredError
    from airflow_provider_delta.log.base.names import commit_path
    plain = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    reader = DeltaTable(plain.uri)
    assert reader.latest_version() == 0
    plain.write(rows("a"))
    assert reader.latest_version() == 1 and [c.version for c in reader.commits_since(0).commits] == [1]
    managed = {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["catalogManaged"],
                            "writerFeatures": ["catalogManaged", "inCommitTimestamp"]}}
    plain.storage.put_if_absent(commit_path(2), (json_.dumps(managed) + "\n").encode())
    with pytest.raises(CatalogRequiredError):
        reader.latest_version()
    with pytest.raises(CatalogRequiredError):
        reader.commits_since(1)
