"""Review s12 (report-only) of which storage options a data file gets (data_paths._options_for_other_place,
locate) and which a table gets from a connection (hooks/config.storage_options_for).

Each open finding is a strict xfail: whoever fixes it removes the marker (the test must then pass).
"""
from __future__ import annotations

import functools
import http.server
import json
import threading

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.hooks.config import DeltaConnectionConfig
from airflow_provider_delta.log import AddFile, DeltaTable
from airflow_provider_delta.log.base.errors import StorageError
from airflow_provider_delta.log.read.data_paths import _options_for_other_place, split_uri

SCHEMA = pa.schema([("id", pa.int64())])
SECRET = "TABLESECRET"


def _parquet(value: int) -> bytes:
    buf = pa.BufferOutputStream()
    pq.write_table(pa.table({"id": [value]}, schema=SCHEMA), buf)
    return buf.getvalue().to_pybytes()


class _Server:
    """A local HTTP server of a directory that records the Authorization header of every request."""

    def __init__(self, directory: str):
        seen = self.seen = []

        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **k):
                super().__init__(*a, directory=directory, **k)

            def do_GET(self):
                seen.append(self.headers.get("Authorization"))
                super().do_GET()

            def do_HEAD(self):
                seen.append(self.headers.get("Authorization"))
                super().do_HEAD()

            def log_message(self, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


def test_an_http_tables_authorization_header_does_not_go_to_another_host(tmp_path):
    data = _parquet(7)
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "x.parquet").write_bytes(data)
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    table_server, other_server = _Server(str(tmp_path / "t")), _Server(str(tmp_path / "other"))
    try:
        with t.transaction() as txn:          # the add names a file on another host ("localhost", another port)
            txn.add_file(AddFile(f"http://localhost:{other_server.port}/x.parquet", len(data), {}, 1, True,
                                 json.dumps({"numRecords": 1})))
        remote = DeltaTable(f"http://127.0.0.1:{table_server.port}",
                            storage_options={"headers": {"Authorization": f"Bearer {SECRET}"}})
        try:
            remote.snapshot().to_pyarrow()
        except (StorageError, OSError):
            pass                                # not read (no credential for that host): fine
        assert table_server.seen and set(table_server.seen) == {f"Bearer {SECRET}"}   # the table's own host: yes
        assert not any(other_server.seen), f"the table's Authorization header went to another host: {other_server.seen}"
    finally:
        table_server.close()
        other_server.close()


@pytest.mark.parametrize("root, file_uri", [
    ("sftp://data.example.com/t", "sftp://evil.example/x.parquet"),
    ("ftp://data.example.com/t", "ftp://evil.example/x.parquet"),
    ("webdav://data.example.com/t", "webdav://evil.example/x.parquet"),
])
def test_a_file_on_another_host_gets_no_host_password(root, file_uri):
    options = {"username": "u", "password": SECRET}
    sent = _options_for_other_place(split_uri(file_uri), options, root)
    assert SECRET not in json.dumps(sent), f"{file_uri} gets the password of {root}: {sent}"


@pytest.mark.parametrize("base, table_uri, login, password, extra", [
    ("sftp://data.example.com/wh", "sftp://evil.example/t", "u", SECRET, {}),
    ("https://data.example.com/wh", "https://evil.example/t", "u", SECRET, {}),
    ("abfss://c@acct.dfs.core.windows.net/wh", "abfss://c@evil.dfs.core.windows.net/t", None, None,
     {"storage_options": {"sas_token": f"sv=1&sig={SECRET}"}}),
], ids=["sftp", "https", "azure-sas"])
def test_a_connection_does_not_hand_its_credentials_to_a_table_on_another_host(base, table_uri, login, password, extra):
    cfg = DeltaConnectionConfig.from_connection("delta_default", base, login, password, extra)
    assert SECRET in json.dumps(cfg.storage_options_for(base + "/orders"))        # its own host: yes
    sent = cfg.storage_options_for(cfg.resolve(table_uri))
    assert SECRET not in json.dumps(sent), f"{table_uri} gets the credentials of {base}: {sent}"


@pytest.mark.parametrize("root, spelled", [("memory://{u}/t", "memory:///{u}/t/x.parquet"),
                                           ("memory:///{u}/t", "memory://{u}/t/x.parquet")],
                         ids=["authority-root", "path-root"])
def test_vacuum_keeps_a_live_memory_file_in_the_other_spelling(root, spelled):
    import uuid
    u = f"rv12{uuid.uuid4().hex[:8]}"
    t = DeltaTable.create(root.format(u=u), SCHEMA)
    data = _parquet(7)
    t.storage.write_bytes("x.parquet", data)
    t.storage.write_bytes("orphan.parquet", data)
    with t.transaction() as txn:
        txn.add_file(AddFile(spelled.format(u=u), len(data), {}, 1, True, json.dumps({"numRecords": 1})))
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]          # read from the table's x.parquet
    deleted = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)["files_deleted"]
    assert [p.rsplit("/", 1)[-1] for p in deleted] == ["orphan.parquet"]
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [7]


