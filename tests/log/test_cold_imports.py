"""No pandas on the paths an Airflow task, a reschedule poke or a trigger takes.

pyarrow imports pandas (about 0.4 s, more than reading a 90,000-file log) the first
time some calls meet Python or numpy values: ``pa.array``, ``pa.scalar``,
``pq.read_table``, ``to_numpy``, compute functions given Python literals. Every task
process would pay it. Each check here runs one path in a fresh interpreter (pandas is
installed, so a stray trigger does import it) and fails with the stack that imported
it. The tables are made beforehand by this process, where imports do not matter.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Iterable

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

pytest.importorskip("pandas")  # the checks prove nothing where pandas could not be imported anyway

ROOT = Path(__file__).resolve().parents[2]

#: Runs before the checked code: records the stack of the first import of each module in
#: ``WATCHED`` (pandas, and what the read-path checks below name).
_WATCH = textwrap.dedent("""
    import sys, traceback
    class _Watch:
        stacks = {}
        def find_spec(self, name, path=None, target=None):
            if name in WATCHED and name not in _Watch.stacks:
                _Watch.stacks[name] = "".join(traceback.format_stack(limit=30))
            return None
    sys.meta_path.insert(0, _Watch())
""")
_REPORT = textwrap.dedent("""
    import json
    print("COLD-IMPORTS " + json.dumps({"pandas": "pandas" in sys.modules, "stack": _Watch.stacks.get("pandas"),
                                         "modules": sorted(sys.modules), "stacks": _Watch.stacks,
                                         "result": repr(RESULT)}))
""")


def run_fresh(code: str, env: dict[str, str] | None = None, watched: Iterable[str] = ("pandas",)) -> dict:
    """Run ``code`` (which sets RESULT) in a new interpreter; what it imported and returned."""
    script = f"WATCHED = {set(watched)!r}\n" + _WATCH + textwrap.dedent(code) + _REPORT
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300,
                          cwd=ROOT, env={**os.environ, **(env or {})})
    assert proc.returncode == 0, proc.stderr[-4000:]
    line = [x for x in proc.stdout.splitlines() if x.startswith("COLD-IMPORTS ")][-1]
    return json.loads(line[len("COLD-IMPORTS "):])


def assert_no_pandas(code: str, env: dict[str, str] | None = None) -> str:
    out = run_fresh(code, env)
    assert not out["pandas"], f"pandas was imported here:\n{out['stack']}"
    return out["result"]


def _rows(start: int, n: int) -> pa.Table:
    return pa.table({"id": pa.array(range(start, start + n), pa.int64()),
                     "name": pa.array([f"n{i}" for i in range(start, start + n)], pa.string()),
                     "value": pa.array([i * 0.5 for i in range(start, start + n)], pa.float64()),
                     "day": pa.array([f"2026-01-0{1 + i % 3}" for i in range(start, start + n)], pa.string())})


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> dict[str, str]:
    """A JSON-only table, one with our checkpoint, one with deltalake's; all partitioned, with stats."""
    base = tmp_path_factory.mktemp("cold")
    out = {}
    for name in ("json", "ours", "deltalake"):
        uri = str(base / name)
        t = DeltaTable.create(uri, _rows(0, 1).schema, partition_by=["day"])
        for i in range(4):
            t.write(_rows(10 * i, 10))
        out[name] = uri
    DeltaTable(out["ours"]).checkpoint()
    DeltaTable(out["ours"]).write(_rows(100, 5))
    deltalake = pytest.importorskip("deltalake")
    deltalake.DeltaTable(out["deltalake"]).create_checkpoint()
    DeltaTable(out["deltalake"]).write(_rows(200, 5))
    return out


