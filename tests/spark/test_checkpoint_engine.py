"""The Spark checkpoint engine: the same checkpoint as the local writer, read alike by every engine.

Logs come from ``../shared/tools/gen_log.py`` (plus hand-written commits with deletion
vectors, an encoded path, txn and domainMetadata actions) and from Delta Spark itself.
Each case writes the checkpoint twice on copies of one table, with the Spark engine
(the shared session) and with the local writer, at the same ``now_ms``, and compares
them part by part as sorted rows; then our reader, ``deltalake`` and Delta Spark read a
copy whose commits up to the checkpoint are gone. The last tests run the job through
``spark-submit``: killed midway, and from ``DeltaCheckpointOperator(engine="spark")``.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import unquote

import deltalake
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import (CorruptLogError, DeltaTable, InvalidArgumentError, UnsupportedFeatureError,
                                        VersionNotFoundError, plan_checkpoint)
from airflow_provider_delta.log.maintenance import checkpoint_sources
from airflow_provider_delta.log.maintenance.checkpoint import write_checkpoint
from airflow_provider_delta.spark.checkpoint_engine import spark_checkpoint
from task_context import task_context

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
GEN_LOG = ROOT.parent / "shared" / "tools" / "gen_log.py"
JOB = ROOT / "airflow_provider_delta" / "spark" / "checkpoint_job.py"
LOG = "_delta_log"
START = 1_700_000_000_000          # gen_log's first commit timestamp
WEEK = 7 * 24 * 3600 * 1000
#: tombstones of versions below 25 have outlived the default retention (one week), later ones not
NOW = START + WEEK + 25_500
DV1 = {"storageType": "u", "pathOrInlineDv": "ab^-aqEH.-t@S}K{vb[*k^", "offset": 1, "sizeInBytes": 36,
       "cardinality": 2}
DV2 = {**DV1, "offset": 37, "cardinality": 3}


# ----------------------------------------------------------------------- logs
def gen_log(path: Path, commits: int = 50, adds: int = 20, removes: int = 5) -> Path:
    subprocess.run([sys.executable, str(GEN_LOG), str(path), "--commits", str(commits), "--adds", str(adds),
                    "--removes", str(removes)], check=True, capture_output=True)
    return path


def _commit(path: Path, version: int, actions: list[dict]) -> None:
    ts = START + 1000 * (version + 1)
    lines = [{"commitInfo": {"timestamp": ts, "operation": "WRITE"}}] + actions
    (path / LOG / f"{version:020d}.json").write_text("\n".join(json.dumps(a) for a in lines) + "\n")


def add_dv_commits(path: Path) -> int:
    """Two commits after a gen_log log: deletion vectors on one file (twice), an encoded path, txn, domains.

    The first upgrades the protocol to table features (deletionVectors, domainMetadata).
    Returns the last version.
    """
    snap = DeltaTable(str(path)).snapshot()
    v = snap.version + 1
    row = snap.files().slice(0, 1).to_pylist()[0]
    target, pv, size = row["path"], dict(row["partition_values"]), row["size"]
    ts = START + 1000 * (v + 1)
    base = {"path": target, "partitionValues": pv, "size": size, "dataChange": True}
    _commit(path, v, [
        {"protocol": {"minReaderVersion": 3, "minWriterVersion": 7, "readerFeatures": ["deletionVectors"],
                      "writerFeatures": ["deletionVectors", "domainMetadata"]}},
        {"txn": {"appId": "app-1", "version": 3, "lastUpdated": ts}},
        {"domainMetadata": {"domain": "user.a", "configuration": "{\"x\": 1}", "removed": False}},
        {"remove": {**base, "deletionTimestamp": ts}},
        {"add": {**base, "modificationTime": ts, "deletionVector": DV1, "stats": "{\"numRecords\": 1000}"}},
        {"add": {"path": "day=2024-01-02/odd%20name%25.parquet", "partitionValues": {"day": "2024-01-02"},
                 "size": 7, "modificationTime": ts, "dataChange": True}},
    ])
    _commit(path, v + 1, [
        {"txn": {"appId": "app-1", "version": 4, "lastUpdated": ts + 1000}},
        {"txn": {"appId": "app-2", "version": 1, "lastUpdated": ts + 1000}},
        {"domainMetadata": {"domain": "user.a", "configuration": "", "removed": True}},
        {"domainMetadata": {"domain": "user.b", "configuration": "{}", "removed": False}},
        {"remove": {**base, "deletionTimestamp": ts + 1000, "deletionVector": DV1}},
        {"add": {**base, "modificationTime": ts + 1000, "deletionVector": DV2, "stats": "{\"numRecords\": 1000}"}},
    ])
    return v + 1


def copies(src: Path, tmp_path: Path, *names: str) -> list[Path]:
    out = []
    for name in names:
        dst = tmp_path / name
        shutil.copytree(src, dst)
        out.append(dst)
    return out


# ---------------------------------------------------------------- comparing
def checkpoint_files(path: Path, version: int) -> list[str]:
    return sorted(n for n in os.listdir(path / LOG) if n.startswith(f"{version:020d}.checkpoint."))


def sorted_rows(table: pa.Table) -> list[str]:
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in table.to_pylist())


def assert_same_checkpoint(ours: Path, local: Path, version: int) -> None:
    """Same part names, and per part the same parquet schema and the same rows (in any order)."""
    names = checkpoint_files(ours, version)
    assert names and names == checkpoint_files(local, version)
    for name in names:
        a, b = pq.read_table(ours / LOG / name), pq.read_table(local / LOG / name)
        assert a.schema == b.schema, name
        assert a.num_rows == b.num_rows and sorted_rows(a) == sorted_rows(b), name
    last_a = json.loads((ours / LOG / "_last_checkpoint").read_text())
    last_b = json.loads((local / LOG / "_last_checkpoint").read_text())
    last_a.pop("sizeInBytes"), last_b.pop("sizeInBytes")     # row order within a part may differ
    assert last_a == last_b and last_a["version"] == version


def state_of(snap) -> dict:
    files = snap.files()
    return {"version": snap.version,
            "files": sorted(zip(files["path"].to_pylist(), [json.dumps(d) for d in
                                                            files["deletion_vector"].to_pylist()])),
            "tombstones": sorted(snap.tombstones(now_ms=NOW)["path"].to_pylist()),
            "txns": snap.transactions(include_expired=True), "domains": snap.domain_metadata()}


def checkpoint_only(path: Path, version: int, tmp_path: Path) -> Path:
    """A copy of ``path`` without the commits up to ``version``: readers must use its checkpoint."""
    dst = tmp_path / f"{path.name}-cp-only"
    shutil.copytree(path, dst)
    for name in os.listdir(dst / LOG):
        if name.endswith(".json") and name[:20].isdigit() and ".checkpoint." not in name and int(name[:20]) <= version:
            os.remove(dst / LOG / name)
    return dst


def spark_files(spark, path: Path) -> set[str]:
    return {unquote(f).split(str(path), 1)[1].lstrip("/") for f in spark.read.format("delta").load(str(path))
            .inputFiles()}


def spark_version(spark, path: Path) -> int:
    return spark.sql(f"DESCRIBE HISTORY delta.`{path}` LIMIT 1").collect()[0]["version"]


# ------------------------------------------------------------------ gen_log
@pytest.fixture(scope="module")
def gen_table(tmp_path_factory) -> Path:
    path = gen_log(tmp_path_factory.mktemp("gen") / "t")
    add_dv_commits(path)
    return path


@pytest.mark.parametrize("parts", [None, 3])
def test_same_checkpoint_as_the_local_writer_from_json_commits(spark, gen_table, tmp_path, parts, monkeypatch):
    monkeypatch.setattr(checkpoint_sources, "COMMIT_BYTES_PER_SOURCE", 8 << 10)   # many read tasks
    ours, local = copies(gen_table, tmp_path, "ours", "local")
    plan = plan_checkpoint(DeltaTable(str(ours)), parts=parts, now_ms=NOW)
    assert len(plan.sources) > 5 and plan.parts == (parts or 1)
    info = spark_checkpoint(spark, DeltaTable(str(ours)), parts=parts, now_ms=NOW)
    write_checkpoint(DeltaTable(str(local)), parts=parts, now_ms=NOW)
    assert_same_checkpoint(ours, local, info["version"])
    assert not [n for n in os.listdir(ours / LOG) if n.endswith(".tmp")]
    expected = state_of(DeltaTable(str(gen_table)).snapshot())
    assert ("day=2024-01-02/odd name%.parquet", "null") in expected["files"]          # decoded
    assert sum(1 for p, dv in expected["files"] if dv != "null") == 1                    # the DV2 add
    assert expected["txns"].keys() == {"app-1", "app-2"} and expected["domains"] == {"user.b": "{}"}
    # some tombstones expired at NOW, some did not
    assert 0 < len(expected["tombstones"]) < 5 * 49 + 2
    got = DeltaTable(str(checkpoint_only(ours, info["version"] - 1, tmp_path))).snapshot()
    assert got.segment.checkpoint_version == info["version"] and state_of(got) == expected


def test_from_a_multipart_checkpoint_and_later_commits(spark, gen_table, tmp_path, monkeypatch):
    ours, local = copies(gen_table, tmp_path, "ours", "local")
    for t in (ours, local):
        write_checkpoint(DeltaTable(str(t)), version=29, parts=2, now_ms=NOW)
    for name in checkpoint_files(ours, 29):     # row groups of 100 rows, read by tasks of 2 row groups
        pq.write_table(pq.read_table(ours / LOG / name), ours / LOG / name, row_group_size=100)
    monkeypatch.setattr(checkpoint_sources, "ROWS_PER_SOURCE", 150)
    plan = plan_checkpoint(DeltaTable(str(ours)), version=45, parts=2, now_ms=NOW)
    parquet = [s for s in plan.sources if s.kind == "parquet"]
    assert plan.checkpoint_version == 29 and len(parquet) >= 4
    assert sorted(g for s in parquet for g in s.row_groups) == sorted(
        g for name in checkpoint_files(ours, 29) for g in range(pq.ParquetFile(ours / LOG / name).num_row_groups))
    spark_checkpoint(spark, DeltaTable(str(ours)), version=45, parts=2, now_ms=NOW)
    write_checkpoint(DeltaTable(str(local)), version=45, parts=2, now_ms=NOW)
    assert_same_checkpoint(ours, local, 45)

    # readers on a copy holding only this checkpoint and the commits after it
    only = checkpoint_only(ours, 45, tmp_path)
    expected = DeltaTable(str(gen_table)).snapshot()
    ours_snap = DeltaTable(str(only)).snapshot()
    assert ours_snap.segment.checkpoint_version == 45 and state_of(ours_snap) == state_of(expected)
    paths = {p for p, _ in state_of(expected)["files"]}
    rs = deltalake.DeltaTable(str(only))
    assert rs.version() == expected.version
    assert {unquote(p) for p in rs.get_add_actions(flatten=True).column("path").to_pylist()} == paths
    assert spark_version(spark, only) == expected.version
    assert spark_files(spark, only) == paths


# ------------------------------------------------------------- Delta Spark
def test_delta_spark_table_with_its_checkpoint_and_deletion_vectors(spark, tmp_path):
    src = tmp_path / "spark-made"
    rows = "SELECT id, CAST(id % 4 AS STRING) AS p FROM range({}, {})"
    spark.sql(f"CREATE TABLE delta.`{src}` USING delta PARTITIONED BY (p) TBLPROPERTIES "
              f"('delta.enableDeletionVectors' = 'true', 'delta.checkpointInterval' = '3') AS {rows.format(0, 40)}")
    for i in range(1, 4):                       # Delta Spark checkpoints version 3 itself
        spark.sql(rows.format(40 * i, 40 * i + 40)).repartition(2).write.format("delta").mode("append").save(str(src))
    spark.sql(f"DELETE FROM delta.`{src}` WHERE id % 7 = 0")       # deletion vectors (v4)
    spark.sql(f"DELETE FROM delta.`{src}` WHERE p = '3'")          # whole files removed (v5)
    snap = DeltaTable(str(src)).snapshot()
    assert snap.version == 5 and snap.segment.checkpoint_version == 3
    assert snap.protocol.has_reader_feature("deletionVectors")
    assert snap.files()["deletion_vector"].null_count < snap.num_files()
    now = int(time.time() * 1000)
    ours, local = copies(src, tmp_path, "ours", "local")
    info = spark_checkpoint(spark, DeltaTable(str(ours)), version=4, parts=2, now_ms=now)
    write_checkpoint(DeltaTable(str(local)), version=4, parts=2, now_ms=now)
    assert_same_checkpoint(ours, local, 4)
    assert info["numOfAddFiles"] == DeltaTable(str(src)).snapshot(version=4).num_files()

    only = checkpoint_only(ours, 4, tmp_path)
    assert spark.read.format("delta").load(str(only)).count() == spark.read.format("delta").load(str(src)).count()
    assert spark_version(spark, only) == 5
    rs = deltalake.DeltaTable(str(only))       # deltalake lists files of DV tables (it reads no rows of them)
    assert rs.version() == 5
    assert set(rs.get_add_actions(flatten=True).column("path").to_pylist()) == set(snap.files()["path"].to_pylist())
    assert state_of(DeltaTable(str(only)).snapshot()) == state_of(snap)


def test_v2_checkpoint_table_gets_sidecars(spark, tmp_path):
    path = tmp_path / "v2"
    t = DeltaTable.create(str(path), pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_by=["p"],
                          properties={"delta.checkpointPolicy": "v2", "delta.feature.domainMetadata": "supported"})
    t.auto_checkpoint = False
    for i in range(6):
        t.write(pa.table({"id": [i, 100 + i], "p": ["a", "b"]}))
    t.write(pa.table({"id": [7], "p": ["c"]}), mode="overwrite")
    with t.transaction() as txn:
        txn.set_txn("app", 7)
        txn.set_domain_metadata("user.domain", '{"k": 1}')
    expected = t.snapshot()
    info = spark_checkpoint(spark, DeltaTable(str(path)), parts=3)
    manifest = info["v2Checkpoint"]["path"]
    assert checkpoint_files(path, expected.version) == [manifest] and manifest.endswith(".parquet")
    sidecars = sorted(os.listdir(path / LOG / "_sidecars"))
    assert len(sidecars) == 3
    refs = pq.read_table(path / LOG / manifest).column("sidecar").drop_null().to_pylist()
    assert sorted(r["path"] for r in refs) == sidecars
    only = checkpoint_only(path, expected.version - 1, tmp_path)    # Delta Spark wants the commit file of the version
    got = DeltaTable(str(only)).snapshot()
    assert got.segment.checkpoint_version == expected.version
    assert sorted(got.files()["path"].to_pylist()) == sorted(expected.files()["path"].to_pylist())
    assert got.transaction_version("app") == 7 and got.domain_metadata() == {"user.domain": '{"k": 1}'}
    # deltalake does not read v2Checkpoint tables; Delta Spark does
    assert [r.asDict() for r in spark.read.format("delta").load(str(only)).collect()] == [{"id": 7, "p": "c"}]
    assert spark_version(spark, only) == expected.version


# ----------------------------------------------------------------- refusals
def _listing(path: Path) -> list[str]:
    return sorted(os.listdir(path / LOG))


@pytest.mark.parametrize("kwargs,error", [
    ({"parts": 0}, InvalidArgumentError), ({"parts": "3"}, InvalidArgumentError),
    ({"version": 99}, VersionNotFoundError), ({"version": -1}, InvalidArgumentError),
    ({"actions_per_part": 0}, InvalidArgumentError)])
def test_bad_arguments_are_typed_errors_and_change_nothing(spark, gen_table, tmp_path, kwargs, error):
    (path,) = copies(gen_table, tmp_path, "t")
    before = _listing(path)
    with pytest.raises(error):
        spark_checkpoint(spark, DeltaTable(str(path)), **kwargs)
    assert _listing(path) == before


def test_the_feature_gate_comes_first(spark, gen_table, tmp_path):
    (path,) = copies(gen_table, tmp_path, "t")
    v = DeltaTable(str(path)).latest_version() + 1
    _commit(path, v, [{"protocol": {"minReaderVersion": 1, "minWriterVersion": 7,
                                    "writerFeatures": ["someFutureFeature"]}}])
    before = _listing(path)
    with pytest.raises(UnsupportedFeatureError, match="someFutureFeature"):
        spark_checkpoint(spark, DeltaTable(str(path)), parts="not even checked")
    assert _listing(path) == before


def test_a_failing_task_publishes_nothing(spark, gen_table, tmp_path):
    (path,) = copies(gen_table, tmp_path, "t")
    with open(path / LOG / f"{20:020d}.json", "ab") as f:
        f.write(b'{"add": {"path": "x", "size": \n')        # a torn line in the middle of the log
    with pytest.raises(Exception) as info:
        spark_checkpoint(spark, DeltaTable(str(path)), parts=2, now_ms=NOW)
    assert "CorruptLogError" in str(info.value) or isinstance(info.value, CorruptLogError)
    names = _listing(path)
    assert not [n for n in names if ".checkpoint." in n or n == "_last_checkpoint" or n.endswith(".tmp")]


# -------------------------------------------------------------- spark-submit
@pytest.mark.slow
def test_a_killed_job_leaves_no_checkpoint(java, tmp_path):
    path = gen_log(tmp_path / "big", commits=20, adds=1000, removes=0)
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable, "PYSPARK_DRIVER_PYTHON": sys.executable,
           "SPARK_LOCAL_IP": "127.0.0.1", "DELTA_SPARK_MASTER": "local[2]"}
    proc = subprocess.Popen([sys.executable, str(JOB), json.dumps({"table_uri": str(path), "parts": 16})],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 240
        staged = []
        while not staged and proc.poll() is None and time.monotonic() < deadline:
            staged = [n for n in os.listdir(path / LOG) if n.endswith(".tmp")]
            time.sleep(0.005)
        assert staged, f"the job ended (code {proc.returncode}) before staging any part"
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    names = _listing(path)
    published = [n for n in names if not n.startswith(".") and (".checkpoint." in n or n == "_last_checkpoint")]
    assert published == [], names                     # only hidden .tmp files may remain
    assert DeltaTable(str(path)).snapshot().num_files() == 20_000          # the table reads as before


@pytest.mark.airflow
@pytest.mark.slow
def test_operator_runs_the_job_through_spark_submit(java, gen_table, tmp_path, monkeypatch):
    from airflow_provider_delta.operators.checkpoint import DeltaCheckpointOperator
    monkeypatch.setenv("SPARK_LOCAL_IP", "127.0.0.1")
    ours, local = copies(gen_table, tmp_path, "ours", "local")
    op = DeltaCheckpointOperator(task_id="checkpoint", table_uri=str(ours), parts="2", engine="spark",
                                 spark_conn_id="spark_not_defined", master="local[2]")
    result = op.execute(task_context(task_id="checkpoint"))
    version = DeltaTable(str(ours)).latest_version()
    assert result == {"table_uri": f"file://{ours}", "version": version, "parts": 2, "cleanup": None}
    # every tombstone has expired by now, for both writers
    write_checkpoint(DeltaTable(str(local)), parts=2)
    assert_same_checkpoint(ours, local, version)


def test_operator_refuses_before_submitting(tmp_path, gen_table):
    from airflow_provider_delta.operators.checkpoint import DeltaCheckpointOperator
    (path,) = copies(gen_table, tmp_path, "t")
    before = _listing(path)
    with pytest.raises(InvalidArgumentError, match="engine"):
        DeltaCheckpointOperator(task_id="c", table_uri=str(path), engine="dask")
    # a Spark master that cannot exist: a submit would fail differently
    op = DeltaCheckpointOperator(task_id="c", table_uri=str(path), engine="spark", parts=0,
                                 master="spark://nowhere.invalid:1")
    with pytest.raises(InvalidArgumentError, match="parts"):
        op.execute(task_context(task_id="c"))
    assert _listing(path) == before
