"""Run every benchmark script in this folder, one after the other (``make bench``)."""
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SCRIPTS = ["bench_read.py", "bench_ict_lookup.py", "bench_commit.py", "bench_checkpoint.py", "bench_managed.py",
           "bench_delta_spark_operator.py", "bench_deletion_vectors.py", "bench_change_feed.py",
           "bench_optimize.py", "bench_fresh_latest_version.py", "bench_append_encoded.py"]

if __name__ == "__main__":
    failed = []
    for name in SCRIPTS:
        print(f"\n=== {name} ===", flush=True)
        if subprocess.run([sys.executable, str(HERE / name)]).returncode != 0:
            failed.append(name)
    if failed:
        sys.exit(f"benchmarks failed: {failed}")