@pytest.mark.parametrize("kind", ["json", "ours", "deltalake"])
def test_snapshot_and_files(tables, kind):
    result = assert_no_pandas(f"""
        from airflow_provider_delta.log import DeltaTable
        snap = DeltaTable({tables[kind]!r}).snapshot()
        files = snap.files()
        RESULT = (snap.version, files.num_rows, snap.num_files(), snap.tombstones().num_rows,
                  sorted(snap.transactions()))
    """)
    assert result == ("(4, 12, 12, 0, [])" if kind == "json" else "(5, 15, 15, 0, [])")


@pytest.mark.parametrize("kind", ["json", "ours"])
def test_to_pyarrow(tables, kind):
    result = assert_no_pandas(f"""
        from airflow_provider_delta.log import DeltaTable
        snap = DeltaTable({tables[kind]!r}).snapshot()
        RESULT = (snap.to_pyarrow().num_rows, snap.to_pyarrow(columns=["id"], filter=[("day", "=", "2026-01-02")]).num_rows)
    """)
    assert result == ("(45, 15)" if kind == "ours" else "(40, 13)")


#: What reading a local table must not import: fsspec (local tables go through ``os``),
#: SQLAlchemy (only the SQL commit owner needs it), the write engine, the commit owners
#: and the action classes only writers build, each loaded on first use
#: (``log/operations.py``, ``log/__init__.py``, ``log/base/commit_owner/__init__.py``); nor
#: ``dataclasses``, whose classes generate code as they are defined (about 6 ms for the
#: read path's: ``log/base/records.py``), nor ``random`` (1 ms, for a listing retry's jitter).
#: Each costs every cold task.
NOT_ON_LOCAL_READS = ("fsspec", "sqlalchemy", "dataclasses", "random") + tuple(f"airflow_provider_delta.log.{m}" for m in (
    "base.fsspec_files", "base.object_store", "write.writer", "write.transaction", "write.commit_plan", "write.committer", "write.conflicts",
    "write.commit_info", "write.create", "maintenance.checkpoint", "maintenance.checkpoint_rows", "maintenance.checkpoint_sources", "maintenance.distributed_checkpoint",
    "maintenance.compaction", "maintenance.cleanup", "maintenance.vacuum", "write.managed", "write.write_plan", "incremental", "read.change_feed",
    "base.commit_owner.sql", "base.commit_owner.base", "base.commit_actions", "write.commit_route", "base.catalog"))


def assert_not_imported(code: str, names: Iterable[str], env: dict[str, str] | None = None) -> tuple[str, set]:
    """Run ``code`` fresh; fail with the importing stack if it imported one of ``names``.
    Returns its result and the modules it did import."""
    out = run_fresh(code, env, watched=names)
    modules = set(out["modules"])
    found = [n for n in names if n in modules]
    assert not found, f"{found[0]} was imported here:\n{out['stacks'].get(found[0])}"
    return out["result"], modules


@pytest.mark.parametrize("kind", ["json", "ours", "deltalake"])
def test_local_read_imports_no_fsspec_sqlalchemy_or_write_engine(tables, kind):
    result, modules = assert_not_imported(f"""
        from airflow_provider_delta.log import DeltaTable, TableNotFoundError
        t = DeltaTable({tables[kind]!r})
        snap = t.snapshot()
        RESULT = (snap.version, snap.files().num_rows, t.latest_version(), snap.tombstones().num_rows,
                  [c.version for c in t.commits_since(3).commits], t.history(limit=1)[0]["version"])
    """, NOT_ON_LOCAL_READS + NOT_ON_ANY_READ)
    assert result == ("(4, 12, 4, 0, [4], 4)" if kind == "json" else "(5, 15, 5, 0, [4, 5], 5)")
    assert "airflow_provider_delta.log.read.replay" in modules   # the watch saw the read engine load
    assert "pyarrow._parquet" in modules                     # ...and the compiled Parquet reader


