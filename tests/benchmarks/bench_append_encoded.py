#!/usr/bin/env python3
"""Benchmark: a small append into partitions whose paths need encoding, ours vs deltalake (delta-rs).

Not a test (no assertions on time). Since 04f769a an add whose path writers may spell
differently (non-ASCII, ``%``, spaces: ``base/path_spelling.spelling_may_differ``) is looked up
among the live files so a re-add keeps the log's spelling; that loads the table's file list,
which a plain ASCII append never does. This measures what that costs an Airflow task.

Tables: ``--files`` live files (default 1,000 and 10,000) in 20 partitions of a string column
``city``, in commits of 100 adds plus a checkpoint at the latest version (automatic checkpoints
off for both engines: ``delta.checkpointInterval`` 1,000,000). Two spellings of the partition
values: ``ascii`` (``zurich-7``) and ``encoded`` (``Zürich 7 50%``: non-ASCII, a space and
``%``). Only the log is synthetic: the first commit is a real write of one file per partition,
the other adds repeat its paths under new file names (an append never opens old files).

Each run copies the table and appends 100 rows into two partitions in a fresh process
(cold: imports of the library and pyarrow timed, as an Airflow task pays them; the rows are read
from an Arrow IPC file inside the timed part):

* ``ours``:      ``DeltaTable(p).write(batch, mode="append")`` (a new object, as a task opens it)
* ``deltalake``: ``write_deltalake(p, batch, mode="append")``

The engines alternate run by run; reported per case: median, min and max of total (import +
append) wall time and of CPU time over ``--repeat`` runs, and the ratio ours / deltalake of the
medians; the load average is printed beside.

    python tests/benchmarks/bench_append_encoded.py
    python tests/benchmarks/bench_append_encoded.py --files 1000,10000 --repeat 7
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]
sys.path.insert(0, str(HERE.parent))
from bench_read import child_env, compile_imports  # noqa: E402  (children's bytecode cache)
PROPS = {"delta.checkpointInterval": "1000000"}
PARTITIONS = 20


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def city(kind: str, i: int) -> str:
    return f"Zürich {i} 50%" if kind == "encoded" else f"zurich-{i}"


def batch(kind: str, rows: int, first: int = 0):
    import pyarrow as pa
    return pa.Table.from_arrays([pa.array(range(first, first + rows), pa.int64()),
                                 pa.array([float(i) for i in range(rows)], pa.float64()),
                                 pa.array([city(kind, i % 2) for i in range(rows)], pa.string())],
                                names=["id", "value", "city"])


def write_batch_file(path: Path, kind: str) -> None:
    """The appended rows as an Arrow IPC file: the child reads it (timed) instead of building
    arrays from Python objects, which in pyarrow 26 imports pandas (``pa.array`` asks whether
    its argument is a pandas object), a cost of the caller's, not of the append."""
    import pyarrow as pa
    data = batch(kind, 100)
    with pa.ipc.new_file(str(path), data.schema) as writer:
        writer.write_table(data)


def child(impl: str, path: str, batch_file: str) -> None:
    c0, t0 = _cpu(), time.perf_counter()
    if impl == "ours":
        sys.path.insert(0, str(ROOT))
        from airflow_provider_delta.log import DeltaTable
        import pyarrow as pa
        t1 = time.perf_counter()
        version = DeltaTable(path).write(pa.ipc.open_file(batch_file).read_all(), mode="append")
    else:
        from deltalake import DeltaTable as RsTable, write_deltalake
        import pyarrow as pa
        t1 = time.perf_counter()
        write_deltalake(path, pa.ipc.open_file(batch_file).read_all(), mode="append")
        version = RsTable(path, without_files=True).version()
    t2 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "total_s": t2 - t0, "cpu_s": _cpu() - c0, "version": version,
                      "pandas": "pandas" in sys.modules}))


def make_table(path: Path, files: int, kind: str) -> None:
    """A real first commit (one file per partition), then synthetic commits of 100 adds
    repeating its partition directories, then a checkpoint at the latest version."""
    import pyarrow as pa
    sys.path.insert(0, str(ROOT))
    from airflow_provider_delta.log import DeltaTable
    first = pa.table({"id": pa.array(range(PARTITIONS), pa.int64()),
                      "value": pa.array([0.5] * PARTITIONS, pa.float64()),
                      "city": pa.array([city(kind, i) for i in range(PARTITIONS)], pa.string())})
    table = DeltaTable.create(str(path), first.schema, partition_by=["city"], properties=PROPS)
    table.write(first, mode="append")
    log = path / "_delta_log"
    version = table.latest_version()
    adds = [json.loads(line)["add"] for line in (log / f"{version:020d}.json").read_text().splitlines()
            if line.startswith('{"add"')]
    made = len(adds)
    while made < files:
        version += 1
        lines = [json.dumps({"commitInfo": {"timestamp": 1_700_000_000_000 + version, "operation": "WRITE"}})]
        for i in range(min(100, files - made)):
            template = adds[(made + i) % len(adds)]
            directory = template["path"].rsplit("/", 1)[0]
            lines.append(json.dumps({"add": {**template, "path": f"{directory}/part-00000-{uuid.uuid4()}.c000.snappy.parquet"}}))
        made += len(lines) - 1
        (log / f"{version:020d}.json").write_text("\n".join(lines) + "\n")
    DeltaTable(str(path)).checkpoint()


def run(impl: str, source: Path, work: Path, kind: str, env: dict[str, str]) -> dict:
    dst = work / f"{impl}-{kind}"
    if dst.exists():
        shutil.rmtree(dst)
    shutil.copytree(source, dst)
    out = subprocess.run([sys.executable, str(HERE), "--child", impl, str(dst), str(work / f"batch-{kind}.arrow")],
                         check=True, capture_output=True, text=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _fmt(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} s ({min(values):.3f}-{max(values):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", nargs=3)
    ap.add_argument("--files", default="1000,10000")
    ap.add_argument("--repeat", type=int, default=7)
    ap.add_argument("--kinds", default="ascii,encoded")
    args = ap.parse_args()
    if args.child:
        child(*args.child)
        return
    with tempfile.TemporaryDirectory(prefix="bench-append-encoded-") as d:
        work = Path(d)
        env = child_env(work)
        compile_imports(env)
        for files in (int(f) for f in args.files.split(",")):
            for kind in args.kinds.split(","):
                source = work / f"source-{kind}-{files}"
                make_table(source, files, kind)
                write_batch_file(work / f"batch-{kind}.arrow", kind)
                runs: dict[str, list[dict]] = {"ours": [], "deltalake": []}
                for _ in range(args.repeat):
                    for impl in runs:
                        runs[impl].append(run(impl, source, work, kind, env))
                med = {}
                for impl, rs in runs.items():
                    med[impl] = statistics.median(r["total_s"] for r in rs)
                    print(f"{files:>6,} files {kind:8s} {impl:10s} total {_fmt([r['total_s'] for r in rs])}  "
                          f"cpu {_fmt([r['cpu_s'] for r in rs])}  import {statistics.median(r['import_s'] for r in rs):.3f} s"
                          f"  pandas imported: {any(r['pandas'] for r in rs)}",
                          flush=True)
                print(f"{files:>6,} files {kind:8s} ratio ours/deltalake {med['ours'] / med['deltalake']:.2f}  "
                      f"(load {' '.join(f'{x:.1f}' for x in os.getloadavg())})", flush=True)
                shutil.rmtree(source)


if __name__ == "__main__":
    main()
