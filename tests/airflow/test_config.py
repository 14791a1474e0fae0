"""Connection settings -> table URIs, storage options and commit owner (no Airflow involved)."""
from __future__ import annotations

import pytest
import sqlalchemy as sa

from airflow_provider_delta.hooks.config import (DeltaConnectionConfig, database_url, is_absolute_uri,
                                                 join_uri, redact_options)
from airflow_provider_delta.log.base.errors import InvalidArgumentError

SECRET = "s3cr3t/+=&?pa ss"


def cfg(host="s3://bucket/warehouse", login=None, password=None, extra=None, owner=None):
    return DeltaConnectionConfig.from_connection("c1", host, login, password, extra or {}, owner)


@pytest.mark.parametrize("uri,expected", [
    ("/data/t", True), ("file:///data/t", True), ("s3://b/t", True), ("memory://t", True),
    ("~/t", True), ("orders", False), ("a/b", False), ("./t", False),
])
def test_absolute_uri_detection(uri, expected):
    assert is_absolute_uri(uri) is expected


def test_relative_table_uri_resolves_below_the_base():
    c = cfg()
    assert c.resolve("orders") == "s3://bucket/warehouse/orders"
    assert c.resolve("sales/orders/") == "s3://bucket/warehouse/sales/orders"
    assert c.resolve("a/../b") == "s3://bucket/warehouse/b"
    # absolute ones are kept as they are, whatever the base
    assert c.resolve("/local/t") == "/local/t"
    assert c.resolve("gs://other/t") == "gs://other/t"


def test_base_uri_extra_wins_over_host_and_local_base_works():
    c = cfg(host="ignored-host", extra={"base_uri": "/data/lake"})
    assert c.resolve("orders") == "/data/lake/orders"


@pytest.mark.parametrize("rel", ["..", "../x", "a/../../x"])
def test_relative_uri_may_not_escape_the_base(rel):
    with pytest.raises(InvalidArgumentError, match="outside"):
        cfg().resolve(rel)


def test_relative_uri_without_base_is_a_clear_error():
    with pytest.raises(InvalidArgumentError, match="relative table_uri 'orders'.*no connection"):
        DeltaConnectionConfig().resolve("orders")
    with pytest.raises(InvalidArgumentError, match="has no base URI"):
        cfg(host=None).resolve("orders")
    with pytest.raises(InvalidArgumentError, match="required"):
        DeltaConnectionConfig().resolve("  ")


def test_relative_base_uri_is_refused():
    with pytest.raises(InvalidArgumentError, match="must be absolute"):
        cfg(host="relative/base")


@pytest.mark.parametrize("base,expected", [
    ("s3://b/w", {"key": "AKIA", "secret": SECRET}),
    ("s3a://b/w", {"key": "AKIA", "secret": SECRET}),
    ("abfs://c/w", {"account_name": "AKIA", "account_key": SECRET}),
    ("gs://b/w", {"project": "AKIA", "token": SECRET}),
    ("sftp://host/w", {"username": "AKIA", "password": SECRET}),
    ("/local/w", {}),
    ("memory://w", {}),
])
def test_login_and_password_map_onto_the_storage_credentials(base, expected):
    c = cfg(host=base, login="AKIA", password=SECRET)
    assert c.storage_options_for(c.resolve("t")) == expected


def test_credential_keys_extra_and_storage_options_combine():
    c = cfg(login="AKIA", password=SECRET,
            extra={"storage_options": '{"endpoint_url": "http://minio:9000"}',
                   "credential_keys": {"login": "aws_access_key_id", "password": "aws_secret_access_key"}})
    assert c.storage_options_for("s3://bucket/warehouse/t") == {
        "endpoint_url": "http://minio:9000", "aws_access_key_id": "AKIA", "aws_secret_access_key": SECRET}


def test_credentials_do_not_leak_to_other_storage():
    c = cfg(login="AKIA", password=SECRET, extra={"storage_options": {"endpoint_url": "http://m"}})
    assert c.storage_options_for("gs://other/t") == {}
    assert c.storage_options_for("s3://bucket/warehouse/t")["secret"] == SECRET


def test_bad_storage_options_are_typed_errors():
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        cfg(extra={"storage_options": "{not json"})
    with pytest.raises(InvalidArgumentError, match="JSON object"):
        cfg(extra={"storage_options": [1, 2]})


