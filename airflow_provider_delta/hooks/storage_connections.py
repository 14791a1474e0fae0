"""Airflow's own storage connections (``aws``, ``wasb``, ``google_cloud_platform``) as fsspec options.

Users already keep their cloud credentials in connections of these types. A ``delta``
connection names one with its ``storage_conn_id`` extra; the fields are mapped here onto
the keyword arguments of s3fs, adlfs and gcsfs. Only fields are read: no provider
package or cloud SDK is imported, and nothing here is logged (the caller redacts).
"""
from __future__ import annotations

import json
from typing import Any, Mapping

from ..log import InvalidArgumentError


def _first(extra: Mapping[str, Any], *names: str) -> Any:
    for name in names:
        if extra.get(name) not in (None, ""):
            return extra[name]
    return None


def _aws(login, password, host, extra) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if login:
        opts["key"] = login
    if password:
        opts["secret"] = password
    if token := _first(extra, "aws_session_token", "session_token"):
        opts["token"] = token
    client: dict[str, Any] = {}
    if endpoint := _first(extra, "endpoint_url", "host") or host:
        client["endpoint_url"] = endpoint
    if region := _first(extra, "region_name", "region"):
        client["region_name"] = region
    if client:
        opts["client_kwargs"] = client
    return opts


def _wasb(login, password, host, extra) -> dict[str, Any]:
    if conn_str := _first(extra, "connection_string"):
        return {"connection_string": conn_str}
    opts: dict[str, Any] = {}
    if login:
        opts["account_name"] = login
    if sas := _first(extra, "sas_token"):
        opts["sas_token"] = sas
    elif password:
        opts["account_key"] = password
    for ours, theirs in (("tenant_id", "tenant_id"), ("client_id", "client_id"), ("client_secret", "client_secret")):
        if value := _first(extra, theirs):
            opts[ours] = value
    if password and opts.get("client_id") and "client_secret" not in opts:
        opts["client_secret"] = password        # a service principal's secret in the password field
        opts.pop("account_key", None)
    return opts


def _gcp(login, password, host, extra) -> dict[str, Any]:
    opts: dict[str, Any] = {}
    if project := _first(extra, "project", "extra__google_cloud_platform__project"):
        opts["project"] = project
    if path := _first(extra, "key_path", "extra__google_cloud_platform__key_path"):
        opts["token"] = path
    elif keyfile := _first(extra, "keyfile_dict", "extra__google_cloud_platform__keyfile_dict"):
        try:
            opts["token"] = json.loads(keyfile) if isinstance(keyfile, str) else dict(keyfile)
        except ValueError:
            raise InvalidArgumentError("the keyfile_dict of the GCP connection is not valid JSON") from None
    else:
        opts["token"] = "google_default"
    return opts


_MAPPERS = {"aws": _aws, "s3": _aws, "wasb": _wasb, "adls": _wasb, "google_cloud_platform": _gcp}


def storage_options_of(connection: Mapping[str, Any]) -> dict[str, Any]:
    """fsspec storage options from the fields of an ``aws``, ``wasb`` or ``google_cloud_platform``
    connection (``conn_type``, ``login``, ``password``, ``host``, ``extra``)."""
    conn_type = str(connection.get("conn_type") or "")
    mapper = _MAPPERS.get(conn_type)
    if mapper is None:
        raise InvalidArgumentError(
            f"storage_conn_id names a connection of type {conn_type!r}; supported: aws, wasb, "
            "google_cloud_platform (or put storage_options in the delta connection itself)")
    return mapper(connection.get("login"), connection.get("password"), connection.get("host"),
                  dict(connection.get("extra") or {}))
