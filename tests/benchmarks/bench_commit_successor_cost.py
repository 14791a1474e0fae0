"""What the successor checks (write/commit_successor.py) cost a local commit on a long log.

Run: PYTHONPATH=<tree> python tests/benchmarks/bench_commit_successor_cost.py TABLE_DIR [N]
TABLE_DIR is a log made by /work/shared/tools/gen_log.py (copied first; the copy gets one
checkpoint so that opening it is cheap). Prints the mean time of N blind-append commits of
this tree's package, and (where this tree has it) of the post-put listing alone. Compare a run
with PYTHONPATH at a tree from before 908ce95, and ``--deltalake`` for delta-rs appends.
Measurement only: nothing is asserted.
"""
from __future__ import annotations

import json
import shutil
import statistics
import sys
import tempfile
import time


def main() -> None:
    src, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 and sys.argv[2].isdigit() else 10
    work = tempfile.mkdtemp(prefix="bench_successor_")
    uri = shutil.copytree(src, f"{work}/t")
    from airflow_provider_delta.log import AddFile, DeltaTable
    t = DeltaTable(uri)
    t.checkpoint()
    t.auto_checkpoint = False
    if "--deltalake" in sys.argv:
        import pyarrow as pa
        from deltalake import write_deltalake
        data = pa.table({"id": pa.array([1], pa.int64()), "value": [0.5], "name": ["a"], "day": ["2024-01-01"]})
        times = []
        for _ in range(n):
            s = time.perf_counter()
            write_deltalake(uri, data, mode="append")
            times.append(time.perf_counter() - s)
        print(f"deltalake append: mean {statistics.mean(times) * 1000:.1f} ms over {n}")
        return
    times = []
    for i in range(n):
        txn = t.transaction()
        txn.add_file(AddFile(f"day=2024-01-01/bench-{i}.parquet", 1, {"day": "2024-01-01"}, 1, True,
                             json.dumps({"numRecords": 1})))
        s = time.perf_counter()
        txn.commit()
        times.append(time.perf_counter() - s)
    print(f"{t.__module__.split('.')[0]} commit(): mean {statistics.mean(times) * 1000:.1f} ms, "
          f"median {statistics.median(times) * 1000:.1f} ms over {n}")
    try:
        from airflow_provider_delta.log.write.commit_successor import landed_below_newer_log
    except ImportError:
        return
    v = t.latest_version()
    s = time.perf_counter()
    for _ in range(n):
        landed_below_newer_log(t.storage, v)
    print(f"landed_below_newer_log alone: mean {(time.perf_counter() - s) / n * 1000:.1f} ms")
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
