"""S3 credentials and endpoint for Spark's s3a connector, from the fsspec options the rest of the provider uses.

The log layer reaches S3 through s3fs with ``storage_options`` (``key``, ``secret``,
``token``, ``client_kwargs={"endpoint_url", "region_name"}``...), which a ``delta``
connection holds itself or takes from an Airflow ``aws`` connection
(:mod:`airflow_provider_delta.hooks.storage_connections`). Spark reads and writes
``s3a://`` through Hadoop's S3A instead, which is configured by ``fs.s3a.*`` keys.
This module translates the one into the other, **per bucket**
(``fs.s3a.bucket.<bucket>.<key>``, S3A's own per-bucket override), so an input
and an output table in different accounts or on different endpoints can sit in
one Spark job without one's credentials applying to the other.

The keys are set on the running session's Hadoop configuration by the driver
(:func:`apply_s3a` in our job; ``delta_job.apply_hadoop_conf`` in a Delta Spark
application), from secrets that came through the environment: they never go on a
``spark-submit`` command line, where ``ps`` and the task log would show them.
Nothing here logs a value.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Mapping
from urllib.parse import urlsplit

from ..log import InvalidArgumentError
from .delta_job import set_hadoop_conf
from .uris import HADOOP_SCHEMES

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import SparkSession

#: URL schemes of S3 locations: s3a:// and the fsspec schemes Spark reads as s3a://
S3_SCHEMES = ("s3a",) + tuple(k for k, v in HADOOP_SCHEMES.items() if v == "s3a")
SIMPLE_PROVIDER = "org.apache.hadoop.fs.s3a.SimpleAWSCredentialsProvider"
TEMPORARY_PROVIDER = "org.apache.hadoop.fs.s3a.TemporaryAWSCredentialsProvider"
ANONYMOUS_PROVIDER = "org.apache.hadoop.fs.s3a.AnonymousAWSCredentialsProvider"


def s3_bucket(uri: str) -> str | None:
    """The bucket of an ``s3://`` / ``s3a://`` URI; None for any other location."""
    parts = urlsplit(str(uri))
    if parts.scheme.lower() not in S3_SCHEMES:
        return None
    if not parts.netloc:
        raise InvalidArgumentError(f"{uri} names no bucket")
    return parts.netloc


def _option(options: Mapping[str, Any], *names: str) -> Any:
    client = options.get("client_kwargs") or {}
    for name in names:
        for source in (options, client):
            if source.get(name) not in (None, ""):
                return source[name]
    return None


def s3a_options(storage_options: Mapping[str, Any] | None) -> dict[str, str]:
    """S3A keys (without the ``fs.s3a.`` prefix) equivalent to s3fs ``storage_options``.

    Credentials: ``key``/``secret`` (+ ``token``: temporary credentials) or ``anon``;
    without any, S3A keeps its default provider chain (environment, instance profile...).
    ``endpoint_url`` (an S3-compatible server) also turns on path-style access (what such
    servers serve; ``config_kwargs={"s3": {"addressing_style": "virtual"}}`` keeps virtual
    hosts) and, for ``http://``, plain connections.
    """
    options = dict(storage_options or {})
    out: dict[str, str] = {}
    key = _option(options, "key", "aws_access_key_id")
    secret = _option(options, "secret", "aws_secret_access_key")
    token = _option(options, "token", "aws_session_token")
    if options.get("anon"):
        out["aws.credentials.provider"] = ANONYMOUS_PROVIDER
    elif key or secret:
        if not (key and secret):
            raise InvalidArgumentError("S3 storage options need both 'key' and 'secret' (or neither)")
        out.update({"access.key": str(key), "secret.key": str(secret)})
        out["aws.credentials.provider"] = SIMPLE_PROVIDER
        if token:
            out["session.token"] = str(token)
            out["aws.credentials.provider"] = TEMPORARY_PROVIDER
    endpoint = _option(options, "endpoint_url")
    if endpoint:
        out["endpoint"] = str(endpoint)
        style = ((options.get("config_kwargs") or {}).get("s3") or {}).get("addressing_style")
        out["path.style.access"] = "false" if style == "virtual" else "true"
        if str(endpoint).lower().startswith("http://"):
            out["connection.ssl.enabled"] = "false"
    if options.get("use_ssl") is False:
        out["connection.ssl.enabled"] = "false"
    region = _option(options, "region_name", "region")
    if region:
        out["endpoint.region"] = str(region)
    return out


def s3a_bucket_conf(uri: str, storage_options: Mapping[str, Any] | None) -> dict[str, str]:
    """Hadoop keys ``fs.s3a.bucket.<bucket>.*`` for the table at ``uri`` ({} if it is not on S3)."""
    bucket = s3_bucket(uri)
    if bucket is None:
        return {}
    return {f"fs.s3a.bucket.{bucket}.{k}": v for k, v in s3a_options(storage_options).items()}


def apply_s3a(spark: "SparkSession", uri: str, storage_options: Mapping[str, Any] | None) -> list[str]:
    """Set the S3A keys of ``uri``'s bucket on the session's Hadoop configuration; returns the keys set.

    Must run before Spark first touches the bucket: Hadoop caches one S3A filesystem per
    bucket with the settings it was created with.
    """
    return set_hadoop_conf(spark, s3a_bucket_conf(uri, storage_options))
