"""Transactions across real processes (spawned: nothing shared but the file system / owner database).

- blind appends from several processes at once: every commit lands exactly once,
  versions are contiguous, in-commit timestamps strictly increase;
- the same through a SQL commit owner (managed commits);
- two processes removing the same file: one wins, the other gets
  ConcurrentModificationError naming the winning version;
- a writer killed in the middle of its commit leaves the table as it was.

DELTA_STRESS_SIZE sets the commits per process (small by default).
"""
from __future__ import annotations

import json
import multiprocessing as mp
import os
import traceback

import pyarrow as pa
import pytest

from airflow_provider_delta.log import ConcurrentModificationError, DeltaTable
from airflow_provider_delta.log.base.commit_actions import AddFile

COMMITS_PER_PROCESS = int(os.environ.get("DELTA_STRESS_SIZE", "10"))
PROCESSES = 4
JOIN_TIMEOUT_S = 300
CTX = mp.get_context("spawn")


def open_table(uri: str, owner_url: str | None) -> DeltaTable:
    if owner_url is None:
        return DeltaTable(uri)
    from airflow_provider_delta.log.base.commit_owner import SqlCommitOwner
    return DeltaTable(uri, commit_owner=SqlCommitOwner(owner_url))


def reporting(fn):
    """Run a worker body; any exception goes to the results queue so the test fails fast with it."""
    def wrapper(*args):
        results = args[-1]
        try:
            fn(*args)
        except BaseException:
            results.put(("error", traceback.format_exc()))
    wrapper.__name__ = fn.__name__
    return wrapper


def _append(uri: str, owner_url: str | None, worker: int, n: int, start, results) -> None:
    table = open_table(uri, owner_url)
    start.wait(JOIN_TIMEOUT_S)
    versions = []
    for i in range(n):
        with table.transaction(max_retries=1000, job={"worker": worker}) as txn:
            txn.add_file(AddFile(f"w{worker}/f{i}.parquet", 10, {}, 1, True, '{"numRecords":1}'))
            txn.set_txn(f"worker-{worker}", i)
        versions.append(txn.version)
    results.put((worker, versions))


def append_worker(*args) -> None:
    reporting(_append)(*args)


def remove_worker(*args) -> None:
    reporting(_remove)(*args)


def _remove(uri: str, path: str, start, results) -> None:
    table = DeltaTable(uri)
    txn = table.transaction()
    txn.remove_file(path)
    _ = txn.read_version            # read before the race starts
    start.wait(JOIN_TIMEOUT_S)
    try:
        results.put(("ok", txn.commit()))
    except ConcurrentModificationError as e:
        results.put(("conflict", e.winning_version, e.reason))


def _die():
    os._exit(3)


def crashing_writer(uri: str) -> None:
    # the clock is first read inside the commit loop, after the data file was written
    DeltaTable(uri).write(pa.table({"id": [99]}), clock=_die)


def run_all(target, argsets) -> list:
    results = CTX.Queue()
    start = CTX.Barrier(len(argsets))
    procs = [CTX.Process(target=target, args=(*a, start, results)) for a in argsets]
    for p in procs:
        p.start()
    out = [results.get(timeout=JOIN_TIMEOUT_S) for _ in procs]
    for p in procs:
        p.join(JOIN_TIMEOUT_S)
        assert p.exitcode == 0, f"worker exited with {p.exitcode}"
    errors = [r[1] for r in out if r[0] == "error"]
    assert not errors, errors[0]
    return out


@pytest.mark.parametrize("managed", [False, True], ids=["filesystem", "sql-commit-owner"])
def test_concurrent_blind_appends_land_exactly_once(tmp_path, managed):
    uri = str(tmp_path / "t")
    owner_url = f"sqlite:///{tmp_path}/owner.db" if managed else None
    owner = None
    if managed:
        from airflow_provider_delta.log.base.commit_owner import SqlCommitOwner
        owner = SqlCommitOwner(owner_url)
    DeltaTable.create(uri, pa.schema([("id", pa.int64())]), commit_owner=owner,
                      properties={"delta.enableInCommitTimestamps": "true"})
    n = COMMITS_PER_PROCESS
    results = run_all(append_worker, [(uri, owner_url, w, n) for w in range(PROCESSES)])
    total = PROCESSES * n
    all_versions = sorted(v for _, vs in results for v in vs)
    assert all_versions == list(range(1, total + 1))            # contiguous, none shared
    table = open_table(uri, owner_url)
    if managed:
        table.backfill()
    assert table.latest_version() == total
    seen: list[str] = []
    icts: list[int] = []
    for v in range(total + 1):
        actions = table.read_commit(v)
        icts.append(actions[0]["commitInfo"]["inCommitTimestamp"])
        seen += [a["add"]["path"] for a in actions if "add" in a]
    assert sorted(seen) == sorted(f"w{w}/f{i}.parquet" for w in range(PROCESSES) for i in range(n))
    assert all(b > a for a, b in zip(icts, icts[1:])), "in-commit timestamps must strictly increase"
    snap = table.snapshot()
    assert snap.files().num_rows == total
    assert {w: snap.transaction_version(f"worker-{w}") for w in range(PROCESSES)} == \
        {w: n - 1 for w in range(PROCESSES)}
    for worker, versions in results:
        assert versions == sorted(versions)


def test_two_processes_removing_the_same_file(tmp_path):
    uri = str(tmp_path / "t")
    t = DeltaTable(uri)
    t.write(pa.table({"id": [1, 2]}))
    path = t.snapshot().files().column("path")[0].as_py()
    results = run_all(remove_worker, [(uri, path), (uri, path)])
    ok = [r for r in results if r[0] == "ok"]
    conflicts = [r for r in results if r[0] == "conflict"]
    assert len(ok) == 1 and len(conflicts) == 1
    assert conflicts[0][1] == ok[0][1] == 1                     # names the winning version
    assert conflicts[0][2] == "concurrent_delete_delete"
    assert t.latest_version() == 1
    assert json.loads(json.dumps(t.read_commit(1)[0]))["commitInfo"]["operation"] == "WRITE"


def test_writer_killed_mid_commit_leaves_table_unchanged(tmp_path):
    uri = str(tmp_path / "t")
    t = DeltaTable(uri)
    t.write(pa.table({"id": [1]}))
    p = CTX.Process(target=crashing_writer, args=(uri,))
    p.start()
    p.join(JOIN_TIMEOUT_S)
    assert p.exitcode == 3
    assert DeltaTable(uri).latest_version() == 0
    # the orphaned data file is not part of the table; the next writer is unaffected
    parquet = [f for f in os.listdir(uri) if f.endswith(".parquet")]
    assert len(parquet) == 2
    assert t.write(pa.table({"id": [2]})) == 1
    assert sorted(r["id"] for r in DeltaTable(uri).snapshot().to_pyarrow().to_pylist()) == [1, 2]
