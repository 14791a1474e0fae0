"""Spark on S3 (moto): Delta Spark writing through s3a://, and our driver-side commit path on S3.

One real S3 server (moto) and the session's one SparkSession with hadoop-aws on its class
path (scripts/delta-spark/pom.xml). Spark gets its S3A settings per bucket from the same
fsspec options the log layer uses (airflow_provider_delta.spark.s3a): the test sets them
for the shared test bucket; the job tests use buckets of their own, which only the settings
our code derives from the Airflow connections can reach.

What S3A needs for moto, and why nothing else: path-style access (the server is an IP
address, no virtual-host buckets) and plain HTTP (``connection.ssl.enabled=false``); both
follow from the ``endpoint_url`` in the storage options. Hadoop 3.5's S3A defaults
need no change: ``fs.s3a.checksum.generation`` and ``.validation`` are off (no AWS SDK
flexible-checksum trailers), change detection compares ETags (moto returns them), and
``fs.s3a.create.conditional.enabled`` only matters when a caller asks ``createFile()`` for
a conditional overwrite, which Delta Spark's S3SingleDriverLogStore does not (it checks
that the commit file is absent, then writes it; see docs/guides/object-stores.md, "Spark on S3").
"""
from __future__ import annotations

import importlib.util
import json
import sys
import uuid
from pathlib import Path

import boto3
import deltalake
import pyarrow as pa
import pytest
import s3fs

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.spark.delta_job import ENV_HADOOP_CONF, DeltaJobContextError, apply_hadoop_conf
from airflow_provider_delta.spark.s3a import apply_s3a, s3a_bucket_conf
from airflow_provider_delta.spark.staged_write import STAGING_DIR
from airflow_provider_delta.spark.uris import spark_uri
from objectstore_servers import S3_KEY, S3_REGION, S3_SECRET
from test_stores_end_to_end import cloud_connection

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "spark"))
from submitted_application import submitted_session  # noqa: E402  (tests/spark's stand-in for spark-submit)
from task_context import task_context  # noqa: E402  (tests/spark's task context with a recording ti)

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


@pytest.fixture(scope="module")
def s3(object_stores):
    return object_stores("s3")


@pytest.fixture(scope="module")
def s3a_spark(spark, s3):
    """The shared session, with S3A pointed at moto for the test bucket."""
    apply_s3a(spark, s3.uri(), s3.options)
    return spark


def _spark_ids(spark, uri: str, version: int | None = None) -> list[int]:
    reader = spark.read.format("delta")
    if version is not None:
        reader = reader.option("versionAsOf", version)
    return sorted(r.id for r in reader.load(spark_uri(uri)).select("id").collect())


def _ours_ids(table: DeltaTable, version: int | None = None) -> list[int]:
    return sorted(table.snapshot(version).to_pyarrow(columns=["id"]).column("id").to_pylist())


def _deltalake_ids(s3, uri: str, version: int | None = None) -> list[int]:
    dt_ = deltalake.DeltaTable(uri, storage_options=s3.deltalake_options, version=version)
    return sorted(dt_.to_pyarrow_table(columns=["id"]).column("id").to_pylist())


def s3_keys(s3, uri: str, under: str = "") -> set[str]:
    """Object keys below a table root (relative to it), outside _delta_log; listed by s3fs."""
    fs = s3fs.S3FileSystem(**s3.options)
    root = uri.split("://", 1)[1].rstrip("/")
    fs.invalidate_cache()
    keys = {k[len(root) + 1:] for k in fs.find(f"{root}/{under}".rstrip("/"))}
    return {k for k in keys if not k.startswith("_delta_log/")}


