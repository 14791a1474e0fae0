"""SqlCatalog across real processes (spawned: nothing shared but the database and the files).

* Atomicity under load: writer processes commit multi-table groups (the same key into
  tables A and B) interleaved with single-table commits, while reader processes read
  both tables through ``catalog.snapshots`` and count reads where one table holds a
  group the other does not ("torn"). The counts are printed; torn must be 0.
* kill -9: a writer killed at random moments of a loop of groups, and at exact points
  (after staging, after group ratification, in the middle of publishing, and a reader
  killed while finishing someone else's publish). Afterwards every group is in both
  tables or in neither, both tables read, and metadata cleanup leaves only ratified
  staged commits.

SQLite and the PostgreSQL server. Sizes are small by default; DELTA_CATALOG_STRESS
raises the groups per writer, DELTA_CATALOG_KILLS the random kill rounds.
"""
from __future__ import annotations

import multiprocessing as mp
import os
import random
import signal
import threading
import time
import uuid

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, SqlCatalog
from airflow_provider_delta.log.base.names import STAGED_COMMITS_DIR, commit_path, parse_uuid_commit_name

GROUPS_PER_WRITER = int(os.environ.get("DELTA_CATALOG_STRESS", "8"))
KILL_ROUNDS = int(os.environ.get("DELTA_CATALOG_KILLS", "3"))
WRITERS, READERS = 2, 2
JOIN_TIMEOUT_S = 300
CTX = mp.get_context("spawn")
SCHEMA = pa.schema([("g", pa.string())])


def rows(key: str) -> pa.Table:
    return pa.table({"g": [key]}, schema=SCHEMA)


def create_tables(url: str, tmp_path) -> list[str]:
    catalog = SqlCatalog(url)
    uris = [DeltaTable.create(str(tmp_path / n), SCHEMA, catalog=catalog).uri for n in ("a", "b")]
    catalog.dispose()
    return uris


def group_keys(snapshot) -> set[str]:
    return {g for g in snapshot.to_pyarrow(columns=["g"]).column("g").to_pylist() if g.startswith("grp-")}


# ------------------------------------------------------------------ processes
def writer(url: str, uris: list[str], writer_id: int, groups: int, done_q) -> None:
    catalog = SqlCatalog(url)
    rng = random.Random(writer_id)
    committed = []
    for i in range(groups):
        key = f"grp-{writer_id}-{i}"
        with catalog.transaction() as tx:
            tx.write(uris[0], rows(key))
            tx.write(uris[1], rows(key))
        committed.append(key)
        # single-table commits interleave with the groups, on either table
        DeltaTable(uris[rng.randrange(2)], catalog=catalog).write(rows(f"single-{writer_id}-{i}"))
    done_q.put(("writer", writer_id, committed))
    catalog.dispose()


def reader(url: str, uris: list[str], stop_file: str, done_q) -> None:
    """Reads both tables at one catalog state (``catalog.snapshots``): the reads that count. For
    contrast it also reads them one after the other (two catalog states), which may tear: that
    shows the check can see a torn read."""
    catalog = SqlCatalog(url)
    reads = torn = separate_torn = 0
    while True:
        stopping = os.path.exists(stop_file)
        snaps = catalog.snapshots(uris)
        a, b = (group_keys(snaps[u]) for u in uris)
        reads += 1
        torn += a != b
        a, b = (group_keys(DeltaTable(u, catalog=catalog).snapshot()) for u in uris)
        separate_torn += a != b
        if stopping:
            break
    done_q.put(("reader", reads, torn, separate_torn))
    catalog.dispose()