def test_secrets_stay_out_of_repr_and_describe():
    c = cfg(login="AKIA", password=SECRET,
            extra={"storage_options": {"session_token": SECRET, "region": "eu"},
                   "commit_owner": {"type": "sql", "url": f"postgresql://u:{SECRET}@db/x"}})
    text = repr(c) + repr(c.describe()) + repr(c.commit_owner)
    assert SECRET not in text
    assert "AKIA" not in repr(c)
    assert c.describe()["storage_options"] == {"session_token": "***", "region": "eu"}
    assert c.describe()["commit_owner"].startswith("postgresql://u:***@db")
    assert redact_options({"nested": {"account_key": "x"}}) == {"nested": {"account_key": "***"}}


def test_commit_owner_from_url_and_from_another_connection(tmp_path):
    c = cfg(extra={"commit_owner": {"type": "sql", "url": "sqlite:///x.db", "backfill_batch_size": 5}})
    assert c.commit_owner.url == "sqlite:///x.db" and c.commit_owner.options == {"backfill_batch_size": 5}
    owner_conn = {"conn_type": "postgres", "host": "db.internal", "login": "delta", "password": SECRET,
                  "port": 5433, "schema": "owners", "extra": {}}
    c = cfg(extra={"commit_owner": {"type": "sql", "conn_id": "owner_db"}}, owner=owner_conn)
    url = sa.engine.make_url(c.commit_owner.url)
    assert (url.drivername, url.host, url.port, url.database, url.username, url.password) == \
        ("postgresql", "db.internal", 5433, "owners", "delta", SECRET)
    # the flat form field is a shortcut for the same thing
    c = cfg(extra={"commit_owner_conn_id": "owner_db"}, owner=owner_conn)
    assert sa.engine.make_url(c.commit_owner.url).password == SECRET


def test_commit_owner_errors_are_clear():
    with pytest.raises(InvalidArgumentError, match="needs 'url' or 'conn_id'"):
        cfg(extra={"commit_owner": {"type": "sql"}})
    with pytest.raises(InvalidArgumentError, match="was not loaded"):
        cfg(extra={"commit_owner": {"conn_id": "x"}})
    with pytest.raises(InvalidArgumentError, match="only 'sql'"):
        cfg(extra={"commit_owner": {"type": "zookeeper", "url": "zk://x"}}).commit_owner.build()


def test_database_url_from_connection_fields(tmp_path):
    assert database_url("sqlite", str(tmp_path / "o.db"), None, None, None, None) == f"sqlite:///{tmp_path}/o.db"
    assert database_url("mysql", "h", "u", None, None, "d") == "mysql://u@h/d"
    assert database_url("anything", None, None, None, None, None,
                        {"sqlalchemy_url": "postgresql+psycopg2://x/y"}) == "postgresql+psycopg2://x/y"
    with pytest.raises(InvalidArgumentError, match="cannot build a database URL"):
        database_url("http", "h", None, None, None, None)
    with pytest.raises(InvalidArgumentError, match="database file"):
        database_url("sqlite", None, None, None, None, None)


def test_single_writer_flag_accepts_form_strings():
    assert cfg(extra={"single_writer": "true"}).single_writer is True
    assert cfg(extra={"single_writer": False}).single_writer is False


def test_join_uri_keeps_the_base_scheme():
    assert join_uri("s3://b/", "x/y") == "s3://b/x/y"
    assert join_uri("/data", ".") == "/data"
    assert join_uri("s3://", "tbl") == "s3://tbl"            # was "s3:/tbl"
    assert join_uri("file:///", "x") == "file:///x"
    assert join_uri("file:///data/", "x") == "file:///data/x"
    assert join_uri("/", "x") == "/x"


def test_prefixed_form_fields_are_understood():
    from airflow_provider_delta.hooks.config import commit_owner_conn_id
    extra = {"extra__delta__single_writer": True, "extra__delta__commit_owner_conn_id": "owner_db",
             "extra__delta__storage_options": {"anon": True}}
    assert commit_owner_conn_id(extra) == "owner_db"
    c = cfg(extra=extra, owner={"conn_type": "sqlite", "host": "/tmp/o.db", "login": None, "password": None,
                                "port": None, "schema": None, "extra": {}})
    assert c.single_writer and c.storage_options == {"anon": True} and c.commit_owner.url == "sqlite:////tmp/o.db"
