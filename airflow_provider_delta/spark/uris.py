"""Table and file locations as Spark (Hadoop) wants them.

The log layer speaks fsspec URLs (``/data/t``, ``file:///data/t``, ``s3://b/t``);
Hadoop needs an explicit ``file:`` scheme for local paths and the ``s3a``
connector for S3. In-process fsspec filesystems (``memory://``) are invisible to
a JVM, so they are refused with a clear message instead of a Hadoop stack trace.
"""
from __future__ import annotations

import os
from urllib.parse import urlsplit

from ..log.errors import InvalidArgumentError

#: fsspec scheme -> Hadoop scheme, where they differ
HADOOP_SCHEMES = {"s3": "s3a", "s3n": "s3a", "gcs": "gs", "local": "file"}
#: schemes only a Python process can see
PROCESS_LOCAL_SCHEMES = ("memory",)


def spark_uri(uri: str) -> str:
    """``uri`` in the form Spark reads and writes (``file:///abs/path``, ``s3a://bucket/key``...)."""
    uri = str(uri)
    scheme = urlsplit(uri).scheme.lower()
    if len(scheme) <= 1:                       # a local path (or a Windows drive letter)
        return "file://" + os.path.abspath(os.path.expanduser(uri))
    if scheme in PROCESS_LOCAL_SCHEMES:
        raise InvalidArgumentError(
            f"{uri} lives in an in-process {scheme}:// filesystem that Spark cannot reach; use a local "
            "path or a shared storage URL")
    if scheme == "file":
        rest = uri[len("file:"):]
        if rest.startswith("//"):
            rest = rest[2:]
            if rest.startswith("localhost/"):
                rest = rest[len("localhost"):]
        return "file://" + ("/" + rest.lstrip("/"))
    target = HADOOP_SCHEMES.get(scheme)
    return target + uri[len(scheme):] if target else uri