#: What no snapshot read imports, local or not: pyarrow's Python wrappers of its compute
#: kernels (about 45 ms: ``log/base/arrow_kernels.py`` calls the kernels by name) and of its
#: Parquet reader (``pyarrow.parquet`` brings ``pyarrow.fs`` and ``ssl``, about 20 ms:
#: ``log/base/parquet_file.py`` uses the compiled reader).
NOT_ON_ANY_READ = ("pyarrow.compute", "pyarrow.parquet", "pyarrow.fs", "ssl")


def test_the_checks_see_fsspec_and_the_write_engine_when_they_are_used(tmp_path):
    """The same watch on paths that need them: an in-memory table imports fsspec, a write the
    writer, the SQL owner SQLAlchemy (so the checks above can fail)."""
    pytest.importorskip("sqlalchemy")
    out = run_fresh(f"""
        import pyarrow as pa
        from airflow_provider_delta.log import DeltaTable, SqlCommitOwner
        t = DeltaTable.create("memory://cold/t", pa.schema([("id", pa.int64())]))
        local = DeltaTable.create({str(tmp_path / "w")!r}, pa.schema([("id", pa.int64())]))
        SqlCommitOwner("sqlite:///" + {str(tmp_path / "owner.db")!r})
        RESULT = t.latest_version()
    """, watched=NOT_ON_LOCAL_READS)
    modules = set(out["modules"])
    assert {"fsspec", "sqlalchemy", "airflow_provider_delta.log.base.fsspec_files",
            "airflow_provider_delta.log.write.create", "airflow_provider_delta.log.write.committer"} <= modules


#: Nor does a write, a transaction's commit or a checkpoint need pyarrow's compute wrappers (about
#: 50 ms of CPU in every writing task): the write path calls the kernels through arrow_kernels too.
NOT_ON_WRITES = ("pandas", "pyarrow.compute")


def test_write_and_transaction_commit(tmp_path):
    uri = str(tmp_path / "w")
    # the data is built from Arrow buffers so that the check is about our code, not the test's
    result, _ = assert_not_imported(f"""
        import numpy as np
        import pyarrow as pa
        from airflow_provider_delta.log import DeltaTable
        schema = pa.schema([("id", pa.int64()), ("day", pa.string())])
        t = DeltaTable.create({uri!r}, schema, partition_by=["day"])
        ids = pa.Array.from_buffers(pa.int64(), 4, [None, pa.py_buffer(np.arange(4, dtype=np.int64))])
        days = pa.Array.from_buffers(pa.string(), 4, [None, pa.py_buffer(np.array([0, 1, 2, 3, 4], np.int32)),
                                                      pa.py_buffer(b"xxyy")])
        data = pa.Table.from_arrays([ids, days], schema=schema)
        v1 = t.write(data)
        v2 = t.write(data, mode="overwrite")
        with t.transaction() as tx:                          # a partition-filtered read of the file list
            RESULT_FILTERED = tx.read_files(partitions={{"day": "y"}}).num_rows
        with t.transaction(operation="OPTIMIZE") as tx:
            tx.set_txn("etl", 7)
            tx.remove_file(tx.read_files().column("path")[0].as_py())
        RESULT = (v1, v2, t.latest_version(), t.snapshot().files().num_rows, t.snapshot().to_pyarrow().num_rows,
                  RESULT_FILTERED)
    """, NOT_ON_WRITES)
    assert result == "(1, 2, 4, 1, 2, 1)"


def test_history_and_commits_since(tables):
    result = assert_no_pandas(f"""
        from airflow_provider_delta.log import DeltaTable
        t = DeltaTable({tables["ours"]!r})
        h = t.history()
        RESULT = ([c["version"] for c in h], [c.version for c in t.commits_since(2).commits])
    """)
    assert result == "([5, 4, 3, 2, 1, 0], [3, 4, 5])"


