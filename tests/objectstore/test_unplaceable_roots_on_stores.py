"""A table root the fsspec driver opens elsewhere than its URI names (``s3:///b/t``: the driver opens bucket
``b``; Hadoop finds no bucket) is refused, before anything is written; its usual spelling still opens. The
rule for data file paths: tests/log/test_place_the_driver_opens.py."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import InvalidArgumentError
from airflow_provider_delta.log.base.storage import Storage

SCHEMA = pa.schema([("id", pa.int64())])


def test_a_root_spelled_with_an_empty_authority_is_refused_and_nothing_written(store):
    uri = store.uri("emptyroot")
    scheme, rest = uri.split("://", 1)
    with pytest.raises(InvalidArgumentError, match="empty"):
        DeltaTable.create(f"{scheme}:///{rest}", SCHEMA, **store.table_kwargs)
    with pytest.raises(InvalidArgumentError, match="empty"):
        DeltaTable(f"{scheme}:///{rest}", **store.table_kwargs)
    assert Storage(uri, store.options).walk_files("") == []
    DeltaTable.create(uri, SCHEMA, **store.table_kwargs)                      # the usual spelling: fine
    assert DeltaTable(uri, **store.table_kwargs).latest_version() == 0
