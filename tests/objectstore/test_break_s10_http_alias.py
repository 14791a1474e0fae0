"""Break review s10 (#22, vacuum safety): an object of the table's bucket named by its HTTP(S) URL.

S3, GCS and Azure serve every object over HTTP(S) as well (``https://b.s3.amazonaws.com/t/x.parquet``,
path-style ``http://endpoint/b/t/x.parquet``, ``https://acct.blob.core.windows.net/c/t/x.parquet``).
Before: our reader opened such an add with the table's S3 options (fsspec's HTTP file system handed
``endpoint_url`` to aiohttp: a raw TypeError, and the table's credentials went to whatever host the URL
named), and vacuum placed ``http``/``https`` as a store of its own, certainly elsewhere, and deleted the
table's file. Now the reader opens another store's file without the table's options (it reads the public
object), and vacuum keeps every file whose root-relative path ends the URL's path (data_paths.Undecided),
as for a scheme it cannot place.

Delta Spark (4.4.0, Hadoop 3.5) does not read such a file: Hadoop's HttpFileSystem reports length -1 and
Parquet refuses it ("is not a Parquet file (length is too low: -1)"), checked on the jars against moto.
"""
from __future__ import annotations

import json
import time
import uuid

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture(scope="module")
def s3(object_stores):
    return object_stores("s3")


def _client(s3):
    import boto3
    from objectstore_servers import S3_KEY, S3_REGION, S3_SECRET
    return boto3.client("s3", endpoint_url=s3.server.endpoint, region_name=S3_REGION, aws_access_key_id=S3_KEY,
                        aws_secret_access_key=S3_SECRET)


def _parquet() -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [7]}, schema=SCHEMA), buf)
    return buf.getvalue().to_pybytes()


def _table_whose_add_is_the_http_url(s3) -> tuple[DeltaTable, str]:
    uri = s3.uri("brk10")
    t = DeltaTable.create(uri, SCHEMA, **s3.table_kwargs)
    data = _parquet()
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    bucket, key = uri.split("://", 1)[1].split("/", 1)
    _client(s3).put_object_acl(Bucket=bucket, Key=f"{key}/x.parquet", ACL="public-read")   # a public object
    url = f"{s3.server.endpoint}/{bucket}/{key}/x.parquet"        # path-style, as moto serves it
    now = int(time.time() * 1000)
    add = {"add": {"path": url, "partitionValues": {}, "size": len(data), "modificationTime": now,
                   "dataChange": True, "stats": json.dumps({"numRecords": 1})}}
    t.storage.write_bytes("_delta_log/00000000000000000001.json",
                          (json.dumps({"commitInfo": {"timestamp": now, "operation": "WRITE"}}) + "\n"
                           + json.dumps(add) + "\n").encode())
    return DeltaTable(uri, **s3.table_kwargs), url


def test_vacuum_keeps_a_file_the_log_names_by_its_http_url(s3):
    t, url = _table_whose_add_is_the_http_url(s3)
    import urllib.request
    assert urllib.request.urlopen(url, timeout=5).read() == _parquet()      # the URL serves the table's file
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]       # our reader reads it through the URL
    res = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False, now_ms=int(time.time() * 1000) + 60_000)
    assert [p.rsplit("/", 1)[-1] for p in res["files_deleted"]] == ["orphan.parquet"]
    assert t.storage.exists("x.parquet")
