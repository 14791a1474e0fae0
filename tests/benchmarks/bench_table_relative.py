#!/usr/bin/env python
"""Usage: python tests/benchmarks/bench_table_relative.py [N] [s3|azure|local]

Time data_paths.table_relative over 100k absolute paths, as vacuum's _place sends a shallow clone's
adds (every path absolute, in the source table), in a fresh process. Prints seconds per store kind."""
import os, sys, tempfile, time
from airflow_provider_delta.log.base.storage import Storage
from airflow_provider_delta.log.maintenance import vacuum
N = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000
kind = sys.argv[2] if len(sys.argv) > 2 else "s3"
if kind == "s3":
    storage = Storage("s3://bucket/clone", {"anon": True})
    paths = [f"s3://bucket/source/part={i % 10}/f-{i:07d}.parquet" for i in range(N)]
elif kind == "azure":
    storage = Storage("abfs://c/clone", {"account_name": "acct", "anon": True})
    paths = [f"abfss://c@acct.dfs.core.windows.net/source/f-{i:07d}.parquet" for i in range(N)]
else:
    d = tempfile.mkdtemp()
    os.makedirs(os.path.join(d, "clone")); os.makedirs(os.path.join(d, "source"))
    storage = Storage(os.path.join(d, "clone"))
    paths = [f"file://{d}/source/f-{i:07d}.parquet" for i in range(N)]
out, undecided = [], []
t = time.process_time()
vacuum._place(storage, paths, out, undecided)
print(f"{kind} {N} paths: {time.process_time() - t:.3f} cpu s ({len(out)} in, {len(undecided)} undecided)")
