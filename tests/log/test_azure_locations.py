"""One Azure location, many spellings: the identity rule in data_paths (location_of / within), as
vacuum's placement (table_relative) and clone's inside check use it. Vacuum and the reader on a real
store: tests/objectstore/test_azure_spellings.py."""
from __future__ import annotations

import pytest

from airflow_provider_delta.log.base.errors import StorageError
from airflow_provider_delta.log.base.storage import Storage
from airflow_provider_delta.log.read.data_paths import Undecided, _options_for_other_place, split_uri, table_relative
from airflow_provider_delta.log.write.clone import _inside

OPTS = {"account_name": "acct", "anon": True}


@pytest.fixture
def env_account(monkeypatch):
    """adlfs finds the account in the environment: the storage options name none."""
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")


@pytest.mark.parametrize("live", [
    "abfss://c@other.dfs.core.windows.net/t/x.parquet",          # another account
    "wasbs://c@other.blob.core.windows.net/t/x.parquet",
    "abfss://c@acct.dfs.core.chinacloudapi.cn/t/x.parquet",       # another cloud
    "abfss://d@acct.dfs.core.windows.net/t/x.parquet",            # another container
    "abfss://c@acct.dfs.core.windows.net/u/x.parquet",            # another folder
    "adl://acct.azuredatalakestore.net/t/x.parquet",              # Data Lake Gen1: another service
    "s3://c/t/x.parquet",
])
def test_a_path_elsewhere_is_outside_the_table(live):
    assert table_relative(Storage("az://c/t", OPTS), live) is None


@pytest.mark.parametrize("live", ["wasbs://c@ACCT.blob.core.windows.net/t/a/../x.parquet",
                                  "abfs://c@acct.dfs.core.windows.net/t//x.parquet"])
def test_spellings_resolve_to_the_root_relative_path(live):
    assert table_relative(Storage("az://c/t", OPTS), live) == "x.parquet"


@pytest.mark.parametrize("options", [OPTS, {**OPTS, "account_host": "acct.blob.core.windows.net"},
                                     {"connection_string": "AccountName=acct;AccountKey=a2V5;"
                                                           "EndpointSuffix=core.windows.net"}])
def test_the_account_comes_from_the_options_when_the_uri_has_none(options):
    assert table_relative(Storage("az://c/t", options), "abfss://c@acct.dfs.core.windows.net/t/x.parquet") \
        == "x.parquet"


def test_the_options_account_host_names_the_cloud():
    storage = Storage("az://c/t", {**OPTS, "account_host": "acct.blob.core.chinacloudapi.cn"})
    assert table_relative(storage, "abfss://c@acct.dfs.core.chinacloudapi.cn/t/x.parquet") == "x.parquet"
    assert table_relative(storage, "abfss://c@acct.dfs.core.windows.net/t/x.parquet") is None


#: options whose account cannot be known: adlfs connects to a host this package does not recognise (a custom
#: domain, a private endpoint), which may be any account
UNKNOWN = {"account_name": "acct", "account_host": "files.example.com", "anon": True}


def test_the_environments_account_name_is_the_tables(env_account):
    # adlfs takes AZURE_STORAGE_ACCOUNT_NAME when the options name no account
    storage = Storage("az://c/t", {"anon": True})
    assert table_relative(storage, "abfss://c@acct.dfs.core.windows.net/t/x.parquet") == "x.parquet"
    assert table_relative(storage, "abfss://c@other.dfs.core.windows.net/t/x.parquet") is None


def test_an_account_nobody_names_leaves_the_path_undecided(env_account):
    storage = Storage("az://c/t", UNKNOWN)
    assert table_relative(storage, "abfss://c@acct.dfs.core.windows.net/t/x.parquet") == Undecided("/t/x.parquet")
    assert table_relative(storage, "abfs://c/t/x.parquet") == "x.parquet"          # one account, whichever
    assert table_relative(storage, "abfss://c@acct.dfs.core.windows.net/u/x.parquet") is None
    # a host this package does not recognise (a custom domain) may be the same account
    assert isinstance(table_relative(Storage("az://c/t", OPTS), "wasbs://c@files.example.com/t/x.parquet"),
                      Undecided)