@pytest.mark.parametrize("options", [
    {"headers": {"Authorization": f"Bearer {SECRET}"}},
    {"client_kwargs": {"auth": f"user:{SECRET}"}},
    {"passphrase": SECRET},
    {"headers": {"Cookie": f"session_id={SECRET}"}},
], ids=["authorization-header", "auth", "passphrase", "cookie"])
def test_describe_shows_no_credential_of_the_connection(options):
    cfg = DeltaConnectionConfig.from_connection("delta_default", "https://data.example.com/wh", None, None,
                                                {"storage_options": options})
    assert SECRET not in json.dumps(cfg.describe()), cfg.describe()


@pytest.mark.parametrize("uri, namespace", [
    (f"sftp://u:{SECRET}@data.example.com:22/t", "sftp://data.example.com:22"),
    (f"ftp://u:{SECRET}@data.example.com/t", "ftp://data.example.com"),
    (f"https://u:{SECRET}@data.example.com/t", "https://data.example.com"),
], ids=["sftp", "ftp", "https"])
def test_the_lineage_namespace_holds_no_userinfo_password(uri, namespace):
    from airflow_provider_delta.lineage import dataset_name
    assert dataset_name(uri)[0] == namespace


@pytest.mark.parametrize("root, options", [("ABFS://c/t", {"account_name": "acct", "anon": True}),
                                           ("S3://b/t", {"anon": True}), ("oss://b/t", {})])
def test_a_table_root_fsspec_cannot_open_is_a_typed_error(root, options):
    from airflow_provider_delta.log.base.errors import DeltaError
    from airflow_provider_delta.log.base.storage import Storage
    try:
        Storage(root, options)
    except DeltaError:
        return
    except Exception as e:                              # noqa: BLE001 - what we look at
        pytest.fail(f"{root}: untyped {type(e).__name__}: {e}")


@pytest.mark.parametrize("base, table_uri, login, password", [
    ("s3a://bucket/wh", "s3://bucket/wh/t", "AKIA", SECRET),
    ("abfss://c@acct.dfs.core.windows.net/wh", "abfs://c@acct.dfs.core.windows.net/wh/t", "acct", SECRET),
    ("gs://bucket/wh", "gcs://bucket/wh/t", "project", SECRET),
], ids=["s3a-s3", "abfss-abfs", "gs-gcs"])
def test_a_connection_gives_its_credentials_to_a_table_of_its_store_under_another_scheme(base, table_uri, login,
                                                                                         password):
    cfg = DeltaConnectionConfig.from_connection("delta_default", base, login, password, {})
    assert SECRET in json.dumps(cfg.storage_options_for(table_uri))


def test_the_tables_own_file_is_read_with_its_key_when_the_account_name_is_in_the_environment(monkeypatch):
    from airflow_provider_delta.log.base.storage import Storage
    from airflow_provider_delta.log.read.data_paths import locate
    for name in [n for n in __import__("os").environ if n.startswith("AZURE_STORAGE_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("AZURE_STORAGE_ACCOUNT_NAME", "acct")
    table = Storage("abfs://c/t", {"account_key": "a2V5"})
    assert table.files.fs.account_name == "acct"                        # adlfs: the table is in acct
    where = locate(table, "abfss://c@acct.dfs.core.windows.net/t/x.parquet")
    fs = where.storage.files.fs
    assert where.storage is table or fs.account_key == "a2V5", (
        f"the table's own file is opened at {fs.account_url} without the table's key")


@pytest.mark.parametrize("connection_string", [
    "AccountName=acct;AccountKey=a2V5; BlobEndpoint=https://other.blob.core.windows.net/",
    "AccountName=acct;AccountKey=a2V5; AccountName=other",
], ids=["spaced-endpoint", "spaced-second-name"])
def test_a_connection_string_names_the_account_the_sdk_connects_to(monkeypatch, connection_string):
    from urllib.parse import urlsplit

    from airflow_provider_delta.log.base.storage import Storage
    from airflow_provider_delta.log.read.data_paths import table_relative
    for name in [n for n in __import__("os").environ if n.startswith("AZURE_STORAGE_")]:
        monkeypatch.delenv(name)
    table = Storage("abfs://c/t", {"connection_string": connection_string})
    host = urlsplit(table.files.fs.service_client.url).hostname
    assert host == "acct.blob.core.windows.net"                             # where adlfs sends every request
    assert table_relative(table, "abfss://c@acct.dfs.core.windows.net/t/x.parquet") is not None
