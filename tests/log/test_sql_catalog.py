"""SqlCatalog: catalog-managed tables and multi-table transactions, on SQLite and PostgreSQL.

Real files, a real database (a SQLite file, the PostgreSQL server), no mocks. Each rule
of PROTOCOL.md's catalog-managed section that docs/writer-rules-catalog.md lists is
shown here by name (``test_<rule>``), with the failure path next to the happy one.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil

import pyarrow as pa
import pytest
import sqlalchemy as sa

from airflow_provider_delta.log import (
    ConcurrentModificationError, DeltaTable, GroupCommitError, InvalidArgumentError, InvalidTableStateError,
    SqlCatalog, UnsupportedFeatureError,
)
from airflow_provider_delta.log.base.catalog_store.schema import tables as catalog_tables
from airflow_provider_delta.log.base.catalog_store.store import StaleMembers
from airflow_provider_delta.log.base.catalog_store.table_source import write_staged
from airflow_provider_delta.log.base.names import STAGED_COMMITS_DIR, commit_path

SCHEMA = pa.schema([("g", pa.string()), ("n", pa.int64())])


def rows(g: str, n: int = 1) -> pa.Table:
    return pa.table({"g": [g] * n, "n": list(range(n))}, schema=SCHEMA)


def make(catalog, tmp_path, *names):
    return [DeltaTable.create(str(tmp_path / n), SCHEMA, catalog=catalog) for n in names]


def staged_group(catalog, *tables, key: str = "g1"):
    """A group that wrote one row ``key`` into each table and is staged (nothing visible)."""
    tx = catalog.begin()
    for t in tables:
        tx.write(t.uri, rows(key))
    return tx.stage()


def groups_in(table: DeltaTable) -> list[str]:
    return sorted(set(table.snapshot().to_pyarrow(columns=["g"]).column("g").to_pylist()))


def staged_names(table: DeltaTable) -> list[str]:
    return sorted(e.name for e in table.storage.list_dir(STAGED_COMMITS_DIR))


def commit_actions(table: DeltaTable, version: int) -> list[dict]:
    return [json.loads(line) for line in table.storage.read_bytes(commit_path(version)).splitlines() if line]


# ------------------------------------------------------------------ single tables
def test_enablement_reader_and_writer_feature_with_in_commit_timestamps(catalog, tmp_path):
    (t,) = make(catalog, tmp_path, "t")
    p = t.snapshot().protocol
    assert (p.min_reader_version, p.min_writer_version) == (3, 7)
    assert "catalogManaged" in p.reader_features and "catalogManaged" in p.writer_features
    assert {"inCommitTimestamp", "multiTableTransaction-dev"} <= set(p.writer_features)
    # Delta Spark requires vacuumProtocolCheck of catalogManaged (CatalogOwnedTableFeature.requiredFeatures)
    assert "vacuumProtocolCheck" in p.reader_features and "vacuumProtocolCheck" in p.writer_features
    assert t.snapshot().metadata.configuration["delta.enableInCommitTimestamps"] == "true"


def test_commit_is_staged_ratified_then_published(catalog, tmp_path):
    (t,) = make(catalog, tmp_path, "t")
    assert t.write(rows("a")) == 1
    (name,) = staged_names(t)
    assert name.startswith(f"{1:020d}.")
    assert t.storage.read_bytes(f"{STAGED_COMMITS_DIR}/{name}") == t.storage.read_bytes(commit_path(1))
    info = commit_actions(t, 1)[0]["commitInfo"]
    assert info["txnId"] and info["inCommitTimestamp"] == info["timestamp"]
    assert catalog.latest_versions([t.uri]) == {t.uri: 1}


def test_filesystem_readers_and_writers_are_refused(catalog, tmp_path):
    (t,) = make(catalog, tmp_path, "t")
    t.write(rows("a"))
    with pytest.raises(UnsupportedFeatureError, match="catalogManaged"):
        DeltaTable(t.uri).snapshot()
    with pytest.raises(UnsupportedFeatureError, match="catalogManaged"):
        DeltaTable(t.uri).write(rows("b"))
    assert DeltaTable(t.uri, catalog=catalog).latest_version() == 1   # nothing was written


def test_readers_ignore_published_files_after_the_catalogs_latest(catalog, tmp_path):
    (t,) = make(catalog, tmp_path, "t")
    t.write(rows("a"))
    # a file no catalog ratified (e.g. a filesystem-only writer ignoring the protocol)
    t.storage.put_if_absent(commit_path(2), t.storage.read_bytes(commit_path(1)))
    fresh = DeltaTable(t.uri, catalog=catalog)
    assert fresh.snapshot().version == 1 and fresh.latest_version() == 1


def ratify_without_publishing(catalog, table: DeltaTable, data: bytes, version: int):
    """What a writer killed between ratification and publishing leaves behind."""
    tid = table.snapshot().metadata.id
    staged = write_staged(table.storage, version, data, 0)
    assert catalog.store.ratify(tid, staged)
    return staged


def test_catalog_commit_wins_over_a_published_file_of_the_same_version(url, tmp_path):
    catalog = SqlCatalog(url, publish_grace_ms=3_600_000)   # readers must not publish here
    (t,) = make(catalog, tmp_path, "t")
    t.write(rows("a"))
    v1 = t.storage.read_bytes(commit_path(1))
    ratify_without_publishing(catalog, t, v1.replace(b'"numOutputRows":"1"', b'"numOutputRows":"7"'), 2)
    t.storage.put_if_absent(commit_path(2), v1)        # a different, unratified file at version 2
    snap = DeltaTable(t.uri, catalog=catalog).snapshot()
    assert snap.version == 2
    assert DeltaTable(t.uri, catalog=catalog).history(1)[0]["operationMetrics"]["numOutputRows"] == "7"
    catalog.dispose()


def test_any_client_finishes_an_interrupted_publish(catalog, tmp_path):
    (t,) = make(catalog, tmp_path, "t")
    t.write(rows("a"))
    ratify_without_publishing(catalog, t, t.storage.read_bytes(commit_path(1)), 2)
    assert not t.storage.exists(commit_path(2))
    assert DeltaTable(t.uri, catalog=catalog).snapshot().version == 2      # a reader (grace 0) ...
    assert t.storage.exists(commit_path(2))                                  # ... published it
    assert catalog.store.table(t.snapshot().metadata.id).published_version == 2


def test_publish_is_in_order_and_readers_within_the_grace_period_do_not_publish(url, tmp_path):
    catalog = SqlCatalog(url)      # default grace: a live writer publishes, readers do not race it
    (t,) = make(catalog, tmp_path, "t")
    t.write(rows("a"))
    ratify_without_publishing(catalog, t, t.storage.read_bytes(commit_path(1)), 2)
    ratify_without_publishing(catalog, t, t.storage.read_bytes(commit_path(1)), 3)
    assert DeltaTable(t.uri, catalog=catalog).snapshot().version == 3
    assert not t.storage.exists(commit_path(2))
    assert t.write(rows("b")) == 4                                           # the next writer publishes all
    assert all(t.storage.exists(commit_path(v)) for v in (2, 3, 4))
    catalog.dispose()


def test_checkpoints_only_of_published_versions(url, tmp_path):
    catalog = SqlCatalog(url, publish_grace_ms=3_600_000)
    (t,) = make(catalog, tmp_path, "t")
    t.write(rows("a"))
    ratify_without_publishing(catalog, t, t.storage.read_bytes(commit_path(1)), 2)
    reader = DeltaTable(t.uri, catalog=catalog)
    assert reader.snapshot().version == 2
    with pytest.raises(InvalidTableStateError, match="is missing"):
        reader.checkpoint()                         # the latest version is not published
    assert reader.checkpoint(version=1) == 1
    catalog.dispose()


def test_cleanup_and_vacuum_only_as_the_catalog_allows(url, tmp_path):
    strict = SqlCatalog(url, allow_maintenance=False)
    (t,) = make(strict, tmp_path, "t")
    t.write(rows("a"))
    with pytest.raises(UnsupportedFeatureError, match="has not allowed"):
        t.cleanup_metadata()
    with pytest.raises(UnsupportedFeatureError, match="has not allowed"):
        t.vacuum()
    assert t.checkpoint() == 1                      # checkpoints stay allowed
    permissive = SqlCatalog(url)
    assert DeltaTable(t.uri, catalog=permissive).vacuum()["dry_run"] is True
    strict.dispose(), permissive.dispose()


def test_concurrent_writers_get_contiguous_versions(catalog, tmp_path):
    (t,) = make(catalog, tmp_path, "t")
    other = DeltaTable(t.uri, catalog=catalog)
    t.snapshot(), other.snapshot()
    assert t.write(rows("a")) == 1
    assert other.write(rows("b")) == 2               # lost version 1, rebased (blind append)
    assert groups_in(t) == ["a", "b"]


def test_a_stale_catalog_is_refused_for_unregistered_tables(catalog, url, tmp_path):
    (t,) = make(catalog, tmp_path, "t")
    other_db = SqlCatalog(f"sqlite:///{tmp_path}/other.db")
    with pytest.raises(InvalidTableStateError, match="not registered"):
        DeltaTable(t.uri, catalog=other_db).snapshot()
    other_db.dispose()


def test_catalog_pickles_without_its_engine(catalog, tmp_path):
    (t,) = make(catalog, tmp_path, "t")
    copy = pickle.loads(pickle.dumps(catalog))
    assert DeltaTable(t.uri, catalog=copy).latest_version() == 0
    copy.dispose()


# ------------------------------------------------------------ multi-table transactions
def test_group_commits_all_participants_with_the_rfc_records(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    with catalog.transaction() as tx:
        tx.write(a.uri, rows("g1"))
        tx.write(b.uri, rows("g1", 2))
    assert tx.versions == {a.uri: 1, b.uri: 1}
    groups = []
    for t in (a, b):
        actions = commit_actions(t, 1)
        info = actions[0]["commitInfo"]
        assert info["tags"] == {"delta.multiTableTransaction.transactionId": tx.id}
        (group,) = [x["transactionGroup"] for x in actions if "transactionGroup" in x]
        groups.append(group)
    assert groups[0] == groups[1]
    assert groups[0]["transactionId"] == tx.id and groups[0]["coordinatingCatalog"] == catalog.name
    assert sorted(p["tableId"] for p in groups[0]["participants"]) == sorted(
        t.snapshot().metadata.id for t in (a, b))
    assert {p["proposedVersion"] for p in groups[0]["participants"]} == {1}
    snaps = catalog.snapshots([a.uri, b.uri])
    assert {u: s.version for u, s in snaps.items()} == {a.uri: 1, b.uri: 1}


def test_an_exception_in_the_block_aborts_and_leaves_nothing(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    data_files_before = {t.uri: set(os.listdir(t.storage.root)) for t in (a, b)}
    with pytest.raises(RuntimeError):
        with catalog.transaction() as tx:
            tx.write(a.uri, rows("g1"))
            tx.write(b.uri, rows("g1"))
            raise RuntimeError("audit failed")
    assert tx.state == "aborted"
    for t in (a, b):
        assert DeltaTable(t.uri, catalog=catalog).latest_version() == 0
        assert set(os.listdir(t.storage.root)) == data_files_before[t.uri]
        assert staged_names(t) == []


def test_staged_group_is_invisible_audited_reopened_and_published(catalog, url, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    tx = catalog.begin()
    tx.write(a.uri, rows("g1"))
    with tx.table(b.uri).transaction(operation="SET DOMAIN") as t:
        t.set_properties({"delta.feature.domainMetadata": "supported"})   # domain actions need it
        t.set_domain_metadata("audit", "pending")
    tx.stage()
    assert catalog.latest_versions([a.uri, b.uri]) == {a.uri: 0, b.uri: 0}
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == []
    audit = DeltaTable(a.uri, catalog=catalog).snapshot(transaction=tx.id)
    assert audit.version == 1 and audit.to_pyarrow().column("g").to_pylist() == ["g1"]
    other_process = SqlCatalog(url, publish_grace_ms=0)        # as another Airflow task would
    reopened = other_process.group(tx.id)
    assert reopened.state == "staged" and reopened.tables == sorted([a.uri, b.uri])
    assert reopened.publish() == {a.uri: 1, b.uri: 1}
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == ["g1"]
    with pytest.raises(GroupCommitError, match="ratified"):
        catalog.group(tx.id).abort()
    other_process.dispose()


def test_abort_of_a_staged_group_from_another_process(catalog, url, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    tx = staged_group(catalog, a, b)
    parquet_before = [n for n in os.listdir(a.storage.root) if n.endswith(".parquet")]
    assert parquet_before
    SqlCatalog(url).group(tx.id).abort()
    assert [n for n in os.listdir(a.storage.root) if n.endswith(".parquet")] == []
    assert staged_names(a) == [] and staged_names(b) == []
    with pytest.raises(GroupCommitError, match="aborted"):
        tx.publish()
    with pytest.raises(GroupCommitError, match="aborted"):
        DeltaTable(a.uri, catalog=catalog).snapshot(transaction=tx.id)
    assert catalog.latest_versions([a.uri, b.uri]) == {a.uri: 0, b.uri: 0}


def test_a_stale_proposed_version_fails_the_whole_group_in_the_catalog(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    tx = staged_group(catalog, a, b)
    DeltaTable(a.uri, catalog=catalog).write(rows("single"))          # takes a's version 1
    with pytest.raises(StaleMembers) as e:
        catalog.store.ratify_group(tx.id)
    assert e.value.stale == {a.snapshot().metadata.id: 1}
    assert catalog.latest_versions([a.uri, b.uri]) == {a.uri: 1, b.uri: 0}   # b not ratified either
    assert catalog.store.group(tx.id).state == "staged"


def test_single_commit_between_stage_and_ratify_is_rebased(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    tx = staged_group(catalog, a, b)
    DeltaTable(a.uri, catalog=catalog).write(rows("single"))
    assert tx.publish() == {a.uri: 2, b.uri: 1}
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == ["g1", "single"]
    (group,) = [x["transactionGroup"] for x in commit_actions(a, 2) if "transactionGroup" in x]
    assert {p["proposedVersion"] for p in group["participants"]} == {1, 2}
    assert commit_actions(a, 2)[0]["commitInfo"]["inCommitTimestamp"] > \
        commit_actions(a, 1)[0]["commitInfo"]["inCommitTimestamp"]
    assert len(staged_names(a)) == 2          # the single commit's and the group's; the replaced one went


def test_conflicting_commit_between_stage_and_ratify_fails_the_group(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    a.write(rows("old"))
    tx = catalog.begin()
    tx.write(a.uri, rows("new"), mode="overwrite")       # reads the whole table
    tx.write(b.uri, rows("g1"))
    tx.stage()
    DeltaTable(a.uri, catalog=catalog).write(rows("concurrent"), mode="overwrite")   # removes "old" too
    with pytest.raises(ConcurrentModificationError):
        tx.publish()
    assert tx.state == "aborted"
    assert catalog.latest_versions([a.uri, b.uri]) == {a.uri: 2, b.uri: 0}
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == ["concurrent"]
    assert staged_names(b) == []


def test_two_groups_sharing_a_table(catalog, tmp_path):
    a, b, c = make(catalog, tmp_path, "a", "b", "c")
    g1, g2 = catalog.begin(), catalog.begin()
    g1.write(a.uri, rows("g1")), g1.write(b.uri, rows("g1"))
    g2.write(b.uri, rows("g2")), g2.write(c.uri, rows("g2"))
    g1.stage(), g2.stage()
    assert g1.members[1].version == g2.members[0].version == 1        # both propose b@1
    assert g2.publish() == {b.uri: 1, c.uri: 1}
    assert g1.publish() == {a.uri: 1, b.uri: 2}
    assert groups_in(DeltaTable(b.uri, catalog=catalog)) == ["g1", "g2"]


def test_a_table_joins_a_group_once_and_groups_need_catalog_tables(catalog, tmp_path):
    (a,) = make(catalog, tmp_path, "a")
    tx = catalog.begin()
    tx.write(a.uri, rows("g1"))
    with pytest.raises(InvalidArgumentError, match="once"):
        tx.write(a.uri, rows("g1"))
    plain = DeltaTable.create(str(tmp_path / "plain"), SCHEMA)
    with pytest.raises(InvalidTableStateError, match="not registered"):
        tx.write(plain.uri, rows("g1"))
    with pytest.raises(InvalidArgumentError, match="create it first"):
        tx.write(str(tmp_path / "nothing"), rows("g1"))
    assert not os.path.exists(tmp_path / "nothing" / "_delta_log")
    tx.abort()


def test_snapshot_transaction_needs_the_catalog(catalog, tmp_path):
    (a,) = make(catalog, tmp_path, "a")
    with pytest.raises(InvalidArgumentError, match="catalog"):
        DeltaTable(a.uri).snapshot(transaction="x")
    with pytest.raises(GroupCommitError, match="no transaction"):
        DeltaTable(a.uri, catalog=catalog).snapshot(transaction="nope")


# ------------------------------------------------------------------ recovery
def test_cleanup_removes_orphans_of_never_ratified_groups(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    tx = staged_group(catalog, a, b)                                   # ...and the writer never comes back
    live = catalog.begin()
    live.write(a.uri, rows("live"))
    kept = DeltaTable(a.uri, catalog=catalog).cleanup_metadata(orphan_age_ms=3_600_000)
    assert kept["abandoned_staged"] == []        # too young to be called abandoned
    live.stage()
    dry = DeltaTable(b.uri, catalog=catalog).cleanup_metadata(orphan_age_ms=0, dry_run=True)
    assert len(dry["abandoned_staged"]) == 1 and len(staged_names(b)) == 1
    for t in (a, b):
        DeltaTable(t.uri, catalog=catalog).cleanup_metadata(orphan_age_ms=0)
        assert staged_names(t) == []
    assert catalog.store.group(tx.id).state == "aborted"
    with pytest.raises(GroupCommitError, match="aborted"):
        catalog.group(tx.id).publish()
    assert catalog.latest_versions([a.uri, b.uri]) == {a.uri: 0, b.uri: 0}


def test_cleanup_keeps_ratified_and_removes_rejected_staged_commits(catalog, tmp_path):
    (a,) = make(catalog, tmp_path, "a")
    a.write(rows("x"))
    loser = write_staged(a.storage, 1, a.storage.read_bytes(commit_path(1)), 0)   # lost version 1
    stray = write_staged(a.storage, 2, a.storage.read_bytes(commit_path(1)), 0)   # never proposed
    res = DeltaTable(a.uri, catalog=catalog).cleanup_metadata(orphan_age_ms=0)
    assert sorted(res["abandoned_staged"]) == sorted(f"{STAGED_COMMITS_DIR}/{s.file_name}" for s in (loser, stray))
    assert len(staged_names(a)) == 1             # the ratified one stays until a checkpoint covers it
    assert not catalog.store.ratify(a.snapshot().metadata.id, stray)   # tombstoned: never ratifiable


def test_participants_staged_by_different_processes_into_one_group(catalog, url, tmp_path):
    """The write-audit-publish form across Airflow tasks: one task records the group, each writer
    task adds its table, the audit reads the staged view, the publish task ratifies all at once."""
    a, b = make(catalog, tmp_path, "a", "b")
    tx_id = catalog.begin().record().id
    task_a, task_b = SqlCatalog(url), SqlCatalog(url)
    ga = task_a.group(tx_id)
    ga.write(a.uri, rows("g1"))
    ga.stage()
    gb = task_b.group(tx_id)
    gb.write(b.uri, rows("g1", 2))
    gb.stage()
    with pytest.raises(InvalidArgumentError, match="once"):
        SqlCatalog(url).group(tx_id).write(b.uri, rows("again"))
    assert catalog.latest_versions([a.uri, b.uri]) == {a.uri: 0, b.uri: 0}
    assert DeltaTable(b.uri, catalog=catalog).snapshot(transaction=tx_id).to_pyarrow().num_rows == 2
    DeltaTable(a.uri, catalog=catalog).write(rows("single"))       # lands between staging and publishing
    assert SqlCatalog(url, publish_grace_ms=0).group(tx_id).publish() == {a.uri: 2, b.uri: 1}
    groups = [[x["transactionGroup"] for x in commit_actions(t, v) if "transactionGroup" in x][0]
              for t, v in ((a, 2), (b, 1))]
    assert groups[0] == groups[1] and len(groups[0]["participants"]) == 2      # the final set in both
    assert groups_in(DeltaTable(b.uri, catalog=catalog)) == ["g1"]
    task_a.dispose(), task_b.dispose()


def test_a_keyed_begin_returns_its_group_until_it_is_aborted(catalog, url, tmp_path):
    """``begin(key)``: every process that begins with the same key gets the same recorded group
    (with what was staged into it), even when two race to record it; after an abort, a new one."""
    a, = make(catalog, tmp_path, "a")
    first = catalog.begin("dag.begin@run1")
    assert catalog.store.group(first.id).state == "open"               # recorded at once
    again = SqlCatalog(url)
    assert again.begin("dag.begin@run1").id == first.id                 # a retry in another process
    assert not again.store.open_group(first.id)                         # the racing recorder: nothing changed
    assert catalog.begin("dag.begin@run2").id != first.id
    g = again.group(first.id)
    g.write(a.uri, rows("x"))
    g.stage()
    retried = catalog.begin("dag.begin@run1")
    assert (retried.id, [m.table_uri for m in retried.members]) == (first.id, [a.uri])
    retried.abort()
    fresh = catalog.begin("dag.begin@run1")
    assert fresh.id != first.id and fresh.members == () and fresh.state == "open"
    assert catalog.begin("dag.begin@run1").id == fresh.id
    with pytest.raises(InvalidArgumentError):
        catalog.begin("")
    again.dispose()


def test_vacuum_keeps_the_data_files_of_a_staged_group(catalog, tmp_path):
    a, b = make(catalog, tmp_path, "a", "b")
    a.write(rows("old"))
    a.write(rows("new"), mode="overwrite")            # "old"'s file is now unreferenced
    tx = staged_group(catalog, a, b)                   # the group's files are referenced by staged commits only
    table = DeltaTable(a.uri, catalog=catalog)
    future = 10 ** 13                                  # everything is older than the retention
    res = table.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=future)
    assert res["num_files_deleted"] == 1               # the overwritten file, not the staged group's
    assert tx.publish() == {a.uri: 3, b.uri: 1}
    assert groups_in(DeltaTable(a.uri, catalog=catalog)) == ["g1", "new"]     # its data is all there


def test_tables_are_one_table_whatever_the_spelling_of_their_location(catalog, tmp_path):
    (a,) = make(catalog, tmp_path, "a")
    plain_path = str(tmp_path / "a")
    assert a.uri == "file://" + plain_path
    with catalog.transaction() as tx:
        tx.write(plain_path + "/", rows("g1"))
    assert catalog.latest_versions([plain_path]) == {plain_path: 1}
    assert catalog.snapshots([plain_path, a.uri])[plain_path].version == 1
    assert DeltaTable(a.uri, catalog=catalog).snapshot().version == 1


# ------------------------------------------------- finishing a creation cut short
def half_created(catalog: SqlCatalog, tmp_path, name: str) -> DeltaTable:
    """A catalog-managed table whose version 0 is published (naming ``catalog``) but which
    ``catalog`` never registered: what a creator killed between publishing version 0 and
    registering leaves (its registration row is deleted here, as if it had never been written)."""
    table = DeltaTable.create(str(tmp_path / name), SCHEMA, catalog=catalog)
    with catalog.store.db.engine.begin() as conn:
        conn.execute(sa.delete(catalog_tables).where(catalog_tables.c.table_id == table.snapshot().metadata.id))
    return table


def created_elsewhere(tmp_path, name: str) -> DeltaTable:
    """A catalog-managed version 0 created through another (throw-away) catalog."""
    elsewhere = SqlCatalog(f"sqlite:///{tmp_path}/{name}-creator.db")
    table = DeltaTable.create(str(tmp_path / name), SCHEMA, catalog=elsewhere)
    elsewhere.dispose()
    return table


def test_register_finishes_a_table_whose_creation_was_cut_short(catalog, tmp_path):
    t = half_created(catalog, tmp_path, "a")
    with pytest.raises(InvalidTableStateError, match="not registered"):
        DeltaTable(t.uri, catalog=catalog).write(rows("x"))
    table_id = catalog.register(t.uri)
    assert table_id == t.snapshot().metadata.id and catalog.manages(t.uri)
    assert catalog.register(str(tmp_path / "a")) == table_id                  # again: idempotent
    assert DeltaTable(t.uri, catalog=catalog).write(rows("x")) == 1
    assert catalog.latest_versions([t.uri]) == {t.uri: 1}
    assert groups_in(DeltaTable(t.uri, catalog=catalog)) == ["x"]


def test_register_refuses_anything_but_an_unregistered_version_zero_catalog_table(catalog, tmp_path):
    from airflow_provider_delta.log import TableNotFoundError
    with pytest.raises(TableNotFoundError):
        catalog.register(str(tmp_path / "missing"))
    plain = DeltaTable.create(str(tmp_path / "plain"), SCHEMA)
    with pytest.raises(InvalidTableStateError, match="not a catalog-managed table"):
        catalog.register(plain.uri)
    elsewhere = SqlCatalog(f"sqlite:///{tmp_path}/other.db")
    moved_on = DeltaTable.create(str(tmp_path / "moved_on"), SCHEMA, catalog=elsewhere)
    moved_on.write(rows("y"))                                  # version 1: ratified by another catalog
    with pytest.raises(InvalidTableStateError, match="versions up to 1"):
        catalog.register(moved_on.uri)
    elsewhere.dispose()
    (mine,) = make(catalog, tmp_path, "mine")
    shutil.rmtree(tmp_path / "mine")                            # dropped, and another table created there
    created_elsewhere(tmp_path, "mine")
    with pytest.raises(InvalidTableStateError, match="holds another table"):
        catalog.register(mine.uri)
    assert [catalog.manages(u) for u in (plain.uri, moved_on.uri)] == [False, False]    # nothing registered
