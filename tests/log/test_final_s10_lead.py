"""Final review (session 10) of the lead's late fixes: findings as strict xfails (report only).

c2b02e2 (SQLite busy timeout), the OPTIMIZE dictionary choice (8ebab58, 7553b4d) and e10d1b0 (Azure
credentials for files of another account). Nothing here touches a network or starts Spark.
"""
from __future__ import annotations

import json
import os
import time

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.commit_owner.sql import SqlCommitOwner
from airflow_provider_delta.log.base.errors import InvalidArgumentError
from airflow_provider_delta.log.read.data_paths import _options_for_other_place, split_uri
from airflow_provider_delta.log.write.optimize_rewrite import _dictionary_columns


@pytest.mark.parametrize("url_query, engine_kwargs", [("?timeout=abc", None),
                                                      ("", {"connect_args": {"timeout": -1}})])
def test_a_bad_sqlite_timeout_creates_nothing(tmp_path, url_query, engine_kwargs):
    target = tmp_path / "owners" / "x"
    with pytest.raises(InvalidArgumentError):
        SqlCommitOwner(f"sqlite:///{target}/owner.db{url_query}", engine_kwargs=engine_kwargs)
    assert not (tmp_path / "owners").exists()


def test_dictionary_choice_is_not_quadratic_in_nested_columns():
    fields = [pa.field(f"s{i}", pa.struct([("a", pa.int32()), ("b", pa.list_(pa.struct([("x", pa.string())])))]))
              for i in range(400)]
    rows = pa.schema(fields).empty_table()
    t0 = time.perf_counter()
    sink = pa.BufferOutputStream()
    pq.write_table(rows, sink)
    pq.read_metadata(pa.BufferReader(sink.getvalue()))
    once = time.perf_counter() - t0
    t0 = time.perf_counter()
    chosen = _dictionary_columns(rows)
    elapsed = time.perf_counter() - t0
    assert len(chosen) == 800
    assert elapsed < 20 * once + 0.5, (elapsed, once)


TABLE_OPTIONS = {"account_name": "acct", "account_key": "a2V5", "sas_token": "sv=1&sig=x",
                 "client_id": "app", "tenant_id": "t", "client_secret": "s"}


@pytest.mark.parametrize("file_uri", ["wasbs://other.blob.core.windows.net/y.parquet",
                                      "wasb://other.blob.core.windows.net/d/y.parquet"])
def test_a_root_container_file_of_another_account_gets_no_table_account_key(file_uri):
    got = _options_for_other_place(split_uri(file_uri), TABLE_OPTIONS, "az://c/t")
    assert {"client_id", "tenant_id", "client_secret"} <= set(got)
    assert not {"account_name", "account_key", "sas_token"} & set(got), got


def test_a_connection_string_tables_same_account_file_keeps_its_credential():
    cs = {"connection_string": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;"
                               "EndpointSuffix=core.windows.net"}
    got = _options_for_other_place(split_uri("abfss://c2@acct.dfs.core.windows.net/x/y.parquet"), cs, "az://c/t")
    assert "connection_string" in got or got.get("account_key") == "a2V5", got


def test_held_connection_string_goes_to_no_other_account():
    cs = {"connection_string": "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=a2V5;"
                               "EndpointSuffix=core.windows.net"}
    got = _options_for_other_place(split_uri("abfss://c2@other.dfs.core.windows.net/x/y.parquet"), cs, "az://c/t")
    assert "connection_string" not in got and "account_key" not in got


def test_held_sqlite_timeout_rules(tmp_path):
    """c2b02e2 held: URL ?timeout= counts, connect_args wins, clamp, caller's dict unchanged."""
    kwargs = {"connect_args": {"check_same_thread": False}}
    for url, kw, ms in [(f"sqlite:///{tmp_path}/a.db?timeout=5", None, 5000),
                        (f"sqlite:///{tmp_path}/a.db?timeout=5", {"connect_args": {"timeout": 2}}, 2000),
                        (f"sqlite:///{tmp_path}/a.db?timeout=1e12", None, 2**31 - 1),
                        (f"sqlite:///{tmp_path}/a.db", kwargs, 60000)]:
        owner = SqlCommitOwner(url, engine_kwargs=kw)
        with owner.engine.connect() as c:
            assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == ms
        owner.dispose()
    assert kwargs == {"connect_args": {"check_same_thread": False}}
    assert os.path.exists(tmp_path / "a.db")


# ------------------------------------------------------------------ c83eea2: the hole check's tie look-up
@pytest.mark.parametrize("spelling", ["d//x.parquet", "d/x.parquet"], ids=["canonical-key", "same-spelling"])
def test_a_re_added_removed_file_does_not_hide_a_real_hole(tmp_path, spelling):
    from test_break_s10_commit import SCHEMA, _CleanupBeforeThePut

    from airflow_provider_delta.log import CommitOutcomeUnknownError, InvalidCommittedVersionError
    from airflow_provider_delta.log.base.commit_actions import AddFile
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    t.auto_checkpoint = False
    os.makedirs(os.path.join(t.storage.root, "d"))
    data = os.path.join(t.storage.root, "d", "x.parquet")
    pq.write_table(pa.table({"id": [3]}, schema=SCHEMA), data)
    stats = json.dumps({"numRecords": 1})
    with t.transaction() as txn:                                        # v1: d/x.parquet
        txn.add_file(AddFile("d/x.parquet", os.path.getsize(data), {}, int(time.time() * 1000), True, stats))
    t.write(pa.table({"id": [2]}, schema=SCHEMA), mode="overwrite")     # v2: removed (a tombstone)
    t.storage.files = _CleanupBeforeThePut(t.storage.files, t.uri)      # v3, v4 by another writer, cleanup
    with pytest.raises((CommitOutcomeUnknownError, InvalidCommittedVersionError)):
        with t.transaction() as txn:                                    # put back: lands in the hole as v3
            txn.add_file(AddFile(spelling, os.path.getsize(data), {}, int(time.time() * 1000), True, stats))