def test_clone_sees_a_target_inside_the_source_in_another_spelling(env_account):
    inner = Storage("abfss://c@acct.dfs.core.windows.net/t/in", OPTS)
    assert _inside(inner, Storage("az://c/t", OPTS), undecided=True)
    assert _inside(Storage("az://c/t", OPTS), Storage("abfs://c@acct.dfs.core.windows.net/t", OPTS), undecided=True)
    unknown = Storage("az://c/t", UNKNOWN)
    assert _inside(inner, unknown, undecided=True)              # may be inside: the clone is refused
    assert not _inside(inner, unknown, undecided=False)         # may be elsewhere: its root is looked up
    assert not _inside(Storage("abfss://c@acct.dfs.core.windows.net/u", OPTS), unknown, undecided=True)
    other = Storage("abfss://c@other.dfs.core.windows.net/t/in", {"anon": True})
    assert not _inside(other, Storage("az://c/t", OPTS), undecided=True)


@pytest.mark.parametrize("file_uri, keeps_key", [
    ("abfss://c2@other.dfs.core.windows.net/x/y.parquet", False),   # another account: its key/SAS stay home
    ("wasbs://c@other.blob.core.windows.net/t2/y.parquet", False),
    ("abfss://c@acct.dfs.core.chinacloudapi.cn/t2/y.parquet", False),  # same name, another cloud
    ("abfss://c2@acct.dfs.core.windows.net/x/y.parquet", True),     # the table's account, another container
    ("abfss://c@ACCT.blob.core.windows.net/t2/y.parquet", True),    # its Blob endpoint, any case
])
def test_the_table_accounts_key_and_sas_go_only_to_that_account(file_uri, keeps_key):
    """Docs review s10: a file of another account was opened with the table account's key and SAS token
    (failing to authenticate, and sending the SAS to another account's endpoint); the table's account name
    never goes along (adlfs takes the account from the host), identity credentials do within the table's
    cloud (s11: another cloud's host gets none, and ``anon`` so that adlfs fetches no ambient token for it)."""
    table_options = {"account_name": "acct", "account_key": "a2V5", "sas_token": "sv=1&sig=x",
                     "client_id": "app", "tenant_id": "t", "client_secret": "s"}
    got = _options_for_other_place(split_uri(file_uri), table_options, "az://c/t")
    if "chinacloudapi" in file_uri:
        assert got == {"account_name": "acct", "account_host": "acct.blob.core.chinacloudapi.cn", "anon": True}
    else:
        assert {"client_id", "tenant_id", "client_secret"} <= set(got) and "account_name" not in got
    assert ("account_key" in got and "sas_token" in got) is keeps_key
    assert ("account_key" in got or "sas_token" in got) is keeps_key
    # a table whose account nobody names: its key goes to no account spelled in a host
    assert "account_key" not in _options_for_other_place(split_uri(file_uri), {"account_key": "a2V5"}, "az://c/t")


class _TokenCredential:
    """Stands for an azure-identity credential: it obtains tokens (never called here)."""

    def get_token(self, *scopes, **kwargs):
        raise AssertionError("no token is fetched to choose options")


CS_KEY = "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;EndpointSuffix=core.windows.net"
CS_SAS = "BlobEndpoint=https://acct.blob.core.windows.net/;SharedAccessSignature=sv=1&sig=x"
CS_EMULATOR = "DefaultEndpointsProtocol=http;AccountName=acct;AccountKey=a2V5;BlobEndpoint=http://127.0.0.1:1/acct;"
SAME, OTHER = "abfss://c2@acct.dfs.core.windows.net/x/y.parquet", "abfss://c2@other.dfs.core.windows.net/x/y.parquet"


@pytest.mark.parametrize("connection_string", [CS_KEY, CS_SAS, CS_EMULATOR], ids=["key", "sas-endpoint", "emulator"])
def test_a_connection_string_goes_to_its_own_account_only(connection_string):
    """s11: the connection string names the account it is for (AccountName, or the BlobEndpoint the SDK sends
    every request to): it goes to a file of that account in another container, to no other account."""
    options = {"connection_string": connection_string, "max_concurrency": 2}
    assert _options_for_other_place(split_uri(SAME), options, "az://c/t") == options
    assert _options_for_other_place(split_uri(OTHER), options, "az://c/t") == {"max_concurrency": 2}
    # the table's root spelling its account in the host: the same rule
    assert _options_for_other_place(split_uri(SAME), options, "abfss://c@acct.dfs.core.windows.net/t") == options