@pytest.fixture
def jars_helper():
    """scripts/delta_spark.py (the scripts folder is not a package), loaded under a private name."""
    path = Path(__file__).resolve().parents[2] / "scripts" / "delta_spark.py"
    spec = importlib.util.spec_from_file_location("delta_spark_for_s3a_test", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_s3a_jars_are_pinned_with_delta_and_a_stale_fetch_is_reported(jars_helper, tmp_path, monkeypatch):
    names = [p.name for p in jars_helper.jar_paths()]
    assert f"hadoop-aws-{jars_helper.hadoop_version()}.jar" in names
    assert {"s3", "s3-transfer-manager", "sts"} <= {n.rsplit("-", 1)[0] for n in names}
    assert not [n for n in names if n.startswith(("hadoop-client-", "bundle-"))]   # pyspark's Hadoop only
    old = tmp_path / ".fetched"                      # what a fetch for the pom before hadoop-aws left
    old.write_text(f"{jars_helper.coordinates()} spark {jars_helper.versions()[1]}\n")
    monkeypatch.setattr(jars_helper, "STAMP", old)
    with pytest.raises(jars_helper.DeltaSparkJarsMissing, match="fetched for another version.*make jars"):
        jars_helper.jar_paths()
    monkeypatch.setattr(jars_helper, "_pyspark_hadoop", lambda: "3.4.2")
    with pytest.raises(jars_helper.DeltaSparkJarsMissing, match="ships Hadoop 3.4.2, but hadoop-aws is pinned at"):
        jars_helper.check_pyspark()


def test_storage_options_map_to_per_bucket_s3a_settings():
    minio = {"key": "AK", "secret": "SK", "token": "TK",
             "client_kwargs": {"endpoint_url": "http://minio:9000", "region_name": "eu-west-1"}}
    assert s3a_bucket_conf("s3://lake/t", minio) == {
        "fs.s3a.bucket.lake.access.key": "AK", "fs.s3a.bucket.lake.secret.key": "SK",
        "fs.s3a.bucket.lake.session.token": "TK",
        "fs.s3a.bucket.lake.aws.credentials.provider": "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider",
        "fs.s3a.bucket.lake.endpoint": "http://minio:9000", "fs.s3a.bucket.lake.path.style.access": "true",
        "fs.s3a.bucket.lake.connection.ssl.enabled": "false", "fs.s3a.bucket.lake.endpoint.region": "eu-west-1"}
    virtual = {"endpoint_url": "https://s3.example", "config_kwargs": {"s3": {"addressing_style": "virtual"}}}
    assert s3a_bucket_conf("s3a://b/t", virtual) == {"fs.s3a.bucket.b.endpoint": "https://s3.example",
                                                      "fs.s3a.bucket.b.path.style.access": "false"}
    assert s3a_bucket_conf("s3://b/t", {"anon": True}) == {
        "fs.s3a.bucket.b.aws.credentials.provider": "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"}
    assert s3a_bucket_conf("s3://b/t", None) == {}                  # S3A's own provider chain
    assert s3a_bucket_conf("abfs://c/t", minio) == {} == s3a_bucket_conf("/data/t", minio)
    with pytest.raises(InvalidArgumentError, match="both 'key' and 'secret'"):
        s3a_bucket_conf("s3://b/t", {"key": "AK"})


def test_a_malformed_hadoop_conf_variable_is_a_typed_error():
    assert apply_hadoop_conf(None, {}) == []                        # nothing passed: the session is not touched
    with pytest.raises(DeltaJobContextError, match=f"{ENV_HADOOP_CONF} is not valid JSON"):
        apply_hadoop_conf(None, {ENV_HADOOP_CONF: '{"fs.s3a.bucket.b.secret.key": '})
    with pytest.raises(DeltaJobContextError, match="must hold a JSON object"):
        apply_hadoop_conf(None, {ENV_HADOOP_CONF: "[1]"})


def test_delta_spark_writes_through_s3a_and_we_read_it(s3a_spark, s3):
    spark, uri = s3a_spark, s3.uri("spark")
    target = spark_uri(uri)
    assert target.startswith("s3a://")
    rows = [(i, "2026-01-01" if i % 2 else "2026-01-02") for i in range(6)]
    df = spark.createDataFrame(rows, "id long, day string")
    df.write.format("delta").partitionBy("day").save(target)                     # version 0
    spark.createDataFrame([(10, "2026-01-03")], "id long, day string") \
        .write.format("delta").mode("append").save(target)                         # version 1
    spark.sql(f"DELETE FROM delta.`{target}` WHERE id = 3")                       # version 2
    spark.sql(f"UPDATE delta.`{target}` SET id = id + 100 WHERE id = 4")          # version 3

    table = DeltaTable(uri, **s3.table_kwargs)
    assert table.latest_version() == 3
    assert [h["operation"] for h in table.history()] == ["UPDATE", "DELETE", "WRITE", "WRITE"]
    spark_now = _spark_ids(spark, uri)
    assert spark_now == [0, 1, 2, 5, 10, 104]
    assert _ours_ids(table) == spark_now == _deltalake_ids(s3, uri)
    for version in (0, 1, 2):
        assert _ours_ids(table, version) == _spark_ids(spark, uri, version) == _deltalake_ids(s3, uri, version)


# ------------------------------------------------------------------ the driver-side commit path
JOB_BUCKET = "delta-spark-job"
APP_BUCKET = "delta-spark-app"
TOTALS = "SELECT day, count(*) AS n, sum(id) AS total FROM source GROUP BY day"


@pytest.fixture
def s3_lake(s3, monkeypatch):
    """``make(bucket)``: a bucket of its own and a ``delta`` connection to it whose S3 credentials
    come from an ``aws`` connection. The session has no S3A settings for such a bucket: only
    what our code derives from the connections can reach it."""
    client = boto3.client("s3", endpoint_url=s3.server.endpoint, region_name=S3_REGION, aws_access_key_id=S3_KEY,
                          aws_secret_access_key=S3_SECRET)
    monkeypatch.setenv("AIRFLOW_CONN_CLOUD", json.dumps(cloud_connection(s3)))

    def make(bucket: str) -> str:
        if bucket not in [b["Name"] for b in client.list_buckets()["Buckets"]]:
            client.create_bucket(Bucket=bucket)
        conn_id = bucket.replace("-", "_")
        monkeypatch.setenv(f"AIRFLOW_CONN_{conn_id.upper()}", json.dumps(
            {"conn_type": "delta", "host": f"s3://{bucket}", "extra": {"storage_conn_id": "cloud"}}))
        return conn_id
    return make


def _orders(s3, bucket: str, name: str) -> tuple[str, DeltaTable]:
    """A partitioned source table with versions 0 (create), 1 and 2."""
    uri = f"s3://{bucket}/{name}"
    table = DeltaTable.create(uri, SCHEMA, partition_by=["day"], **s3.table_kwargs)
    table.write(pa.table({"id": [1, 2, 3], "day": ["2026-01-01", "2026-01-01", "2026-01-02"]}, schema=SCHEMA))
    table.write(pa.table({"id": [1000], "day": ["2026-01-01"]}, schema=SCHEMA))      # after the pin
    return uri, table


def _totals(rows) -> dict:
    return {r["day"]: (r["n"], r["total"]) for r in rows}


def test_operator_job_reads_a_pinned_s3_snapshot_and_commits_once(spark, s3, s3_lake):
    from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
    from airflow_provider_delta.spark.job import run

    job_lake = s3_lake(JOB_BUCKET)
    suffix = uuid.uuid4().hex[:8]
    src_uri, _ = _orders(s3, JOB_BUCKET, f"orders-{suffix}")
    op = DeltaSparkSubmitOperator(task_id="totals", delta_conn_id=job_lake, input_table_uri=f"orders-{suffix}",
                                  input_version=1, output_table_uri=f"totals-{suffix}", transform="sql",
                                  transform_params={"query": TOTALS}, conn_id="spark_not_defined")
    context = task_context(task_id="totals")
    spec, secrets = op.build_spec(context)
    out_uri = f"s3://{JOB_BUCKET}/totals-{suffix}"
    assert (spec.input_table_uri, spec.output_table_uri) == (src_uri, out_uri)
    # the job's secrets (environment, not command line) carry the aws connection's credentials
    assert secrets["output"]["storage_options"]["secret"] == S3_SECRET
    assert S3_SECRET not in spec.to_json()

    result = run(spark, spec, secrets)                   # what the entry point does under spark-submit
    assert (result["committed"], result["version"], result["input_version"]) == (True, 0, 1)
    out = DeltaTable(out_uri, **s3.table_kwargs)
    expected = {"2026-01-01": (2, 3), "2026-01-02": (1, 3)}          # version 1: the 1000 is not in it
    assert _totals(out.snapshot().to_pyarrow().to_pylist()) == expected

    again = run(spark, spec, secrets)                    # a rerun of the job commits nothing
    assert (again["committed"], again["version"]) == (False, 0)
    assert op.execute(context) == 0                      # a retried task: found, not submitted
    assert context["ti"].xcoms["commit"]["committed"] is False
    assert out.latest_version() == 0

    spark_rows = [r.asDict() for r in spark.read.format("delta").load(spark_uri(out_uri)).collect()]
    assert _totals(spark_rows) == expected               # Delta Spark, through s3a, agrees
    dl = deltalake.DeltaTable(out_uri, storage_options=s3.deltalake_options)
    assert _totals(dl.to_pyarrow_table().to_pylist()) == expected
    assert not s3_keys(s3, out_uri, STAGING_DIR)           # the staging directory is gone



def test_delta_spark_application_gets_the_connection_s3_settings(spark, s3, s3_lake, monkeypatch):
    """DeltaSparkApplicationOperator: the application applies DELTA_JOB_HADOOP_CONF and commits with Delta Spark.

    spark-submit's process launch is replaced by running the application in this session
    (the operator, its environment and the Delta Spark write are real).
    """
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

    from airflow_provider_delta.operators.delta_spark import DeltaSparkApplicationOperator
    from airflow_provider_delta.spark.delta_job import apply_hadoop_conf

    conn_id = s3_lake(APP_BUCKET)
    suffix = uuid.uuid4().hex[:8]
    _orders(s3, APP_BUCKET, f"orders-{suffix}")
    submitted: list[dict] = []

    def run_application_here(self, context):
        env = dict(self.env_vars)
        submitted.append({"args": list(self.application_args), "conf": dict(self.conf), "env": env})
        assert apply_hadoop_conf(spark, env)           # before the first touch of the bucket
        # the operator's --conf and the entry's pair, as spark-submit would give them, taken away afterwards
        with submitted_session(self, spark, env) as ctx:
            source = spark.read.format("delta").options(**ctx.read_options).load(ctx.input_table_uri)
            source.write.format("delta").options(**ctx.write_options).mode("append").save(ctx.output_table_uri)

    monkeypatch.setattr(SparkSubmitOperator, "execute", run_application_here)
    op = DeltaSparkApplicationOperator(task_id="copy", application="copy.py", delta_conn_id=conn_id,
                                       input_table_uri=f"orders-{suffix}", input_version=1,
                                       output_table_uri=f"copy-{suffix}", conn_id="spark_not_defined")
    context = task_context(task_id="copy")
    assert op.execute(context) == 0
    assert context["ti"].xcoms["commit"]["committed"] is True
    shown = json.dumps([submitted[0]["args"], submitted[0]["conf"]])
    assert S3_SECRET not in shown and S3_SECRET in submitted[0]["env"]["DELTA_JOB_HADOOP_CONF"]
    out_uri = f"s3://{APP_BUCKET}/copy-{suffix}"
    assert _ours_ids(DeltaTable(out_uri, **s3.table_kwargs)) == [1, 2, 3]       # version 1 of the input
    assert op.execute(task_context(task_id="copy")) == 0 and len(submitted) == 1  # a rerun is not submitted


# ------------------------------------------------- another writer between our pin and our commit
def _rows_df(spark, ids, day="2026-01-01"):
    return spark.createDataFrame([(i, day) for i in ids], "id long, day string")


def test_concurrent_delta_spark_append_is_retried_on_s3(s3a_spark, s3, monkeypatch):
    """Delta Spark (another engine, through s3a) commits while our job writes: ours lands on the next version."""
    from airflow_provider_delta.spark import commit as commit_module
    spark, uri = s3a_spark, s3.uri("race")
    table = DeltaTable(uri, **s3.table_kwargs)
    assert commit_module.commit_dataframe(_rows_df(spark, [1, 2]), table, partition_by=["day"]) == 0
    real_publish = commit_module.publish

    def delta_spark_then_publish(*args, **kwargs):
        _rows_df(spark, [100]).write.format("delta").mode("append").save(spark_uri(uri))    # takes version 1
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(commit_module, "publish", delta_spark_then_publish)
    assert commit_module.commit_dataframe(_rows_df(spark, [5]), table, app_id="dag.job", app_version=3) == 2
    assert _ours_ids(DeltaTable(uri, **s3.table_kwargs)) == [1, 2, 5, 100] == _spark_ids(spark, uri)
    assert _deltalake_ids(s3, uri) == [1, 2, 5, 100]


def test_concurrent_commit_of_the_same_run_is_a_skip_on_s3(s3a_spark, s3, monkeypatch):
    """A zombie try records our exactly-once pair first: our commit steps back and deletes its files."""
    from airflow_provider_delta.spark import commit as commit_module
    spark, uri = s3a_spark, s3.uri("zombie")
    table = DeltaTable(uri, **s3.table_kwargs)
    commit_module.commit_dataframe(_rows_df(spark, [1, 2]), table, partition_by=["day"])
    before = s3_keys(s3, uri)
    real_publish = commit_module.publish

    def zombie_then_publish(*args, **kwargs):
        with DeltaTable(uri, **s3.table_kwargs).transaction() as txn:
            txn.set_txn("dag.job", 7)
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(commit_module, "publish", zombie_then_publish)
    assert commit_module.commit_dataframe(_rows_df(spark, [10, 11]), table, app_id="dag.job", app_version=7) is None
    assert DeltaTable(uri, **s3.table_kwargs).latest_version() == 1          # only the zombie's commit
    assert s3_keys(s3, uri) == before                                        # no file of ours left behind
    assert _spark_ids(spark, uri) == [1, 2]


def test_s3a_create_without_overwrite_is_check_then_put(s3a_spark, s3):
    """Why docs/guides/object-stores.md ("Two engines committing to one S3 table") warns about Delta Spark's side.

    Delta Spark's S3 log store commits with ``create(path, overwrite=false)``. S3A checks that
    the key is absent when the stream is created and PUTs without a condition when it is
    closed, so our conditional commit of the same version landing in between is replaced.
    """
    spark, uri = s3a_spark, s3.uri("checkthenput")
    table = DeltaTable.create(uri, SCHEMA, **s3.table_kwargs)
    path = spark._jvm.org.apache.hadoop.fs.Path(spark_uri(uri) + "/_delta_log/00000000000000000001.json")
    stream = path.getFileSystem(spark._jsc.hadoopConfiguration()).create(path, False)   # key absent: accepted
    ours = table.write(pa.table({"id": [1], "day": ["2026-01-01"]}, schema=SCHEMA))   # our conditional create
    assert ours == 1 and "add" in json.dumps(DeltaTable(uri, **s3.table_kwargs).read_commit(1))
    stream.write(bytearray(b'{"commitInfo":{"operation":"OTHER ENGINE"}}\n'))
    stream.close()                                       # the PUT: no If-None-Match
    replaced = DeltaTable(uri, **s3.table_kwargs).read_commit(1)
    assert replaced == [{"commitInfo": {"operation": "OTHER ENGINE"}}]          # our commit is gone
