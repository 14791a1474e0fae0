"""Review s11 (report-only) of the Azure option rule for files outside the table (data_paths.
_options_for_other_place / _azure_options_for_account), Hadoop's schemes in locate(), and the credential-name
rule (base/secret_names.py) as the connection log's redaction uses it.

Each finding was a strict xfail; all are fixed (s11-azure2) and the tests are plain. No network is used: the
tests look at the adlfs file system :func:`locate` builds for a file (its service client's URL, its
credential), which is what every later request of that file system carries.
"""
from __future__ import annotations

import pytest
from azure.storage.blob import BlobServiceClient

from airflow_provider_delta.hooks.config import redact_options
from airflow_provider_delta.log.base.errors import StorageError
from airflow_provider_delta.log.base.storage import Storage
from airflow_provider_delta.log.read.data_paths import Undecided, _options_for_other_place, locate, split_uri, table_relative

_AZURE_ENV = ("AZURE_STORAGE_ACCOUNT_NAME", "AZURE_STORAGE_ACCOUNT_KEY", "AZURE_STORAGE_CONNECTION_STRING",
              "AZURE_STORAGE_SAS_TOKEN", "AZURE_STORAGE_CLIENT_ID", "AZURE_STORAGE_CLIENT_SECRET",
              "AZURE_STORAGE_TENANT_ID", "AZURE_STORAGE_ANON")
TABLE = "abfss://c@acct.dfs.core.windows.net/t"
SAS = "sv=2024-01-01&sig=TABLESECRET"


@pytest.fixture
def no_azure_env(monkeypatch):
    for name in _AZURE_ENV:
        monkeypatch.delenv(name, raising=False)


def _sends_credentials(fs) -> bool:
    """Whether the adlfs file system authenticates its requests (a SAS in its URL, a key, a token credential,
    a connection string)."""
    return bool(fs.sas_token or fs.account_key or fs.credential or fs.connection_string
                or "sig=" in fs.service_client.url)


@pytest.mark.parametrize("file_uri", [
    "abfss://c@evil.com@other.dfs.core.windows.net/x.parquet",
    "abfss://c@acct.dfs.core.windows.net:443@other.dfs.core.windows.net/x.parquet",
    "wasbs://c@x@other.blob.core.windows.net/x.parquet",
])
@pytest.mark.parametrize("options", [{"sas_token": SAS}, {"sas_token": SAS, "account_key": "a2V5"}],
                         ids=["sas", "sas+key"])
def test_a_userinfo_at_sign_does_not_carry_the_tables_credentials_to_another_account(no_azure_env, file_uri, options):
    table = Storage(TABLE, options)
    assert table.files.fs.account_name == "acct"
    try:
        where = locate(table, file_uri)
    except StorageError:
        return                                      # refused: fine
    fs = where.storage.files.fs
    assert fs.account_name == "acct" or not _sends_credentials(fs), (
        f"{file_uri} opened at {fs.account_url} with the table's credentials ({fs.service_client.url})")


@pytest.mark.parametrize("file_uri", ["abfss://c@evil.com@acct.dfs.core.windows.net/t/x.parquet",
                                      "abfss://c@acct.dfs.core.windows.net@acct.dfs.core.windows.net/t/x.parquet"])
def test_a_path_with_two_at_signs_is_refused_for_reads_and_kept_by_vacuum(no_azure_env, file_uri):
    """s11 review: an authority with two '@' is opened nowhere (StorageError) and is Undecided for vacuum, which
    then keeps the file it may name, as for any path whose account cannot be known."""
    table = Storage(TABLE, {"sas_token": SAS})
    with pytest.raises(StorageError, match="more than one '@'"):
        locate(table, file_uri)
    assert isinstance(table_relative(table, file_uri), Undecided)
    assert _options_for_other_place(split_uri(file_uri), {"sas_token": SAS}, TABLE) == {}