def test_a_connection_string_of_another_account_than_the_tables_goes_only_to_its_own():
    """An account_name naming one account and a connection string another (adlfs uses the string): the
    table's account is in doubt, so the key goes nowhere (s11 review: it was sent to account_name's account);
    the string, which names its account, only to that account."""
    options = {"account_name": "acct", "account_key": "a2V5",
               "connection_string": CS_KEY.replace("AccountName=acct", "AccountName=other")}
    assert _options_for_other_place(split_uri(SAME), options, "az://c/t") == {}
    assert _options_for_other_place(split_uri(OTHER), options, "az://c/t") == {
        "connection_string": options["connection_string"]}


def test_a_credential_option_goes_by_what_it_is():
    """adlfs's ``credential``: a token credential (an identity) reaches another account of the cloud; a SAS
    string (or key credential) only its own account."""
    token = _TokenCredential()
    assert _options_for_other_place(split_uri(OTHER), {"account_name": "acct", "credential": token},
                                    "az://c/t") == {"credential": token}
    assert _options_for_other_place(split_uri(OTHER), {"account_name": "acct", "credential": "sv=1&sig=x"},
                                    "az://c/t") == {}
    assert _options_for_other_place(split_uri(SAME), {"account_name": "acct", "credential": "sv=1&sig=x"},
                                    "az://c/t") == {"credential": "sv=1&sig=x"}


def test_a_file_in_another_cloud_gets_no_identity_and_no_ambient_one():
    """A host of another Azure cloud gets neither the table's principal nor adlfs's ambient
    DefaultAzureCredential token: ``anon``. A host outside the Azure clouds (any other ``*.blob.core.<suffix>``,
    whoever runs it) is refused: adlfs would send it the environment's AZURE_STORAGE_* credentials (s11
    review). Within the table's own (non-public) cloud the principal goes along, with the account's host,
    which adlfs cannot take from such a URI."""
    principal = {"account_name": "acct", "client_id": "app", "tenant_id": "t", "client_secret": "s"}
    gov = "abfss://c@x.dfs.core.usgovcloudapi.net/y.parquet"
    assert _options_for_other_place(split_uri(gov), principal, "az://c/t") == {
        "account_name": "x", "account_host": "x.blob.core.usgovcloudapi.net", "anon": True}
    with pytest.raises(StorageError, match="none of the Azure clouds"):
        _options_for_other_place(split_uri("abfss://c@x.dfs.core.example.com/y.parquet"), principal, "az://c/t")
    china = {**principal, "account_host": "acct.blob.core.chinacloudapi.cn"}
    got = _options_for_other_place(split_uri("abfss://c@b.dfs.core.chinacloudapi.cn/y.parquet"), china, "az://c/t")
    assert got == {"client_id": "app", "tenant_id": "t", "client_secret": "s", "account_name": "b",
                   "account_host": "b.blob.core.chinacloudapi.cn"}


def test_an_unknown_option_that_looks_secret_stays_with_the_tables_account():
    """Fail safe for option names this package does not classify (object_store's spellings, a newer adlfs
    credential): one whose name looks like a secret's goes only to the table's own account."""
    options = {"account_name": "acct", "azure_storage_sas_key": "sv=1&sig=x", "bearer_token": "t", "blocksize": 4}
    assert _options_for_other_place(split_uri(OTHER), options, "az://c/t") == {"blocksize": 4}
    assert _options_for_other_place(split_uri(SAME), options, "az://c/t") == {
        "azure_storage_sas_key": "sv=1&sig=x", "bearer_token": "t", "blocksize": 4}


@pytest.mark.parametrize("connection_string, account", [
    ("AccountName=acct;AccountKey=a2V5;", "acct.core.windows.net"),                  # a trailing ';' is fine
    ("accountname=acct;accountkey=a2V5;EndpointSuffix=core.chinacloudapi.cn", "acct.core.chinacloudapi.cn"),
    ("AccountName=a;AccountKey=a2V5;AccountName=b", "b.core.windows.net"),            # the SDK: the later one
    ("AccountName=acct;AccountKey=a2V5; AccountName=other", "acct.core.windows.net"),  # ' AccountName': ignored
    ("AccountName=acct;AccountKey=a2V5;;", "acct.core.windows.net"),                # trailing ones all stripped
    ("AccountName=acct;;AccountKey=a2V5", None),                                     # the SDK refuses an empty field
    ("AccountName=acct;garbage", None),                                               # ... and one without '='
])
def test_a_connection_string_is_read_as_the_azure_sdk_reads_it(connection_string, account):
    from airflow_provider_delta.log.read.data_paths import _connection_string_account
    assert _connection_string_account(connection_string) == account
