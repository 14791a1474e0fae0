"""Run one measurement in a fresh process: ``python _measure.py ENGINE OP PATH``.

Prints one JSON line: seconds for the operation and the peak RSS growth over the
process's footprint after imports (so both engines are charged only for the work).
"""
import json
import resource
import sys
import time


def _rss_mb() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def main() -> None:
    engine, op, path = sys.argv[1:4]
    import pyarrow as pa
    if engine == "ours":
        from airflow_provider_delta.log import DeltaTable
        # the facade imports its modules lazily; import them now, as deltalake's import already did
        import airflow_provider_delta.log.history  # noqa: F401
        import airflow_provider_delta.log.schema  # noqa: F401
        import airflow_provider_delta.log.snapshot  # noqa: F401
    else:
        import deltalake
    # pyarrow imports pandas lazily on its first Python->Arrow conversion; that is an
    # import cost, not table work, so trigger it before timing (for both engines).
    pa.array([0])
    base = _rss_mb()
    t0 = time.perf_counter()
    if op == "files":
        if engine == "ours":
            n = DeltaTable(path).snapshot().files().num_rows
        else:
            dt = deltalake.DeltaTable(path)
            n = pa.table(dt.get_add_actions(flatten=False)).num_rows
    elif op == "version":
        if engine == "ours":
            n = DeltaTable(path).latest_version()
        else:
            n = deltalake.DeltaTable(path, without_files=True).version()
    elif op == "checkpoint":
        if engine == "ours":
            from airflow_provider_delta.log import DeltaTable as T
            n = T(path).checkpoint()
        else:
            deltalake.DeltaTable(path).create_checkpoint()
            n = 0
    else:
        raise SystemExit(f"unknown op {op}")
    secs = time.perf_counter() - t0
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"seconds": secs, "peak_mb": max(0.0, peak - base), "result": n}))


if __name__ == "__main__":
    main()
