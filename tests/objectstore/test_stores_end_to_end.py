"""Every table operation on each object store, through the public API and through Airflow.

One parametrised module over S3 (moto), Azure Blob (Azurite) and GCS (gcp-storage-emulator).
On GCS the emulator overwrites despite ``ifGenerationMatch=0``, so there the tables are
opened as the single writer (``Store.table_kwargs``); the other stores use their real
conditional create. ``deltalake`` reads each table with its own drivers and must agree.
"""
from __future__ import annotations

import asyncio
import json
import time

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, SqlCommitOwner
from airflow_provider_delta.log.read.listing import list_backfilled
from airflow_provider_delta.log.base.storage import Storage
from objectstore_servers import AZURE_KEY, S3_SECRET

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
# partition values that must be URL-encoded in object keys
ODD_DAYS = ["2026-01-01", "a b%c", "x=y/z"]


def rows(ids, day):
    return pa.table({"id": list(ids), "day": [day] * len(ids)}, schema=SCHEMA)


def deltalake_ids(store, uri, version=None) -> list[int] | None:
    """What delta-rs, with its own object-store drivers, reads at ``version`` (None: it cannot
    reach this server, see objectstore_servers.gcs_store)."""
    import deltalake
    if store.deltalake_options is None:
        return None
    dt = deltalake.DeltaTable(uri, storage_options=store.deltalake_options, version=version)
    return sorted(dt.to_pyarrow_table(columns=["id"]).column("id").to_pylist())


def ours_ids(table, version=None) -> list[int]:
    return sorted(table.snapshot(version).to_pyarrow(columns=["id"]).column("id").to_pylist())


def test_create_write_transaction_time_travel_and_checkpoints(store):
    uri = store.uri("e2e")
    table = DeltaTable.create(uri, SCHEMA, partition_by=["day"], **store.table_kwargs)
    for i, day in enumerate(ODD_DAYS):
        table.write(rows([10 * i, 10 * i + 1], day))
    with table.transaction("DELETE") as txn:          # remove one file, as a DELETE would
        first = table.snapshot().files().column("path")[0].as_py()
        txn.remove_file(first)
        txn.set_txn("etl", 7)
    assert table.latest_version() == 4
    assert table.snapshot().transaction_version("etl") == 7
    assert ours_ids(table, 2) == [0, 1, 10, 11]
    keys = [f.path for f in Storage(uri, store.options).walk_files("")]
    assert any("b%25c" in k for k in keys) and any("%2F" in k for k in keys), keys   # escaped keys

    table.checkpoint()                                   # single-file checkpoint at 4
    table.write(rows([99], "2026-01-01"))
    table.checkpoint(parts=2)                            # multi-part checkpoint at 5
    listing = list_backfilled(table.storage)
    assert [len(listing.checkpoints[v]) for v in (4, 5)] == [1, 2]
    fresh = DeltaTable(uri, **store.table_kwargs)
    assert ours_ids(fresh) == ours_ids(table) == [10, 11, 20, 21, 99]   # the file of 0, 1 removed
    assert ours_ids(fresh, 2) == [0, 1, 10, 11]
    if store.deltalake_options is not None:
        assert deltalake_ids(store, uri) == ours_ids(fresh)
        assert deltalake_ids(store, uri, 2) == ours_ids(fresh, 2)
    assert [h["version"] for h in fresh.history()] == [5, 4, 3, 2, 1, 0]


def test_cleanup_and_vacuum_stay_inside_the_table_root(store):
    uri = store.uri("maint")
    # in-commit timestamps: S3 and Azure keep mtimes in whole seconds, so without them commits
    # of one second would share a file time and cleanup would rightly refuse to drop any
    table = DeltaTable.create(uri, SCHEMA, partition_by=["day"], properties={"delta.enableInCommitTimestamps": "true"},
                              **store.table_kwargs)
    table.auto_checkpoint = False
    for day in ODD_DAYS:
        table.write(rows([1], day))
    table.write(rows([2], ODD_DAYS[1]), mode="overwrite")
    table.checkpoint()
    # a neighbour whose key starts with this table's key, and a stray file of the table
    neighbour = Storage(uri + "-neighbour", store.options)
    neighbour.write_atomic("old.parquet", b"not this table's")
    table.storage.write_atomic("day=a%20b%25c/stray.parquet", b"unreferenced")

    later = int(time.time() * 1000) + 60_000    # object stores keep mtimes in whole seconds
    cleaned = table.cleanup_metadata(now_ms=later, retention_ms=0, truncate=None, force=True)
    assert cleaned["checkpoint_version"] == 4
    assert table.latest_version() == 4 and ours_ids(DeltaTable(uri, **store.table_kwargs)) == [2]

    dry = table.vacuum(retention_hours=0, enforce_retention=False, now_ms=later)
    assert "day=a%20b%25c/stray.parquet" in dry["files_deleted"]
    done = table.vacuum(retention_hours=0, enforce_retention=False, dry_run=False, now_ms=later)
    assert sorted(done["files_deleted"]) == sorted(dry["files_deleted"])
    assert len(done["files_deleted"]) == 4                       # 3 overwritten files + the stray one
    assert neighbour.exists("old.parquet")
    assert ours_ids(table) == [2]
    assert deltalake_ids(store, uri) in ([2], None)


