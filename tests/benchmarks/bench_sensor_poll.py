"""One sensor poll that finds nothing new, on short and long logs, local and on S3 (moto server).

Each case runs in a fresh process, as a reschedule poke does: import, open the table,
poll once with ``commits_since(last_seen)`` (what ``CommitWatch.poll`` calls), where
``last_seen`` is the latest version. Reported: the poll's time, its storage requests
(S3: HTTP requests to the server; local: storage calls), the keys/entries those returned,
and for comparison a full listing (``latest_version()`` of a fresh table object, which
lists all of ``_delta_log``) and deltalake opening the table without files (its own way to
learn the latest version), in the same run.

    python tests/benchmarks/bench_sensor_poll.py [--local 100,100000] [--s3 100,10000] [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "objectstore"))
os.environ.setdefault("GCSFS_EXPERIMENTAL_ZB_HNS_SUPPORT", "false")

CHILD = r'''
import json, sys, time
t0 = time.perf_counter()
from airflow_provider_delta.log import DeltaTable
t1 = time.perf_counter()
mode, uri, opts, dl_opts = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
counts = {"requests": 0, "entries": 0}
if mode == "deltalake":
    import deltalake
    t1 = time.perf_counter()
    v = deltalake.DeltaTable(uri, storage_options=dl_opts or None, without_files=True).version()
    t2 = time.perf_counter()
    print(json.dumps({"import_s": t1 - t0, "work_s": t2 - t1, "result": v, **counts}))
    raise SystemExit
table = DeltaTable(uri, storage_options=opts or None)
latest = int(sys.argv[5])
st = table.storage
if st.is_local:
    for name in ("list_dir", "list_dir_from", "file_info", "read_bytes", "exists", "isdir"):
        real = getattr(st, name)
        def counted(*a, _real=real, **k):
            out = _real(*a, **k)
            counts["requests"] += 1
            counts["entries"] += len(out) if isinstance(out, list) else 0
            return out
        setattr(st, name, counted)
else:
    inner = st.fs._call_s3
    async def counted_s3(method, *a, **k):
        out = await inner(method, *a, **k)
        counts["requests"] += 1
        counts["entries"] += len(out.get("Contents", [])) if isinstance(out, dict) else 0
        return out
    st.fs._call_s3 = counted_s3
t1 = time.perf_counter()
if mode == "poll":
    new = table.commits_since(latest)
    result = new.latest
    assert new.commits == []
else:
    result = table.latest_version()
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "work_s": t2 - t1, "result": result, **counts}))
'''


def measure(mode: str, uri: str, opts: dict, dl_opts: dict, latest: int, runs: int) -> dict:
    out = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, "-c", CHILD, mode, uri, json.dumps(opts), json.dumps(dl_opts),
                               str(latest)], capture_output=True, text=True, check=True)
        out.append(json.loads(proc.stdout.strip().splitlines()[-1]))
        assert out[-1]["result"] == latest, out[-1]
    return {"work_s": statistics.median(r["work_s"] for r in out), "requests": out[-1]["requests"],
            "entries": out[-1]["entries"]}


def bench(kind: str, sizes: list[int], runs: int, uri_of, opts: dict, dl_opts: dict, table_kwargs: dict) -> list[dict]:
    from log_growth import make_long_table
    rows = []
    for n in sizes:
        t = time.perf_counter()
        uri = uri_of(n)
        make_long_table(uri, n, table_kwargs, checkpoint_near_end=True)
        print(f"# built {kind} table of {n} versions in {time.perf_counter() - t:.0f} s", file=sys.stderr)
        row = {"store": kind, "versions": n}
        for mode in ("poll", "full", "deltalake"):
            row[mode] = measure(mode, uri, opts, dl_opts, n - 1, runs)
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--local", default="100,100000")
    ap.add_argument("--s3", default="100,10000")
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-poll-"))
    rows = []
    if a.local:
        sizes = [int(x) for x in a.local.split(",")]
        rows += bench("local", sizes, a.runs, lambda n: str(work / f"local-{n}"), {}, {}, {})
    if a.s3:
        from objectstore_servers import s3_store, start_moto
        server = start_moto(work)
        try:
            store = s3_store(server)
            sizes = [int(x) for x in a.s3.split(",")]
            rows += bench("s3", sizes, a.runs, lambda n: store.uri(f"poll-{n}"), store.options,
                          store.deltalake_options, store.table_kwargs)
        finally:
            server.stop()
    print("\n| store | versions | poll (ours) | requests / keys per poll | full listing (ours) | requests / keys | deltalake open |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        p, f, d = r["poll"], r["full"], r["deltalake"]
        print(f"| {r['store']} | {r['versions']:,} | {p['work_s'] * 1000:.1f} ms | {p['requests']} / {p['entries']} | "
              f"{f['work_s'] * 1000:.1f} ms | {f['requests']} / {f['entries']} | {d['work_s'] * 1000:.1f} ms |")


if __name__ == "__main__":
    main()
