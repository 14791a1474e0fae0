"""Break review s9 (breaker 4): log path spellings of a live file under the root, on real object stores
(moto, Azurite, the GCS emulator): our reader reads it, vacuum keeps it and deletes only the orphan."""
from __future__ import annotations

import json
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable

SCHEMA = pa.schema([("id", pa.int64())])


def _later() -> int:
    """A vacuum's 'now' a minute ahead: files just written are older than a zero retention (a store's
    file times may be whole seconds, or the very millisecond of the vacuum)."""
    return int(time.time() * 1000) + 60_000
OTHER_SCHEME = {"s3": "s3a", "gs": "gcs", "gcs": "gs", "s3a": "s3", "abfs": "abfss", "az": "abfs"}


def _spellings(uri: str) -> dict[str, str]:
    scheme, rest = uri.split("://", 1)
    bucket, _, key = rest.partition("/")
    other = OTHER_SCHEME.get(scheme, scheme)
    return {
        "trailing-slash": "x.parquet/",
        "dotdot-reenter": f"../{key.rsplit('/', 1)[-1]}/x.parquet",
        "dot": "./x.parquet",
        "absolute": f"{uri}/x.parquet",
        "other-scheme": f"{other}://{bucket}/{key}/x.parquet",
        "double-slash-after-bucket": f"{scheme}://{bucket}//{key}/x.parquet",
        "scheme-less": f"/{key}/x.parquet",
        "absolute-dotdot": f"{scheme}://{bucket}/{key}/a/../x.parquet",
    }


@pytest.mark.parametrize("spelling", list(_spellings("s3://b/t")))
def test_vacuum_keeps_and_reader_reads_a_live_file_in_every_spelling(store, spelling):
    uri = store.uri("brk4")
    t = DeltaTable.create(uri, SCHEMA, **store.table_kwargs)
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), buf)
    data = buf.getvalue().to_pybytes()
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    now = int(time.time() * 1000)
    add = {"add": {"path": _spellings(uri)[spelling], "partitionValues": {}, "size": len(data),
                   "modificationTime": now, "dataChange": True, "stats": json.dumps({"numRecords": 1})}}
    t.storage.write_bytes("_delta_log/00000000000000000001.json", (json.dumps(
        {"commitInfo": {"timestamp": now, "operation": "WRITE"}}) + "\n" + json.dumps(add) + "\n").encode())
    t = DeltaTable(uri, **store.table_kwargs)
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=_later())
    assert [p.rsplit("/", 1)[-1] for p in result["files_deleted"]] == ["orphan.parquet"]
    assert DeltaTable(uri, **store.table_kwargs).snapshot().to_pyarrow().column("id").to_pylist() == [7]


def test_a_relative_path_never_leaves_the_tables_bucket(object_stores):
    import boto3
    import s3fs
    from objectstore_servers import S3_KEY, S3_REGION, S3_SECRET

    from airflow_provider_delta.log import DeltaError
    store = object_stores("s3")
    other = f"brk4-other-{int(time.time() * 1000)}"
    boto3.client("s3", endpoint_url=store.server.endpoint, region_name=S3_REGION, aws_access_key_id=S3_KEY,
                 aws_secret_access_key=S3_SECRET).create_bucket(Bucket=other)
    fs = s3fs.S3FileSystem(**store.options)
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), buf)
    fs.pipe(f"{other}/t/x.parquet", buf.getvalue().to_pybytes())     # another bucket's file
    uri = store.uri("brk4")
    t = DeltaTable.create(uri, SCHEMA, **store.table_kwargs)
    depth = uri.split("://", 1)[1].count("/")                        # folders of the root below the bucket
    now = int(time.time() * 1000)
    add = {"add": {"path": "../" * (depth + 1) + f"{other}/t/x.parquet", "partitionValues": {}, "size": 1,
                   "modificationTime": now, "dataChange": True, "stats": json.dumps({"numRecords": 1})}}
    t.storage.write_bytes("_delta_log/00000000000000000001.json", (json.dumps(
        {"commitInfo": {"timestamp": now, "operation": "WRITE"}}) + "\n" + json.dumps(add) + "\n").encode())
    try:
        rows = DeltaTable(uri, **store.table_kwargs).snapshot().to_pyarrow().column("id").to_pylist()
    except DeltaError:
        rows = None
    assert rows != [7]
