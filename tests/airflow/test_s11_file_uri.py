"""The one rule joining a table root and a log path into a URI (data_paths.file_uri), for its three callers:
the manifest hook, the pinned Spark snapshot and shallow clone. A scheme-less absolute path of an object-store
table is on the table's own store (s3://b/t/x.parquet), as locate() reads it; the callers made it a local
file:///t/x.parquet (manifest) or joined it under the root (s3://b/t/t/x.parquet: pinned, clone)."""
from __future__ import annotations

import pytest

from airflow_provider_delta.hooks.manifest import _file_uri as manifest_file_uri
from airflow_provider_delta.log.base.storage import Storage
from airflow_provider_delta.log.read.data_paths import file_uri, locate
from airflow_provider_delta.log.write.clone import absolute_uri
from airflow_provider_delta.spark.pinned import _file_uri as pinned_file_uri

CASES = [("s3://b/t", "/t/x.parquet", "s3://b/t/x.parquet"),
         ("s3://b/t", "d=1/x.parquet", "s3://b/t/d=1/x.parquet"),
         ("s3://b/t", "s3://other/x.parquet", "s3://other/x.parquet"),
         ("memory://m/t", "/t/x.parquet", "memory://m/t/x.parquet")]


@pytest.mark.parametrize("root,path,expected", CASES)
def test_every_caller_joins_an_object_store_path_by_the_one_rule(root, path, expected):
    assert file_uri(root, path) == expected
    assert manifest_file_uri(root, path) == expected
    assert pinned_file_uri(root, path) == expected
    assert absolute_uri(Storage(root), path) == expected


def test_the_rule_agrees_with_where_the_reader_opens_the_file():
    storage = Storage("memory://m/t")
    assert locate(storage, "/t/x.parquet").path.endswith("/t/x.parquet")
    assert "/t/t/" not in locate(storage, "/t/x.parquet").path


def test_a_local_table_keeps_each_callers_form(tmp_path):
    root = str(tmp_path / "t")
    assert manifest_file_uri(root, "x.parquet") == f"file://{root}/x.parquet"
    assert pinned_file_uri(root, f"{root}/x.parquet") == f"file://{root}/x.parquet"
    assert absolute_uri(Storage(root), "x.parquet") == f"file:{root}/x.parquet"       # Delta Spark's clone form
