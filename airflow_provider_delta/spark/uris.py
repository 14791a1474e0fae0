"""Table and file locations as Spark (Hadoop) wants them.

The log layer speaks fsspec URLs (``/data/t``, ``file:///data/t``, ``s3://b/t``);
Hadoop needs an explicit ``file:`` scheme for local paths and the ``s3a``
connector for S3. In-process fsspec filesystems (``memory://``) are invisible to
a JVM, so they are refused with a clear message instead of a Hadoop stack trace.
"""
from __future__ import annotations

from ..log import InvalidArgumentError
from ..log import normalize_uri

#: fsspec scheme -> Hadoop scheme, where they differ
HADOOP_SCHEMES = {"s3": "s3a", "s3n": "s3a", "gcs": "gs", "local": "file"}
#: schemes only a Python process can see
PROCESS_LOCAL_SCHEMES = ("memory",)


def spark_uri(uri: str) -> str:
    """``uri`` in the form Spark reads and writes (``file:///abs/path``, ``s3a://bucket/key``...)."""
    uri = str(uri)
    scheme, location = normalize_uri(uri)      # the log layer decides what is local
    if scheme == "file":
        return "file://" + location
    if scheme in PROCESS_LOCAL_SCHEMES:
        raise InvalidArgumentError(
            f"{uri} lives in an in-process {scheme}:// filesystem that Spark cannot reach; use a local "
            "path or a shared storage URL")
    target = HADOOP_SCHEMES.get(scheme)
    return target + uri[len(scheme):] if target else uri