def test_managed_commits_with_the_sql_owner(store, tmp_path):
    owner_url = f"sqlite:///{tmp_path}/owner.db"
    uri = store.uri("managed")
    owner = SqlCommitOwner(owner_url, backfill_batch_size=3)
    table = DeltaTable.create(uri, SCHEMA, commit_owner=owner, **store.table_kwargs)
    for i in range(4):
        table.write(rows([i], "2026-01-01"))
    reader = DeltaTable(uri, commit_owner=SqlCommitOwner(owner_url), **store.table_kwargs)
    assert reader.latest_version() == 4 and ours_ids(reader) == [0, 1, 2, 3]
    table.backfill()
    assert list_backfilled(table.storage).max_backfilled == 4
    assert ours_ids(DeltaTable(uri, commit_owner=SqlCommitOwner(owner_url), **store.table_kwargs)) == [0, 1, 2, 3]
    owner.dispose()


@pytest.fixture
def delta_connection(store, monkeypatch):
    """An Airflow ``delta`` connection to the store's bucket, as a user defines one."""
    extra = {"storage_options": {k: v for k, v in store.options.items() if k not in ("key", "secret")}}
    login = password = None
    if store.kind == "s3":                 # credentials in login/password, endpoint in the extras
        login, password = store.options["key"], store.options["secret"]
    if not store.conditional_create:
        extra["single_writer"] = True
    conn = {"conn_type": "delta", "host": f"{store.scheme}://delta-tests", "login": login,
            "password": password, "extra": extra}
    monkeypatch.setenv("AIRFLOW_CONN_LAKE", json.dumps(conn))
    return "lake"


def test_hook_sensor_and_trigger_through_a_connection(store, delta_connection):
    from airflow_provider_delta.hooks.delta_table import DeltaTableHook
    from airflow_provider_delta.sensors import DeltaCommitSensor
    from airflow_provider_delta.triggers import DeltaCommitTrigger

    name = store.uri("hooked").split("/", 3)[3]             # relative to the connection's base
    hook = DeltaTableHook(delta_connection)
    table = hook.get_table(name)
    DeltaTable.create(table.uri, SCHEMA, **store.table_kwargs)
    assert hook.latest_version(name) == 0
    sensor = DeltaCommitSensor(task_id="wait", table_uri=name, delta_conn_id=delta_connection, target_version=1)
    assert sensor.poke({}) is False
    hook.get_table(name).write(rows([5], "2026-01-01"))
    assert sensor.poke({}) is True

    trigger = DeltaCommitTrigger(table_uri=name, delta_conn_id=delta_connection, after_version=1,
                                 poke_interval=0.05)

    async def first_event():
        run = trigger.run()
        writer = asyncio.create_task(asyncio.to_thread(table.write, rows([6], "2026-01-01")))
        event = await asyncio.wait_for(run.__anext__(), 120)
        await writer
        return event
    event = asyncio.run(first_event())
    assert event.payload["status"] == "success"
    assert [c["version"] for c in event.payload["commits"]] == [2]
    described = json.dumps(hook.get_config(name).describe())
    assert S3_SECRET not in described and AZURE_KEY not in described


def cloud_connection(store) -> dict:
    """The store's credentials in a connection of Airflow's own type for it."""
    if store.kind == "s3":
        client = store.options["client_kwargs"]
        return {"conn_type": "aws", "login": store.options["key"], "password": store.options["secret"],
                "extra": {"endpoint_url": client["endpoint_url"], "region_name": client["region_name"]}}
    if store.kind == "azure":
        return {"conn_type": "wasb", "extra": {"connection_string": store.options["connection_string"]}}
    return {"conn_type": "google_cloud_platform", "extra": {"project": store.options["project"]}}


def test_storage_credentials_from_an_aws_wasb_or_gcp_connection(store, monkeypatch):
    from airflow_provider_delta.hooks.delta_table import DeltaTableHook

    extra = {"storage_conn_id": "cloud"}
    if store.kind == "gcs":          # the emulator: an endpoint and anonymous access on top
        extra["storage_options"] = {"endpoint_url": store.options["endpoint_url"], "token": "anon"}
    if not store.conditional_create:
        extra["single_writer"] = True
    monkeypatch.setenv("AIRFLOW_CONN_CLOUD", json.dumps(cloud_connection(store)))
    monkeypatch.setenv("AIRFLOW_CONN_LAKE2", json.dumps({"conn_type": "delta", "host": f"{store.scheme}://delta-tests",
                                                         "extra": extra}))
    name = store.uri("cloudconn").split("/", 3)[3]
    hook = DeltaTableHook("lake2")
    table = hook.get_table(name)
    DeltaTable.create(table.uri, SCHEMA, storage_options=table.storage.storage_options,
                      single_writer=not store.conditional_create)
    table.write(rows([1, 2], "2026-01-01"))
    assert hook.latest_version(name) == 1
    assert ours_ids(DeltaTable(table.uri, **store.table_kwargs)) == [1, 2]
    described = json.dumps(hook.get_config(name).describe())
    assert S3_SECRET not in described and AZURE_KEY not in described
