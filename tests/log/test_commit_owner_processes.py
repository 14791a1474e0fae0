"""The SQL commit owner across real processes (spawned, so nothing is shared but the database).

Checks what only several processes can show: of concurrent proposers of a version
exactly one wins (no commit lost or duplicated, versions contiguous), a process
killed between ratification and backfill (or in the middle of a backfill) leaves a
state that a later backfill completes in order, and schema creation is safe when
processes start together. Sizes stay small by default; DELTA_STRESS_SIZE raises the
number of commits per process.
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import uuid

import pytest
import sqlalchemy as sa

from airflow_provider_delta.log.base.commit_owner import SqlCommitOwner
from airflow_provider_delta.log.base.commit_owner.sql_engine import engine_url, parse_url
from airflow_provider_delta.log.base.errors import CommitFailedError
from airflow_provider_delta.log.base.names import COMMITS_DIR, commit_path, parse_uuid_commit_name
from airflow_provider_delta.log.base.storage import Storage

COMMITS_PER_PROCESS = int(os.environ.get("DELTA_STRESS_SIZE", "25"))
PROCESSES = 4
JOIN_TIMEOUT_S = 120
CTX = mp.get_context("spawn")


@pytest.fixture(params=["sqlite", "postgres"])
def db_url(request, tmp_path):
    if request.param == "sqlite":
        return f"sqlite:///{tmp_path}/owner.db"
    return request.getfixturevalue("postgres_url")


def payload(writer: int, i: int) -> bytes:
    return (json.dumps({"commitInfo": {"inCommitTimestamp": i, "writer": writer, "seq": i}}) + "\n").encode()


def start_table(url: str, root: str) -> tuple[Storage, str]:
    storage = Storage(root)
    assert storage.put_if_absent(commit_path(0), b'{"commitInfo":{"seq":-1}}\n')
    table_id = str(uuid.uuid4())
    owner = SqlCommitOwner(url)
    owner.register_table(table_id, storage.uri, 0)
    owner.dispose()
    return storage, table_id


def run(target, *args) -> mp.Process:
    p = CTX.Process(target=target, args=args)
    p.start()
    return p


def join_all(procs: list[mp.Process]) -> list[int]:
    for p in procs:
        p.join(JOIN_TIMEOUT_S)
        if p.is_alive():
            p.kill()
            p.join()
    return [p.exitcode for p in procs]


# ------------------------------------------------------------ worker bodies
def commit_worker(url, root, table_id, writer, count, batch, barrier, out_path):
    """Commit ``count`` payloads, each at the next free version, retrying lost races."""
    owner = SqlCommitOwner(url, backfill_batch_size=batch)
    storage = Storage(root)
    barrier.wait(JOIN_TIMEOUT_S)
    won, conflicts = [], 0
    for i in range(count):
        while True:
            v = owner.get_commits(table_id).latest_table_version + 1
            try:
                c = owner.commit(storage, table_id, v, payload(writer, i), i)
            except CommitFailedError as e:
                if not (e.retryable and e.conflict):
                    raise
                conflicts += 1
                continue
            won.append([c.version, c.file_name])
            break
    with open(out_path, "w") as f:
        json.dump({"won": won, "conflicts": conflicts}, f)
    owner.dispose()


def die_before_backfill_worker(url, root, table_id):
    """Ratify version 1, then die where the backfill would start."""
    from airflow_provider_delta.log.base.commit_owner.base import CommitOwner
    CommitOwner.backfill_commits = lambda *a, **k: os._exit(17)
    owner = SqlCommitOwner(url, backfill_batch_size=1)
    owner.commit(Storage(root), table_id, 1, payload(0, 1), 1)
    os._exit(0)  # not reached: the commit's backfill kills the process


def die_mid_backfill_worker(url, root, table_id):
    """Ratify versions 1..3 (no automatic backfill), then die after copying version 1."""
    owner = SqlCommitOwner(url, backfill_batch_size=100)
    storage = Storage(root)
    for v in (1, 2, 3):
        owner.commit(storage, table_id, v, payload(0, v), v)
    real_put = Storage.put_if_absent

    def put_then_die(self, rel, data):
        if rel == commit_path(2):
            os._exit(18)
        return real_put(self, rel, data)

    Storage.put_if_absent = put_then_die
    owner.backfill_to_version(storage, table_id)
    os._exit(0)  # not reached


def schema_worker(url, root, barrier, out_path):
    barrier.wait(JOIN_TIMEOUT_S)
    owner = SqlCommitOwner(url)
    storage = Storage(root)
    table_id = str(uuid.uuid4())
    storage.put_if_absent(commit_path(0), b"{}\n")
    owner.register_table(table_id, storage.uri, 0)
    owner.commit(storage, table_id, 1, b'{"commitInfo":{}}\n', 1)
    with open(out_path, "w") as f:
        f.write(table_id)
    owner.dispose()


# -------------------------------------------------------------------- tests
@pytest.mark.parametrize("batch", [1, 4])
def test_exactly_one_proposer_wins_each_version(db_url, tmp_path, batch):
    root = str(tmp_path / "table")
    storage, table_id = start_table(db_url, root)
    barrier = CTX.Barrier(PROCESSES)
    outs = [str(tmp_path / f"out{w}.json") for w in range(PROCESSES)]
    procs = [run(commit_worker, db_url, root, table_id, w, COMMITS_PER_PROCESS, batch, barrier, outs[w])
             for w in range(PROCESSES)]
    assert join_all(procs) == [0] * PROCESSES
    total = PROCESSES * COMMITS_PER_PROCESS
    results = [json.load(open(o)) for o in outs]

    # every version 1..total won by exactly one writer
    won = [tuple(x) for r in results for x in r["won"]]
    assert sorted(v for v, _ in won) == list(range(1, total + 1))

    owner = SqlCommitOwner(db_url)
    assert owner.backfill_to_version(storage, table_id) == total
    assert owner.get_commits(table_id).commits == []
    assert owner.get_commits(table_id).latest_table_version == total
    owner.dispose()

    # _delta_log holds versions 0..total, and every payload exactly once
    seen = []
    for v in range(1, total + 1):
        info = json.loads(storage.read_bytes(commit_path(v)))["commitInfo"]
        seen.append((info["writer"], info["seq"]))
    assert sorted(seen) == sorted((w, i) for w in range(PROCESSES) for i in range(COMMITS_PER_PROCESS))
    # each writer's commits appear in its own order
    for w in range(PROCESSES):
        assert [i for ww, i in seen if ww == w] == list(range(COMMITS_PER_PROCESS))

    # each backfilled commit is the _commits file its winner was told about; losers' files are gone,
    # so every _commits file is referenced exactly once
    files = {f.name for f in storage.list_dir(COMMITS_DIR)}
    assert files == {name for _, name in won}
    for v, name in won:
        assert parse_uuid_commit_name(name)[0] == v
        assert storage.read_bytes(f"{COMMITS_DIR}/{name}") == storage.read_bytes(commit_path(v))


def test_killed_between_ratification_and_backfill(db_url, tmp_path):
    root = str(tmp_path / "table")
    storage, table_id = start_table(db_url, root)
    assert join_all([run(die_before_backfill_worker, db_url, root, table_id)]) == [17]
    owner = SqlCommitOwner(db_url, backfill_batch_size=1)
    resp = owner.get_commits(table_id)
    assert [c.version for c in resp.commits] == [1] and resp.latest_table_version == 1
    assert not storage.exists(commit_path(1))
    # the commit is durable: version 1 is taken, and the next commit backfills both in order
    with pytest.raises(CommitFailedError) as ei:
        owner.commit(storage, table_id, 1, payload(9, 9), 9)
    assert ei.value.conflict
    owner.commit(storage, table_id, 2, payload(0, 2), 2)
    assert storage.read_bytes(commit_path(1)) == payload(0, 1)
    assert storage.read_bytes(commit_path(2)) == payload(0, 2)
    assert owner.describe_table(table_id).backfilled_version == 2
    owner.dispose()


def test_killed_in_the_middle_of_a_backfill(db_url, tmp_path):
    root = str(tmp_path / "table")
    storage, table_id = start_table(db_url, root)
    assert join_all([run(die_mid_backfill_worker, db_url, root, table_id)]) == [18]
    assert storage.exists(commit_path(1)) and not storage.exists(commit_path(2))
    owner = SqlCommitOwner(db_url)
    assert owner.backfill_to_version(storage, table_id) == 3
    for v in (1, 2, 3):
        assert storage.read_bytes(commit_path(v)) == payload(0, v)
    assert owner.get_commits(table_id).commits == []
    owner.dispose()


def test_schema_created_by_processes_starting_together_sqlite(tmp_path):
    url = f"sqlite:///{tmp_path}/fresh.db"
    _schema_race(url, tmp_path)


def test_schema_created_by_processes_starting_together_postgres(tmp_path, postgres_url):
    # A private schema, so the race really creates the tables (others' tests use public).
    schema = "owner_race_" + uuid.uuid4().hex[:10]
    engine = sa.create_engine(engine_url(parse_url(postgres_url)))
    with engine.begin() as c:
        c.execute(sa.text(f"CREATE SCHEMA {schema}"))
    try:
        url = sa.engine.make_url(postgres_url).update_query_dict({"options": f"-csearch_path={schema}"})
        _schema_race(url.render_as_string(hide_password=False), tmp_path)
        names = set(sa.inspect(engine).get_table_names(schema=schema))
        assert {"delta_owner_tables", "delta_owner_commits"} <= names
    finally:
        with engine.begin() as c:
            c.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        engine.dispose()


def _schema_race(url: str, tmp_path) -> None:
    barrier = CTX.Barrier(2)
    outs = [str(tmp_path / f"schema{i}.txt") for i in range(2)]
    procs = [run(schema_worker, url, str(tmp_path / f"t{i}"), barrier, outs[i]) for i in range(2)]
    assert join_all(procs) == [0, 0]
    owner = SqlCommitOwner(url)
    for o in outs:
        state = owner.describe_table(open(o).read())
        assert state is not None and state.latest_version == 1
    owner.dispose()
