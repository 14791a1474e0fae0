"""s8-break-sm review of the clone location check (#24, merge e28acab) on an object store.

The check compares locations by scheme and key text. ``s3a://`` and ``s3://`` reach the same
objects (``data_paths._STORE_OF_SCHEME`` says so), and so do keys with ``//`` or ``/./``
spelled in, which S3 does not normalise for a client that does.
"""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.log.base.storage import Storage

SCHEMA = pa.schema([("id", pa.int64())])


@pytest.fixture(params=["s3"])
def s3(request, object_stores):
    return object_stores(request.param)


def objects(store, uri) -> set[str]:
    storage = Storage(uri, store.options)
    return {storage.relative(i.path) for i in storage.walk_files("")}


def test_clone_into_the_source_spelled_with_s3a_is_refused(s3):
    uri = s3.uri("s3aclonesrc")
    src = DeltaTable.create(uri, SCHEMA, **s3.table_kwargs)
    src.write(pa.table({"id": [1]}, schema=SCHEMA))
    assert uri.startswith("s3://")
    before = objects(s3, uri)
    inner = "s3a://" + uri[len("s3://"):] + "/inner"
    with pytest.raises(InvalidArgumentError):
        src.clone(inner, **s3.table_kwargs)
    assert objects(s3, uri) == before


def test_clone_into_the_source_spelled_with_a_double_slash_is_refused(s3):
    uri = s3.uri("dslashclonesrc")
    src = DeltaTable.create(uri, SCHEMA, **s3.table_kwargs)
    src.write(pa.table({"id": [1]}, schema=SCHEMA))
    before = objects(s3, uri)
    with pytest.raises(InvalidArgumentError):
        src.clone(uri + "//inner", **s3.table_kwargs)
    with pytest.raises(InvalidArgumentError):
        src.clone(uri + "/./inner", **s3.table_kwargs)
    assert objects(s3, uri) == before
