"""OPTIMIZE in real processes: kill -9 at random moments loses nothing; memory follows the target size.

- A child process appends (recording each returned append in a ledger) and runs OPTIMIZE
  (compaction and Z-order alternately) in a loop, printing ``optimizing`` as it starts one and
  ``optimized`` once it returned; the test SIGKILLs it at a random moment after the start of an
  OPTIMIZE (during it or the appends after it), and the first kill only once an OPTIMIZE has
  committed - waiting for the child's markers, not for wall-clock time, so a loaded machine
  cannot make every kill land before the first OPTIMIZE. Then our reader and deltalake open the
  table and agree, every recorded row is there exactly once, and a fresh OPTIMIZE commits.
  ``DELTA_KILLS`` sets the kills (default 3).
- A Z-order of one partition of about 60 MB of Arrow data, with a 4 MB target, runs in a
  fresh process; the peak of pyarrow's memory pool stays a fraction of the partition
  (the external sort holds about one output file's rows at a time).
"""
from __future__ import annotations

import json
import os
import queue
import random
import signal
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable as RsTable

from airflow_provider_delta.log import DeltaTable

KILLS = int(os.environ.get("DELTA_KILLS", "3"))

CHILD = textwrap.dedent("""
    import os, sys
    import pyarrow as pa
    from airflow_provider_delta.log import DeltaTable
    uri, ledger, start = sys.argv[1:4]
    table = DeltaTable(uri)
    out = open(ledger, "a")
    print("ready", flush=True)
    seq = int(start)
    while True:
        for _ in range(3):
            seq += 1
            table.write(pa.table({"p": [str(seq % 2)] * 50, "id": list(range(seq * 50, seq * 50 + 50)),
                                  "x": [float(i % 7) for i in range(50)]}))
            out.write(f"{seq}\\n"); out.flush(); os.fsync(out.fileno())
        print("optimizing", flush=True)
        if seq % 2:
            table.optimize(target_size=1 << 20)
        else:
            table.optimize(z_order_by=["x", "id"], target_size=2000)
        print("optimized", flush=True)
""")


def _lines(proc: subprocess.Popen) -> tuple["queue.Queue[str | None]", threading.Thread]:
    """The child's stdout lines, read by a thread (None at its end), so the test can wait with a deadline."""
    lines: "queue.Queue[str | None]" = queue.Queue()

    def pump() -> None:
        for line in proc.stdout:
            lines.put(line.strip())
        lines.put(None)
    thread = threading.Thread(target=pump, daemon=True)
    thread.start()
    return lines, thread


def _wait_for(lines: "queue.Queue[str | None]", proc: subprocess.Popen, marker: str, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            line = lines.get(timeout=max(0.0, deadline - time.monotonic()))
        except queue.Empty:
            pytest.fail(f"no {marker!r} from the child in {timeout} s")
        if line is None:
            proc.wait(timeout=30)
            pytest.fail(f"child exited by itself before {marker!r}: {proc.stderr.read()[-2000:]}")
        if line == marker:
            return


def test_kill_nine_during_optimize_loses_nothing(tmp_path):
    uri, ledger = str(tmp_path / "t"), str(tmp_path / "ledger")
    DeltaTable(uri).write(pa.table({"p": ["0"], "id": pa.array([-1], pa.int64()), "x": [0.0]}), partition_by=["p"])
    rng = random.Random(1234)
    start = 0
    for kill in range(KILLS):
        proc = subprocess.Popen([sys.executable, "-c", CHILD, uri, ledger, str(start)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        lines, reader = _lines(proc)
        try:
            _wait_for(lines, proc, "ready")
            if kill == 0:
                _wait_for(lines, proc, "optimized")     # an OPTIMIZE committed: the history check below holds
            _wait_for(lines, proc, "optimizing")
            try:
                proc.wait(timeout=rng.uniform(0.0, 1.0))
                pytest.fail(f"child exited by itself: {proc.stderr.read()[-2000:]}")
            except subprocess.TimeoutExpired:
                pass
            os.kill(proc.pid, signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait(timeout=30)
            reader.join(timeout=30)        # EOF once the child is gone; then its pipe can be closed
            proc.stdout.close()
            proc.stderr.close()
        start += 10_000
        recorded = [int(s) for s in open(ledger).read().split()]
        ids = DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist()
        assert len(ids) == len(set(ids)), "a row is there twice"
        expected = {-1} | {i for seq in recorded for i in range(seq * 50, seq * 50 + 50)}
        assert expected <= set(ids), f"{len(expected - set(ids))} recorded row(s) lost"
        assert sorted(RsTable(uri).to_pyarrow_table().column("id").to_pylist()) == sorted(ids)
    history = [h["operation"] for h in DeltaTable(uri).history()]
    assert "OPTIMIZE" in history
    assert DeltaTable(uri).optimize(target_size=1 << 20)["numFilesRemoved"] >= 0


MEMORY_CHILD = textwrap.dedent("""
    import json, sys
    import pyarrow as pa
    from airflow_provider_delta.log import DeltaTable
    table = DeltaTable(sys.argv[1])
    pool = pa.default_memory_pool()
    m = table.optimize(z_order_by=["x", "y"], target_size=int(sys.argv[2]), max_concurrent=1)
    print(json.dumps({"peak": pool.max_memory(), "added": m["numFilesAdded"]}))
""")


def _points_table(uri: str, files: int, rows_per: int = 100_000) -> int:
    """A table of ``files`` appends of random points; returns its size as Arrow data."""
    rng = np.random.default_rng(9)
    table = DeltaTable(uri)
    for i in range(files):
        table.write(pa.table({"id": pa.array(range(i * rows_per, (i + 1) * rows_per), pa.int64()),
                              "x": rng.random(rows_per), "y": rng.random(rows_per), "z": rng.random(rows_per)}))
    return files * rows_per * 32


def _zorder_peak(uri: str, target: int) -> dict:
    out = subprocess.run([sys.executable, "-c", MEMORY_CHILD, uri, str(target)], capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_zorder_memory_follows_the_target_size_not_the_partition(tmp_path):
    """The same target size on a partition four times larger: the peak of pyarrow's pool stays
    about the same (it holds a sample, a row group and one output file's rows), far below the data."""
    small, big = str(tmp_path / "small"), str(tmp_path / "big")
    _points_table(small, 10)
    big_bytes = _points_table(big, 40)          # 128 MB of column data in one partition
    target = sum(DeltaTable(small).snapshot().files().column("size").to_pylist()) // 8
    p_small, p_big = _zorder_peak(small, target), _zorder_peak(big, target)
    assert p_small["added"] >= 6 and p_big["added"] >= 28
    print(p_small, p_big, big_bytes)
    assert p_big["peak"] < p_small["peak"] * 1.6, (p_small, p_big)
    assert p_big["peak"] < big_bytes * 0.35, (p_big, big_bytes)
