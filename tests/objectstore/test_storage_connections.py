"""Fields of aws / wasb / google_cloud_platform connections mapped onto fsspec options."""
from __future__ import annotations

import pytest

from airflow_provider_delta.hooks.config import DeltaConnectionConfig
from airflow_provider_delta.hooks.storage_connections import storage_options_of
from airflow_provider_delta.log import InvalidArgumentError


def test_aws_connection_maps_to_s3fs_options():
    opts = storage_options_of({"conn_type": "aws", "login": "AKIA", "password": "s3cr3t",
                               "extra": {"region_name": "eu-west-1", "endpoint_url": "http://minio:9000",
                                         "aws_session_token": "tok"}})
    assert opts == {"key": "AKIA", "secret": "s3cr3t", "token": "tok",
                    "client_kwargs": {"endpoint_url": "http://minio:9000", "region_name": "eu-west-1"}}


def test_wasb_connection_maps_to_adlfs_options():
    assert storage_options_of({"conn_type": "wasb", "login": "acct", "password": "k3y", "extra": {}}) == \
        {"account_name": "acct", "account_key": "k3y"}
    assert storage_options_of({"conn_type": "wasb", "login": "acct", "password": "pw",
                               "extra": {"tenant_id": "t", "client_id": "c"}}) == \
        {"account_name": "acct", "tenant_id": "t", "client_id": "c", "client_secret": "pw"}
    assert storage_options_of({"conn_type": "wasb", "extra": {"connection_string": "X"}}) == {"connection_string": "X"}


def test_gcp_connection_maps_to_gcsfs_options():
    assert storage_options_of({"conn_type": "google_cloud_platform", "extra": {"project": "p", "key_path": "/k.json"}}) \
        == {"project": "p", "token": "/k.json"}
    assert storage_options_of({"conn_type": "google_cloud_platform", "extra": {"keyfile_dict": '{"type": "x"}'}}) \
        == {"token": {"type": "x"}}
    assert storage_options_of({"conn_type": "google_cloud_platform", "extra": {}}) == {"token": "google_default"}
    with pytest.raises(InvalidArgumentError, match="keyfile_dict"):
        storage_options_of({"conn_type": "google_cloud_platform", "extra": {"keyfile_dict": "{nope"}})


def test_other_types_and_missing_connections_are_typed_errors():
    with pytest.raises(InvalidArgumentError, match="'postgres'"):
        storage_options_of({"conn_type": "postgres"})
    with pytest.raises(InvalidArgumentError, match="not loaded"):
        DeltaConnectionConfig.from_connection("lake", "s3://b", None, None, {"storage_conn_id": "cloud"})


def test_delta_storage_options_override_and_secrets_are_redacted():
    cfg = DeltaConnectionConfig.from_connection(
        "lake", "s3://b", None, None, {"storage_conn_id": "cloud", "storage_options": {"secret": "override"}},
        storage_connection={"conn_type": "aws", "login": "AKIA", "password": "s3cr3t", "extra": {}})
    assert cfg.storage_options_for("s3://b/t") == {"key": "AKIA", "secret": "override"}
    assert "s3cr3t" not in repr(cfg) and "override" not in str(cfg.describe())