@pytest.mark.parametrize("kind", ["json", "deltalake"])
def test_checkpoint(tables, tmp_path, kind):
    import shutil
    uri = str(tmp_path / kind)
    shutil.copytree(tables[kind], uri)
    result, _ = assert_not_imported(f"""
        from airflow_provider_delta.log import DeltaTable
        t = DeltaTable({uri!r})
        v = t.checkpoint()
        RESULT = (v, DeltaTable({uri!r}).snapshot().files().num_rows)
    """, NOT_ON_WRITES)
    assert result == ("(4, 12)" if kind == "json" else "(5, 15)")


_AIRFLOW_ENV = {"AIRFLOW__CORE__LOAD_EXAMPLES": "False", "AIRFLOW__CORE__UNIT_TEST_MODE": "True"}


def test_hook(tables):
    result = assert_no_pandas(f"""
        from airflow_provider_delta.hooks import DeltaTableHook
        hook = DeltaTableHook()
        snap = hook.snapshot({tables["ours"]!r})
        RESULT = (hook.latest_version({tables["ours"]!r}), snap.files().num_rows)
    """, env=_AIRFLOW_ENV)
    assert result == "(5, 15)"


def test_sensor_poke(tables):
    result = assert_no_pandas(f"""
        from airflow_provider_delta.sensors import DeltaCommitSensor
        sensor = DeltaCommitSensor(task_id="wait", table_uri={tables["deltalake"]!r}, after_version=3)
        first = sensor.poke({{}})
        RESULT = (bool(first), sensor.poke({{}}) is not None)
    """, env=_AIRFLOW_ENV)
    assert result == "(True, True)"


def test_trigger_poll(tables):
    result = assert_no_pandas(f"""
        import asyncio
        from airflow_provider_delta.triggers import DeltaCommitTrigger
        trigger = DeltaCommitTrigger(table_uri={tables["json"]!r}, after_version=2, poke_interval=0.01)
        async def first():
            return await trigger.run().__anext__()
        event = asyncio.run(first())
        RESULT = (event.payload["status"], [c["version"] for c in event.payload["commits"]])
    """, env=_AIRFLOW_ENV)
    assert result == "('success', [3, 4])"


def test_every_watched_module_of_the_package_exists():
    """A watched name that no longer names a module (after a move) would make the checks above pass
    vacuously: each one must resolve."""
    import importlib.util
    ours = [n for n in NOT_ON_LOCAL_READS if n.startswith("airflow_provider_delta.")]
    assert ours and all(importlib.util.find_spec(n) is not None for n in ours), [
        n for n in ours if importlib.util.find_spec(n) is None]


@pytest.mark.parametrize("z_order_by", [None, ["x", "st.a"]])
def test_optimize(tmp_path, z_order_by):
    """Compaction (its dictionary probe takes rows out of files larger than the probe) and Z-order
    (an external sort: sample, runs spilled and merged, files cut), nested columns included."""
    uri = str(tmp_path / "opt")
    t = DeltaTable(uri)
    n = 12_000                    # rows per file: more than the dictionary probe's 8,192
    for i in range(4):
        ids = list(range(i * n, (i + 1) * n))
        t.write(pa.table({"id": pa.array(ids, pa.int64()),
                          "x": pa.array([(k * 7919) % 1000 / 7.0 for k in ids], pa.float64()),
                          "s": pa.array([f"k{k % 300}" for k in ids]),
                          "st": pa.array([{"a": k % 50, "b": f"b{k % 9}"} for k in ids],
                                         pa.struct([("a", pa.int32()), ("b", pa.string())]))}))
    target = 16 << 20 if z_order_by is None else 1 << 16   # Z-order: sorted runs of 1 MB, spilled and merged
    result = assert_no_pandas(f"""
        from airflow_provider_delta.log import DeltaTable
        t = DeltaTable({uri!r})
        m = t.optimize(target_size={target}, z_order_by={z_order_by!r})
        RESULT = (m["numFilesRemoved"], t.snapshot().files().num_rows > 0)
    """)
    assert result == "(4, True)"