@pytest.mark.parametrize("env", [
    {"AZURE_STORAGE_SAS_TOKEN": SAS},
    {"AZURE_STORAGE_CLIENT_ID": "app", "AZURE_STORAGE_CLIENT_SECRET": "s3cr3t", "AZURE_STORAGE_TENANT_ID": "t"},
], ids=["env-sas", "env-principal"])
@pytest.mark.parametrize("file_uri", ["abfss://c@x.dfs.core.evil.example/y.parquet",
                                      "abfss://c@acct.dfs.core.windows.net.evil.example/y.parquet"],
                         ids=["other-cloud", "lookalike-host"])
def test_the_environments_credentials_do_not_go_to_a_host_outside_the_azure_clouds(
        no_azure_env, monkeypatch, env, file_uri):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    table = Storage(TABLE, {})
    try:
        where = locate(table, file_uri)
    except StorageError:
        return
    fs = where.storage.files.fs
    assert not _sends_credentials(fs), f"{file_uri}: {fs.account_url} gets the environment's credential"


_CS_KEY = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net"


@pytest.mark.parametrize("connection_string, file_uri", [
    (_CS_KEY.lower().replace("a2v5", "a2V5"), "abfss://c2@acct.dfs.core.windows.net/x.parquet"),
    (_CS_KEY.upper().replace("ACCT", "acct").replace("A2V5", "a2V5"), "abfss://c2@acct.dfs.core.windows.net/x.parquet"),
    ("blobendpoint=https://acct.blob.core.windows.net/;sharedaccesssignature=sv=1&sig=x",
     "wasbs://c2@acct.blob.core.windows.net/x.parquet"),
    ("UseDevelopmentStorage=true", "wasbs://c2@devstoreaccount1.blob.core.windows.net/x.parquet"),
], ids=["lower", "upper", "sas-lower", "dev-storage"])
def test_a_connection_string_in_any_key_case_goes_to_its_own_account(connection_string, file_uri):
    sdk_account = BlobServiceClient.from_connection_string(connection_string).account_name
    assert sdk_account in file_uri                                 # the SDK reads the string as that account's
    options = {"connection_string": connection_string}
    assert _options_for_other_place(split_uri(file_uri), options, "az://c/t") == options


@pytest.mark.parametrize("name", ["connectionString", "ConnectionString", "SharedAccessSignature"])
def test_camel_case_connection_string_names_are_redacted(name):
    assert redact_options({name: "AccountName=acct;AccountKey=a2V5"})[name] == "***"


@pytest.mark.parametrize("options", [{}, {"account_key": "a2V5"}], ids=["no-options", "key"])
def test_an_environment_connection_string_for_another_account_puts_the_table_in_doubt(no_azure_env, monkeypatch, options):
    """adlfs connects with AZURE_STORAGE_CONNECTION_STRING when the options hold none: the table is then in the
    string's account, not the URI's: a path in the other account is Undecided for vacuum (kept), never outside;
    one spelled as the root is the table's wherever adlfs reaches it."""
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", _CS_KEY.replace("acct", "other"))
    table = Storage(TABLE, options)
    assert isinstance(table_relative(table, "abfss://c@other.dfs.core.windows.net/t/x.parquet"), Undecided)
    assert table_relative(table, "abfss://c@acct.dfs.core.windows.net/t/x.parquet") == "x.parquet"
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    assert table_relative(table, "abfss://c@other.dfs.core.windows.net/t/x.parquet") is None


def test_a_file_of_another_account_read_through_the_environments_connection_string_is_kept(no_azure_env, monkeypatch):
    """adlfs opens a file of another account (which gets none of the table's account credentials) with
    AZURE_STORAGE_CONNECTION_STRING, so it reads the string's account - here the table's own: the path may name
    a table file, and vacuum keeps it (Undecided), never 'certainly elsewhere'."""
    monkeypatch.setenv("AZURE_STORAGE_CONNECTION_STRING", _CS_KEY)          # acct, the table's account
    table = Storage(TABLE, {})
    assert isinstance(table_relative(table, "abfss://c@other.dfs.core.windows.net/t/x.parquet"), Undecided)
    monkeypatch.delenv("AZURE_STORAGE_CONNECTION_STRING")
    assert table_relative(table, "abfss://c@other.dfs.core.windows.net/t/x.parquet") is None