def test_readers_through_the_catalog_never_see_half_a_group(url, tmp_path, capsys):
    uris = create_tables(url, tmp_path)
    stop_file = str(tmp_path / "stop")
    q = CTX.Queue()
    readers = [CTX.Process(target=reader, args=(url, uris, stop_file, q)) for _ in range(READERS)]
    writers = [CTX.Process(target=writer, args=(url, uris, w, GROUPS_PER_WRITER, q)) for w in range(WRITERS)]
    for p in readers + writers:
        p.start()
    for p in writers:
        p.join(JOIN_TIMEOUT_S)
    open(stop_file, "w").close()
    for p in readers:
        p.join(JOIN_TIMEOUT_S)
    results = [q.get(timeout=10) for _ in range(READERS + WRITERS)]
    assert all(p.exitcode == 0 for p in readers + writers)
    committed = {k for r in results if r[0] == "writer" for k in r[2]}
    reads = sum(r[1] for r in results if r[0] == "reader")
    torn = sum(r[2] for r in results if r[0] == "reader")
    separate_torn = sum(r[3] for r in results if r[0] == "reader")
    with capsys.disabled():
        print(f"\n[{url.split(':')[0]}] groups={len(committed)} single commits={len(committed)} "
              f"reads={reads} torn reads={torn} (contrast, tables read one after the other: "
              f"{separate_torn} torn of {reads})")
    assert len(committed) == WRITERS * GROUPS_PER_WRITER
    assert reads >= READERS and torn == 0
    catalog = SqlCatalog(url)
    final = catalog.snapshots(uris)
    for u in uris:
        got = final[u].to_pyarrow(columns=["g"]).column("g").to_pylist()
        assert sorted(g for g in got if g.startswith("grp-")) == sorted(committed)    # each exactly once
        assert final[u].version == len(got)                     # one commit per row: nothing lost
        storage = DeltaTable(u, catalog=catalog).storage
        assert all(storage.exists(commit_path(v)) for v in range(final[u].version + 1))   # all published
    catalog.dispose()


# ---------------------------------------------------------------------- kill -9
def group_loop(url: str, uris: list[str], prefix: str, progress: str) -> None:
    """Commit groups until killed; ``progress`` appears once the first group is in."""
    catalog = SqlCatalog(url)
    i = 0
    while True:
        with catalog.transaction() as tx:
            tx.write(uris[0], rows(f"grp-{prefix}-{i}"))
            tx.write(uris[1], rows(f"grp-{prefix}-{i}"))
        i += 1
        if i == 1:
            open(progress, "w").close()


def _kill_me() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


def die_at(url: str, uris: list[str], point: str, key: str) -> None:
    """Run one group and SIGKILL this process at ``point`` of it."""
    from airflow_provider_delta.log.base.catalog_store import table_source
    from airflow_provider_delta.log.catalogs import group as group_module

    catalog = SqlCatalog(url)
    if point == "after_ratify":
        group_module.CatalogTransaction._publish_members = lambda self: _kill_me()
    elif point == "mid_publish":      # the first table published, then killed (participants run in threads)
        real = table_source.CatalogTableSource.publish
        first_done = threading.Event()
        calls = []

        def publish_then_die(self, table_id, view=None, **kwargs):
            calls.append(table_id)
            if len(calls) > 1:
                first_done.wait(30)
                _kill_me()
            result = real(self, table_id, view, **kwargs)
            first_done.set()
            return result
        table_source.CatalogTableSource.publish = publish_then_die
    tx = catalog.begin()
    tx.write(uris[0], rows(key))
    tx.write(uris[1], rows(key))
    if point == "mid_stage":          # one staged commit written, then killed
        real_write = table_source.write_staged
        first_done = threading.Event()
        seen = []

        def write_then_die(*args, **kwargs):
            seen.append(1)
            if len(seen) > 1:
                first_done.wait(30)
                _kill_me()
            result = real_write(*args, **kwargs)
            first_done.set()
            return result
        group_module.write_staged = write_then_die
    tx.stage()
    if point == "after_stage":
        _kill_me()
    tx.publish()


def finish_publish_and_die(url: str, uris: list[str]) -> None:
    """A reader that finishes someone's publish, killed after publishing the first table."""
    from airflow_provider_delta.log.base.catalog_store import table_source

    real = table_source.CatalogTableSource.publish

    def publish_once(self, table_id, view=None, **kwargs):
        real(self, table_id, view, **kwargs)
        _kill_me()
    table_source.CatalogTableSource.publish = publish_once
    SqlCatalog(url, publish_grace_ms=0).snapshots(uris)


