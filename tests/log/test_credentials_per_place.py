"""Which of a place's storage options go to another place (data_paths.options_for_place, one_credential_place):
identity credentials (S3, GCS) to every bucket of the store, whatever scheme spells it; host-bound ones (HTTP
headers, SFTP/FTP/WebDAV passwords) to the same host only; Azure account credentials to the same account only.
The other side of tests/log/test_review_s12_rv_azure.py's credential findings: a legitimate place still gets
its credentials."""
from __future__ import annotations

import json

import pytest

from airflow_provider_delta.hooks.config import DeltaConnectionConfig
from airflow_provider_delta.log.read.data_paths import _options_for_other_place, one_credential_place, split_uri

SECRET = "TABLESECRET"


@pytest.mark.parametrize("root, file_uri", [
    ("sftp://data.example.com/t", "sftp://data.example.com/other/x.parquet"),
    ("sftp://data.example.com:22/t", "sftp://u@DATA.example.com:22/other/x.parquet"),     # user info, host case
    ("https://data.example.com/t", "https://data.example.com/u/x.parquet"),
    ("s3://b/t", "s3a://other-bucket/x.parquet"),                                           # an identity's keys
    ("gs://b/t", "gcs://other-bucket/x.parquet"),
])
def test_a_file_on_the_tables_host_or_identity_store_gets_the_credentials(root, file_uri):
    options = {"username": "u", "password": SECRET, "key": "k", "secret": SECRET}
    assert _options_for_other_place(split_uri(file_uri), options, root) == options


@pytest.mark.parametrize("root, file_uri", [
    ("sftp://data.example.com/t", "sftp://data.example.com:2222/x.parquet"),     # another port: another service
    ("https://data.example.com/t", "http://data.example.com/t/x.parquet"),        # another scheme: another store
    ("sftp://data.example.com/t", "ftp://data.example.com/t/x.parquet"),
    ("myfs://h/t", "myfs://other/x.parquet"),                                      # a store we do not know
])
def test_another_port_scheme_or_unknown_stores_host_gets_none(root, file_uri):
    assert _options_for_other_place(split_uri(file_uri), {"password": SECRET}, root) == {}


@pytest.mark.parametrize("base, table_uri, login, password, extra", [
    ("sftp://data.example.com/wh", "sftp://data.example.com/elsewhere/t", "u", SECRET, {}),
    ("https://data.example.com/wh", "https://data.example.com/t", "u", SECRET, {}),
    ("s3://bucket/wh", "s3a://other-bucket/t", "AKIA", SECRET, {}),
    ("abfss://c@acct.dfs.core.windows.net/wh", "wasbs://d@acct.blob.core.windows.net/t", None, None,
     {"storage_options": {"sas_token": f"sv=1&sig={SECRET}"}}),
    ("abfss://c@acct.dfs.core.windows.net/wh", "az://d/t", "acct", SECRET, {}),
], ids=["sftp-same-host", "https-same-host", "s3-other-bucket", "azure-same-account", "azure-no-account-in-uri"])
def test_a_connection_still_gives_its_credentials_to_its_own_host_account_or_store(base, table_uri, login, password,
                                                                                   extra, monkeypatch):
    for name in [n for n in __import__("os").environ if n.startswith("AZURE_STORAGE_")]:
        monkeypatch.delenv(name)
    cfg = DeltaConnectionConfig.from_connection("delta_default", base, login, password, extra)
    assert SECRET in json.dumps(cfg.storage_options_for(table_uri))


def test_a_connection_gives_an_identity_but_no_account_key_to_another_azure_account(monkeypatch):
    for name in [n for n in __import__("os").environ if n.startswith("AZURE_STORAGE_")]:
        monkeypatch.delenv(name)
    cfg = DeltaConnectionConfig.from_connection(
        "delta_default", "abfss://c@acct.dfs.core.windows.net/wh", None, None,
        {"storage_options": {"account_key": SECRET, "client_id": "id", "client_secret": "cs", "tenant_id": "t"}})
    sent = cfg.storage_options_for("abfss://c@other.dfs.core.windows.net/t")
    assert SECRET not in json.dumps(sent)
    assert sent["client_id"] == "id" and sent["client_secret"] == "cs"     # a service principal: any account


def test_one_credential_place_compares_stores_hosts_and_accounts():
    assert one_credential_place("s3a://b/t", "s3://c/wh", {})
    assert not one_credential_place("gs://b/t", "s3://b/wh", {})
    assert one_credential_place("sftp://h:22/t", "sftp://u@H:22/wh", {})
    assert not one_credential_place("sftp://h:2222/t", "sftp://h:22/wh", {})
    assert one_credential_place("/tmp/t", "file:///wh", {})
    assert not one_credential_place("abfss://@acct.dfs.core.windows.net/c/t", "abfss://c@acct.dfs.core.windows.net/wh",
                                    {})


@pytest.mark.parametrize("name", ["Authorization", "Proxy-Authorization", "auth", "passphrase", "Cookie", "token",
                                  "x-api-key", "api_key", "sas_token", "client_secret", "credential", "private_key",
                                  "password", "sig", "X-Auth-Token", "bearer"])
def test_credential_names_look_secret(name):
    from airflow_provider_delta.log import looks_like_secret
    assert looks_like_secret(name)


@pytest.mark.parametrize("name", ["endpoint_url", "region_name", "max_concurrency", "timeout", "account_name",
                                  "account_host", "anon", "project", "headers", "client_kwargs", "version_aware"])
def test_settings_do_not_look_secret(name):
    from airflow_provider_delta.log import looks_like_secret
    assert not looks_like_secret(name)
