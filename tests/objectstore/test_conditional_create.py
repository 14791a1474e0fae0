"""The commit primitive on each store: two writers race for one version, exactly one wins.

Where the server really makes ``open(.., "xb")`` conditional (moto honours S3's
``If-None-Match: *``, Azurite ``overwrite=False``), one writer's commit lands and the
other sees the version taken. Where it does not (gcp-storage-emulator accepts
``ifGenerationMatch=0`` and overwrites), no commit is made at all: the writer refuses
with ConditionalCreateError naming the driver and its version, and the log is untouched.
"""
from __future__ import annotations

import threading

import pyarrow as pa
import pytest

from airflow_provider_delta.log import ConditionalCreateError, DeltaTable
from airflow_provider_delta.log.base.storage import Storage

SCHEMA = pa.schema([("id", pa.int64())])


def race(storage_a: Storage, storage_b: Storage, rel: str) -> list:
    """Both storages create ``rel`` at the same moment; each result or error, in order."""
    barrier = threading.Barrier(2)
    results: list = [None, None]

    def go(i, st):
        barrier.wait(30)
        try:
            results[i] = st.put_if_absent(rel, f'{{"writer": {i}}}\n'.encode())
        except Exception as e:  # noqa: BLE001 - the assertion looks at what was raised
            results[i] = e
    threads = [threading.Thread(target=go, args=(i, st)) for i, st in enumerate((storage_a, storage_b))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    return results


def test_two_writers_race_for_one_version_and_exactly_one_wins(store):
    uri = store.uri("race")
    # two Storage objects with separate driver instances, as two processes would have
    a = Storage(uri, {**store.options, "skip_instance_cache": True})
    b = Storage(uri, {**store.options, "skip_instance_cache": True})
    rel = "_delta_log/00000000000000000000.json"
    results = race(a, b, rel)
    if store.conditional_create:
        assert sorted(results, key=str) == [False, True]
        winner = results.index(True)
        assert a.read_bytes(rel) == f'{{"writer": {winner}}}\n'.encode()
    else:
        assert all(isinstance(r, ConditionalCreateError) for r in results), results
        assert results[0].driver.startswith("gcsfs ")
        assert not a.exists(rel)
        assert [f.name for f in a.list_dir("_delta_log")] == []    # the probe object is gone too


def test_create_on_a_store_that_overwrites_is_refused_with_the_driver_named(object_stores):
    gcs = object_stores("gcs")
    uri = gcs.uri("refused")
    with pytest.raises(ConditionalCreateError, match=r"gcsfs \d"):
        DeltaTable.create(uri, SCHEMA, storage_options=gcs.options)
    assert Storage(uri, gcs.options).list_dir("_delta_log") == []


def test_many_racers_on_a_conditional_store_one_commit_each_version(object_stores):
    s3 = object_stores("s3")
    uri = s3.uri("racers")
    storages = [Storage(uri, {**s3.options, "skip_instance_cache": True}) for _ in range(4)]
    wins = []
    lock = threading.Lock()
    barrier = threading.Barrier(len(storages))

    def go(st):
        barrier.wait(30)
        for v in range(5):
            if st.put_if_absent(f"_delta_log/{v:020d}.json", b"{}\n"):
                with lock:
                    wins.append(v)
    threads = [threading.Thread(target=go, args=(st,)) for st in storages]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert sorted(wins) == list(range(5))
