"""Airflow assets for Delta tables: the ``delta`` URI scheme, its normalizer and factory.

An asset names a table by where it lives, so two DAGs that mention the same table
(spelled differently) share one asset:

* a local table ``/data/orders`` (or ``file:///data/orders``) is ``delta:///data/orders``;
* a table on another storage keeps that storage's scheme after ``delta+``:
  ``s3://bucket/warehouse/orders`` is ``delta+s3://bucket/warehouse/orders``
  (like SQLAlchemy's ``dialect+driver://``), so the location stays unambiguous.

The provider registers :func:`sanitize_uri` as the URI handler and :func:`to_asset`
as the factory for these schemes (see ``get_provider_info``). Events the Delta tasks
emit on such assets carry ``{"version": ..., ...}`` in their extra.
"""
from __future__ import annotations

import os
import posixpath
import urllib.parse
from typing import Any
from urllib.parse import SplitResult, urlsplit


SCHEME = "delta"
#: storage schemes with a registered ``delta+<scheme>`` variant (any other works too,
#: it just gets Airflow's generic normalization only)
STORAGE_SCHEMES = ("file", "s3", "s3a", "gs", "gcs", "abfs", "abfss", "az", "adl", "hdfs", "memory")
SCHEMES = (SCHEME,) + tuple(f"{SCHEME}+{s}" for s in STORAGE_SCHEMES)

# urllib renders an empty authority ("delta:///data/t") only for schemes it knows use
# one; without this a local table's URI would come out as "delta:/data/t".
for _s in SCHEMES:
    if _s not in urllib.parse.uses_netloc:
        urllib.parse.uses_netloc.append(_s)


def sanitize_uri(uri: SplitResult) -> SplitResult:
    """Normalize a ``delta`` / ``delta+<storage>`` asset URI (Airflow's URI handler hook).

    Collapses ``//``, ``.`` and ``..`` in the path, maps ``delta+file://`` and
    ``delta://localhost/`` onto ``delta:///``, and rejects URIs that do not name a table.
    """
    scheme = uri.scheme.lower()
    if scheme not in (SCHEME,) and not scheme.startswith(SCHEME + "+"):
        raise ValueError(f"not a Delta asset URI: {uri.geturl()}")
    if scheme == SCHEME + "+file":
        scheme = SCHEME
    path = uri.path or ""
    if scheme == SCHEME:
        if uri.netloc not in ("", "localhost"):
            raise ValueError(
                f"Delta asset URI {uri.geturl()!r} names host {uri.netloc!r}: use "
                "delta:///absolute/path for local tables and delta+<storage>://bucket/path "
                "(e.g. delta+s3://bucket/orders) for tables on other storage")
        netloc = ""
    else:
        netloc = uri.netloc
        if not netloc and scheme != SCHEME + "+memory":
            raise ValueError(f"Delta asset URI {uri.geturl()!r} needs a bucket or host")
    norm = posixpath.normpath("/" + path.lstrip("/")) if path else "/"
    if norm == "/" and scheme == SCHEME:
        raise ValueError(f"Delta asset URI {uri.geturl()!r} must name a table path")
    return uri._replace(scheme=scheme, netloc=netloc, path=norm, fragment="")


def is_absolute_uri(uri: str) -> bool:
    """True for URLs with a scheme (``s3://``, ``file:``) and absolute local paths (``/data/t``, ``~/t``)."""
    uri = str(uri)
    if len(urlsplit(uri).scheme) > 1:
        return True
    return os.path.isabs(uri) or uri.startswith("~")


def asset_uri_for_table(table_uri: str) -> str:
    """The canonical asset URI of the table at ``table_uri`` (an absolute path or URL).

    A relative path is refused (``ValueError``, as for any URI Airflow's asset handlers
    refuse): resolved against the working directory it would name a different table in each
    process (the DAG processor's, a worker's). This module imports nothing of the transaction
    log: Airflow loads it with the provider's info in every process.
    """
    table_uri = str(table_uri).strip()
    if not is_absolute_uri(table_uri):
        raise ValueError(
            f"table_uri {table_uri!r} is relative: an asset needs the table's absolute path or URL "
            "(e.g. /data/orders or s3://bucket/orders: the delta connection's base URI joined with the "
            "relative path the tasks use)")
    parsed = urlsplit(table_uri)
    scheme = parsed.scheme.lower()
    if len(scheme) <= 1 or scheme == "file":
        path = parsed.path if scheme == "file" else table_uri
        path = os.path.abspath(os.path.expanduser(path))
        out = SplitResult(SCHEME, "", path, "", "")
    elif scheme == SCHEME or scheme.startswith(SCHEME + "+"):
        out = parsed
    else:
        out = SplitResult(f"{SCHEME}+{scheme}", parsed.netloc, parsed.path, "", "")
    return sanitize_uri(out._replace(path=out.path.rstrip("/") or "/")).geturl()


def table_uri_for_asset(asset_uri: str) -> str:
    """The table location an asset URI names (inverse of :func:`asset_uri_for_table`)."""
    parsed = sanitize_uri(urlsplit(str(asset_uri)))
    if parsed.scheme == SCHEME:
        return parsed.path
    storage = parsed.scheme[len(SCHEME) + 1:]
    return f"{storage}://{parsed.netloc}{parsed.path}"


def to_asset(*, table_uri: str, extra: dict[str, Any] | None = None, name: str | None = None) -> Any:
    """Airflow asset factory: the :class:`~airflow.sdk.Asset` of the table at ``table_uri`` (absolute;
    a relative path is refused, see :func:`asset_uri_for_table`)."""
    from airflow.sdk import Asset   # assets.py stays free of Airflow: config and get_provider_info import it
    uri = asset_uri_for_table(table_uri)
    kwargs: dict[str, Any] = {"uri": uri}
    if name:
        kwargs["name"] = name
    if extra:
        kwargs["extra"] = extra
    return Asset(**kwargs)
