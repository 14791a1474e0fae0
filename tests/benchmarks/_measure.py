"""One measurement in a fresh process: ``python _measure.py ENGINE OP PATH``.

The process starts cold, as an Airflow task or a reschedule poke does: nothing is
imported or warmed up before the clock starts. Phases:

- ``import_s``: importing the library and pyarrow (ours: ``airflow_provider_delta.log``;
  deltalake: ``deltalake`` and ``pyarrow``, which it needs to hand back a pyarrow table);
- ``work_s``: the operation, with whatever the library imports lazily on the way;
- ``total_s``: both, the end-to-end figure the targets are about.

``cpu_s`` is the CPU time (user + system, all threads) of both phases: on a shared,
busy machine it moves less than wall time. ``peak_mb`` is the process's own
``ru_maxrss`` (the child's peak, interpreter included). ``pandas`` says whether pandas
ended up imported. Prints one JSON line.
"""
import json
import resource
import sys
import time


def _files_deltalake(deltalake, pa, path: str) -> int:
    # through the Arrow C stream: ``pa.table(...)`` on deltalake's table would import pandas
    actions = deltalake.DeltaTable(path).get_add_actions(flatten=False)
    return pa.RecordBatchReader.from_stream(actions).read_all().num_rows


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def main() -> None:
    engine, op, path = sys.argv[1:4]
    c0 = _cpu()
    t0 = time.perf_counter()
    if engine == "ours":
        from airflow_provider_delta.log import DeltaTable
    else:
        import deltalake
        import pyarrow as pa
    t1 = time.perf_counter()
    if op == "files":
        n = DeltaTable(path).snapshot().files().num_rows if engine == "ours" else _files_deltalake(deltalake, pa, path)
    elif op == "version":
        n = DeltaTable(path).latest_version() if engine == "ours" else \
            deltalake.DeltaTable(path, without_files=True).version()
    elif op == "open_version":      # deltalake's default open: the snapshot with its file list
        n = DeltaTable(path).latest_version() if engine == "ours" else deltalake.DeltaTable(path).version()
    elif op == "checkpoint":
        if engine == "ours":
            n = DeltaTable(path).checkpoint()
        else:
            dt = deltalake.DeltaTable(path)
            dt.create_checkpoint()
            n = dt.version()
    else:
        raise SystemExit(f"unknown op {op}")
    t2 = time.perf_counter()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"import_s": t1 - t0, "work_s": t2 - t1, "total_s": t2 - t0, "cpu_s": _cpu() - c0, "peak_mb": peak,
                      "result": n, "pandas": "pandas" in sys.modules}))


if __name__ == "__main__":
    main()
