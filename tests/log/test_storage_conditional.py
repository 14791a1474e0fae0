"""Commits on non-local fsspec backends: conditional create where the backend has one, else refuse."""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, StorageError
from airflow_provider_delta.log.base.commit_actions import AddFile
from airflow_provider_delta.log.base.storage import CONDITIONAL_CREATE_PROTOCOLS, Storage

SCHEMA = pa.schema([("id", pa.int64())])


def test_cloud_protocols_use_conditional_create():
    assert {"s3", "gs", "abfs"} <= CONDITIONAL_CREATE_PROTOCOLS
    assert Storage("memory://x/t").supports_atomic_put_if_absent
    # fsspec's "local" protocol is a generic backend here: not trusted unless declared
    assert not Storage("local:///tmp/never-created").supports_atomic_put_if_absent


def test_backend_without_conditional_create_refuses_commits(tmp_path):
    uri = f"local://{tmp_path}/t"
    with pytest.raises(StorageError, match="atomic put-if-absent"):
        DeltaTable.create(uri, SCHEMA)
    assert not (tmp_path / "t" / "_delta_log" / "00000000000000000000.json").exists()
    # single-writer mode is an explicit opt-in
    DeltaTable.create(uri, SCHEMA, single_writer=True)
    assert DeltaTable(uri).latest_version() == 0


def test_conditional_create_path_lands_each_commit_once(tmp_path):
    """Through fs.open(mode='xb'): a taken version reports a lost race, concurrent writers all land."""
    uri = f"local://{tmp_path}/t"
    DeltaTable.create(uri, SCHEMA, conditional_put=True)
    storage = Storage(uri, conditional_put=True)
    assert storage.put_if_absent("_delta_log/00000000000000000000.json", b"{}\n") is False

    errors: list[BaseException] = []

    def writer(w: int) -> None:
        try:
            table = DeltaTable(uri, conditional_put=True)
            table.auto_checkpoint = False
            for i in range(10):
                # 4 threads on one table starve each other at times: retry generously,
                # what is tested is that every commit lands exactly once
                with table.transaction(max_retries=200) as txn:
                    txn.add_file(AddFile(f"w{w}-{i}.parquet", 1, {}, 1))
        except BaseException as e:  # surfaced below
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[0]
    snap = DeltaTable(uri).snapshot()
    assert snap.version == 40
    paths = sorted(snap.files().column("path").to_pylist())
    assert paths == sorted(f"w{w}-{i}.parquet" for w in range(4) for i in range(10))
