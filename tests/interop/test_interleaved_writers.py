"""Interleaved writers: Delta Spark (this process's session) and our writer (a subprocess)
append to one table at the same time. No commit is lost or duplicated, versions are
contiguous, and both readers agree on the rows, the files and the history.

Half of our commits are made from a snapshot that Delta Spark has already moved past
(the writer waits, bounded, for Spark's next commit before committing), so our
lost-the-race path (read the winning commits, check conflicts, retry at the next
version) runs for sure; Delta Spark's own retry path runs whenever we win a race.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pyarrow as pa
import pytest

from interop_support import assert_same, compare_table, spark_latest_version
from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark

N = 10  # commits per writer

OUR_WRITER = textwrap.dedent("""
    import json, os, sys, time
    import pyarrow as pa, pyarrow.parquet as pq
    from airflow_provider_delta.log import DeltaTable
    from airflow_provider_delta.log.base.commit_actions import AddFile

    path, n, spark_done = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    table = DeltaTable(path)
    table.auto_checkpoint = False
    print("ready", flush=True)
    sys.stdin.readline()
    done = []
    for i in range(n):
        data = pa.table({"id": pa.array([1000 + i], pa.int64()), "writer": ["ours"]})
        if i % 2:
            version = table.write(data, mode="append")
        else:
            # commit from a stale snapshot: wait (bounded) until Delta Spark commits after it
            read = table.latest_version()
            deadline = time.time() + 30
            while (table.latest_version() == read and time.time() < deadline
                   and not os.path.exists(spark_done)):
                time.sleep(0.01)
            rel = f"ours-{i}.parquet"
            pq.write_table(data, os.path.join(path, rel))
            with table.transaction(operation="WRITE", operation_parameters={"mode": "Append"},
                                   read_version=read) as txn:
                txn.add_file(AddFile(rel, size=os.path.getsize(os.path.join(path, rel)),
                                     modification_time=int(time.time() * 1000)))
            version = txn.version
        done.append(version)
    print(json.dumps(done), flush=True)
""")


def test_delta_spark_and_our_writer_append_at_the_same_time(spark, tmp_path):
    p = str(tmp_path / "shared")
    DeltaTable.create(p, pa.schema([("id", pa.int64()), ("writer", pa.string())]))                # v0
    spark_done = tmp_path / "spark-done"
    proc = subprocess.Popen([sys.executable, "-c", OUR_WRITER, p, str(N), str(spark_done)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready", proc.stderr.read()
        proc.stdin.write("go\n")
        proc.stdin.flush()
        for i in range(N):
            spark.createDataFrame([(2000 + i, "spark")], "id long, writer string") \
                .write.format("delta").mode("append").save(p)
        spark_done.touch()
        out, err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, err
    ours = json.loads(out.strip().splitlines()[-1])

    assert len(set(ours)) == N and all(1 <= v <= 2 * N for v in ours), ours
    assert DeltaTable(p).latest_version() == 2 * N
    assert spark_latest_version(spark, p) == 2 * N
    history = {h["version"]: h for h in DeltaTable(p).history()}
    assert sorted(history) == list(range(0, 2 * N + 1))
    engines = [history[v].get("engineInfo", "") for v in range(1, 2 * N + 1)]
    assert sum(e.startswith("airflow-provider-delta") for e in engines) == N, engines
    assert sum("Delta-Lake" in e for e in engines) == N, engines
    assert sorted(v for v in range(1, 2 * N + 1) if history[v]["engineInfo"].startswith("airflow")) == sorted(ours)
    retried = [v for v in ours if history[v].get("readVersion", v - 1) < v - 1]
    assert retried, "none of our commits lost a race to Delta Spark: the retry path did not run"

    expected = sorted([1000 + i for i in range(N)] + [2000 + i for i in range(N)])
    assert sorted(DeltaTable(p).snapshot().to_pyarrow().column("id").to_pylist()) == expected
    assert sorted(r["id"] for r in spark.sql(f"SELECT id FROM delta.`{p}`").collect()) == expected
    # files, protocol, metadata and rows at the end; history and timestamps of every commit
    assert_same(compare_table(spark, p, versions=[2 * N]), "interleaved writers' table")