def check_recovered(url: str, uris: list[str]) -> tuple[set[str], int]:
    """Every group in both tables or neither; both read; cleanup leaves only ratified staged commits."""
    catalog = SqlCatalog(url, publish_grace_ms=0)
    snaps = catalog.snapshots(uris)                          # finishes any interrupted publish
    a, b = (group_keys(snaps[u]) for u in uris)
    assert a == b
    removed = 0
    for u in uris:
        table = DeltaTable(u, catalog=catalog)
        removed += len(table.cleanup_metadata(orphan_age_ms=0)["abandoned_staged"])
        snap = table.snapshot()
        assert all(table.storage.exists(commit_path(v)) for v in range(snap.version + 1))
        names = [e.name for e in table.storage.list_dir(STAGED_COMMITS_DIR)
                 if parse_uuid_commit_name(e.name)]     # (a kill inside a file write may leave a temp file)
        ratified = catalog.store.ratified_names(snap.metadata.id, [int(n[:20]) for n in names])
        assert all(ratified.get(int(n[:20])) == n for n in names), "an unratified staged commit survived cleanup"
        assert snap.to_pyarrow().num_rows == snap.version     # one row per commit: nothing half-applied
    catalog.dispose()
    return a, removed


def test_writer_killed_at_random_moments(url, tmp_path, capsys):
    uris = create_tables(url, tmp_path)
    rng = random.Random(7)
    groups_seen = removed = 0
    for r in range(KILL_ROUNDS):
        progress = str(tmp_path / f"progress-{r}")
        p = CTX.Process(target=group_loop, args=(url, uris, f"r{r}", progress))
        p.start()
        deadline = time.monotonic() + JOIN_TIMEOUT_S
        while not os.path.exists(progress) and time.monotonic() < deadline and p.is_alive():
            time.sleep(0.01)
        time.sleep(rng.uniform(0.0, 0.5))             # somewhere in a later group's stage/ratify/publish
        os.kill(p.pid, signal.SIGKILL)
        p.join(JOIN_TIMEOUT_S)
        keys, n = check_recovered(url, uris)
        assert len(keys) > groups_seen                 # the round committed groups before the kill
        groups_seen, removed = len(keys), removed + n
    with capsys.disabled():
        print(f"\n[{url.split(':')[0]}] kill rounds={KILL_ROUNDS} groups committed={groups_seen} "
              f"orphan staged commits removed={removed}")
    # the loop keeps working after the kills: a fresh group commits in both tables
    catalog = SqlCatalog(url)
    with catalog.transaction() as tx:
        tx.write(uris[0], rows("grp-after"))
        tx.write(uris[1], rows("grp-after"))
    assert "grp-after" in group_keys(catalog.snapshots(uris)[uris[1]])
    catalog.dispose()


@pytest.mark.parametrize("point,visible", [("mid_stage", False), ("after_stage", False),
                                           ("after_ratify", True), ("mid_publish", True)])
def test_writer_killed_at_each_step(url, tmp_path, point, visible):
    uris = create_tables(url, tmp_path)
    p = CTX.Process(target=die_at, args=(url, uris, point, "grp-x"))
    p.start()
    p.join(JOIN_TIMEOUT_S)
    assert p.exitcode == -signal.SIGKILL
    if point == "after_ratify":
        # someone finishing the publish is killed too, after the first table
        q = CTX.Process(target=finish_publish_and_die, args=(url, uris))
        q.start()
        q.join(JOIN_TIMEOUT_S)
        assert q.exitcode == -signal.SIGKILL
    keys, removed = check_recovered(url, uris)
    assert keys == ({"grp-x"} if visible else set())
    if not visible:
        assert removed >= 1                       # the orphaned staged commit(s) went
