"""Final review (session 10) of today's maintenance changes in the log layer: findings as strict xfails.

- 8ebab58: OPTIMIZE chooses dictionary columns on the first 8k rows of a new file (was 64k);
- 2da017c: SQLite busy timeout from ``engine_kwargs["connect_args"]["timeout"]``.

Real tables and databases; no mocks of our own code.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable, SqlCatalog, SqlCommitOwner

# ------------------------------------------------------------------------------------------------ OPTIMIZE (8ebab58)
PRODUCTS = 20_000
DAYS = 20


def _daily_snapshot_table(path) -> DeltaTable:
    """A periodic-snapshot table (inventory per product per day): each day's file lists every product once,
    in product order - the values of ``product_id`` and ``name`` cycle with a period of 20k rows."""
    names = [f"product-name-{i:06d}-{(i * 7919) % 100000:05d}" for i in range(PRODUCTS)]
    schema = pa.schema([("day", pa.int32()), ("product_id", pa.int64()), ("name", pa.string()), ("qty", pa.int32())])
    table = DeltaTable.create(str(path), schema)
    for day in range(DAYS):
        table.write(pa.table({"day": pa.array([day] * PRODUCTS, pa.int32()),
                              "product_id": pa.array(range(PRODUCTS), pa.int64()),
                              "name": names,
                              "qty": pa.array([(i * 31 + day) % 50 for i in range(PRODUCTS)], pa.int32())},
                             schema=schema))
    return table


def _former_rule_size(rows: pa.Table) -> int:
    """The size of the same rows written as OPTIMIZE wrote them before 8ebab58: dictionary pages for the
    columns with fewer distinct values than half of the first 64k rows; snappy; one writer."""
    head = rows.slice(0, 65_536)
    dictionary = [f.name for f in head.schema
                  if pc.count_distinct(head.column(f.name)).as_py() < 0.5 * max(1, head.num_rows)]
    sink = pa.BufferOutputStream()
    with pq.ParquetWriter(sink, rows.schema, compression="snappy", use_dictionary=dictionary) as w:
        w.write_table(rows, row_group_size=1 << 20)
    return sink.getvalue().size


def test_optimize_of_a_periodic_snapshot_table_is_not_much_bigger_than_with_the_former_dictionary_rule(tmp_path):
    table = _daily_snapshot_table(tmp_path / "t")
    before = table.snapshot().to_pyarrow()
    metrics = table.optimize()
    assert metrics["numFilesAdded"] == 1 and metrics["numFilesRemoved"] == DAYS
    snap = table.snapshot()
    after = snap.to_pyarrow()
    key = [("day", "ascending"), ("product_id", "ascending")]
    assert after.sort_by(key).equals(before.sort_by(key))           # the rows are the same either way
    (path,) = snap.files().column("path").to_pylist()
    new_size = os.path.getsize(tmp_path / "t" / path)
    former = _former_rule_size(pq.read_table(tmp_path / "t" / path))
    assert new_size <= 1.5 * former, f"OPTIMIZE wrote {new_size} bytes; the former rule {former}"


@pytest.mark.parametrize("order", ["random", "sorted", "clustered", "cyclic"])
def test_optimize_reads_back_the_same_rows_for_varied_data(tmp_path, order):
    """Held: the dictionary choice changes encodings only; strings, nulls, nested columns read back equal
    (ours and pyarrow's reader), whatever the order of the values."""
    import random
    rnd = random.Random(3)
    n = 30_000
    base = list(range(n))
    ids = {"random": [rnd.randrange(5000) for _ in base], "sorted": sorted(rnd.randrange(50_000) for _ in base),
           "clustered": [i // 3 for i in base], "cyclic": [i % 12_000 for i in base]}[order]
    data = pa.table({
        "k": pa.array(ids, pa.int64()),
        "s": pa.array([None if i % 7 == 0 else f"v{v}" for i, v in enumerate(ids)]),
        "n": pa.array([None] * n, pa.string()),
        "st": pa.array([{"a": v % 13, "b": None if v % 5 else f"b{v}"} for v in ids]),
        "l": pa.array([[v, v + 1] if v % 3 else None for v in ids], pa.list_(pa.int64())),
    })
    table = DeltaTable.create(str(tmp_path / "t"), data.schema)
    for i in range(0, n, 5000):
        table.write(data.slice(i, 5000))
    table.optimize()
    assert table.snapshot().files().num_rows == 1
    key = [("k", "ascending"), ("s", "ascending")]
    got = table.snapshot().to_pyarrow().select(data.column_names)
    assert got.sort_by(key).to_pylist() == data.sort_by(key).to_pylist()


# ----------------------------------------------------------------------------------- SQLite busy timeout (2da017c)
def test_a_sqlite_owner_leaves_the_callers_engine_kwargs_as_given(tmp_path, own_pg_url):
    shared = {"connect_args": {}}
    SqlCommitOwner(f"sqlite:///{tmp_path}/owner.db", engine_kwargs=shared)
    SqlCatalog(f"sqlite:///{tmp_path}/catalog.db", engine_kwargs=shared)
    assert shared == {"connect_args": {}}
    owner = SqlCommitOwner(own_pg_url, engine_kwargs=shared)        # the same settings for the PostgreSQL owner
    table = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]), commit_owner=owner)
    assert table.write(pa.table({"id": [1]})) == 1


def test_a_busy_timeout_in_the_sqlite_url_is_the_one_used(tmp_path):
    owner = SqlCommitOwner(f"sqlite:///{tmp_path}/owner.db?timeout=1")
    with owner._db.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == 1000


def test_a_busy_timeout_in_connect_args_is_the_one_used(tmp_path):
    """Held: connect_args' timeout reaches the PRAGMA for owners and catalogs; the default stays 60 s."""
    for make in (SqlCommitOwner, SqlCatalog):
        for given, expected in (({"connect_args": {"timeout": 2.5}}, 2500), (None, 60_000),
                                ({"connect_args": {"timeout": 0}}, 0)):
            thing = make(f"sqlite:///{tmp_path}/{make.__name__}-{expected}.db", engine_kwargs=given)
            db = thing._db if hasattr(thing, "_db") else thing.store.db
            with db.engine.connect() as c:
                assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() == expected


# --------------------------------------------------------------------- Transaction(read_snapshot=...) (e631e42)
def _ids(uri, **table_kwargs) -> list:
    return sorted(DeltaTable(uri, **table_kwargs).snapshot().to_pyarrow().column(0).to_pylist())


def test_a_snapshot_of_the_table_formerly_at_the_location_is_refused(tmp_path):
    import shutil
    from airflow_provider_delta.log import DeltaError
    uri = str(tmp_path / "t")
    old_table = DeltaTable.create(uri, pa.schema([("id", pa.int64())]))
    old_table.write(pa.table({"id": pa.array([1], pa.int64())}))
    held = old_table.snapshot()                                      # version 1 of the former table
    shutil.rmtree(uri)
    new = DeltaTable.create(uri, pa.schema([("name", pa.string())]))
    for name in ("x", "y", "z"):
        new.write(pa.table({"name": [name]}))                         # versions 1..3 of the new table
    table = DeltaTable(uri)
    with pytest.raises(DeltaError):
        with table.transaction(operation="SET TBLPROPERTIES", read_snapshot=held) as txn:
            txn.set_properties({"delta.checkpointInterval": "7"})
    assert table.latest_version() == 3
    assert _ids(uri) == ["x", "y", "z"]
    assert DeltaTable(uri).snapshot().configuration.get("delta.checkpointInterval") is None


def test_an_older_snapshot_of_the_same_table_is_still_taken(tmp_path):
    """The opposite side: a held snapshot of this very table (same id), commits after it, is a read snapshot."""
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, pa.schema([("id", pa.int64())]))
    table.write(pa.table({"id": pa.array([1], pa.int64())}))
    held = table.snapshot()                                          # version 1
    DeltaTable(uri).write(pa.table({"id": pa.array([2], pa.int64())}))
    with DeltaTable(uri).transaction(operation="SET TBLPROPERTIES", read_snapshot=held) as txn:
        txn.set_properties({"delta.checkpointInterval": "7"})
    assert txn.version == 3 and _ids(uri) == [1, 2]
    assert DeltaTable(uri).snapshot().configuration["delta.checkpointInterval"] == "7"


def test_read_snapshot_refusals_write_nothing(tmp_path):
    """Held: a snapshot of another location, at another version than read_version, a managed-commit table's
    snapshot handed to a plain handle of it, a catalog group's staged (audit) view: refused, nothing written."""
    from airflow_provider_delta.log import DeltaError, InvalidArgumentError
    schema = pa.schema([("id", pa.int64())])
    a, b = str(tmp_path / "a"), str(tmp_path / "b")
    DeltaTable.create(a, schema).write(pa.table({"id": pa.array([1], pa.int64())}))
    DeltaTable.create(b, schema)
    with pytest.raises(InvalidArgumentError):
        DeltaTable(b).transaction(read_snapshot=DeltaTable(a).snapshot())
    with pytest.raises(InvalidArgumentError):
        DeltaTable(a).transaction(read_snapshot=DeltaTable(a).snapshot(), read_version=0)
    owner = SqlCommitOwner(f"sqlite:///{tmp_path}/owner.db", backfill_batch_size=100)
    m = str(tmp_path / "m")
    managed = DeltaTable.create(m, schema, commit_owner=owner)
    managed.write(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(DeltaError):
        with DeltaTable(m).transaction(read_snapshot=managed.snapshot()):
            pass
    assert managed.latest_version() == 1 and sorted(os.listdir(os.path.join(m, "_delta_log"))) == [
        "00000000000000000000.json", "_commits"]
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/catalog.db")
    c = str(tmp_path / "c")
    DeltaTable.create(c, schema, catalog=catalog).write(pa.table({"id": pa.array([1], pa.int64())}))
    group = catalog.begin()
    group.write(c, pa.table({"id": pa.array([2], pa.int64())}))
    group.stage()
    member = DeltaTable(c, catalog=catalog)
    with pytest.raises(DeltaError):
        with member.transaction(read_snapshot=member.snapshot(transaction=group.id)):
            pass
    group.abort()
    assert member.latest_version() == 1 and _ids(c, catalog=catalog) == [1]


@pytest.mark.parametrize("concurrent", ["append", "overwrite", "optimize", "properties"])
def test_restore_on_its_loaded_snapshot_checks_what_landed_after_it(tmp_path, concurrent):
    """Held: a commit landing between restore's load of the latest snapshot and its commit (made from the
    transaction's clock, called at commit time) is checked: a blind append stays in the restored table, an
    overwrite, an OPTIMIZE or a property change fails the restore (typed, nothing more written)."""
    import time
    from airflow_provider_delta.log import ConcurrentModificationError, restore_table
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, pa.schema([("id", pa.int64())]))
    for i in (1, 2, 3):
        table.write(pa.table({"id": pa.array([i], pa.int64())}))
    calls = []

    def clock() -> int:
        if not calls and concurrent == "optimize":
            DeltaTable(uri).optimize()
        elif not calls and concurrent == "properties":
            with DeltaTable(uri).transaction(operation="SET TBLPROPERTIES") as txn:
                txn.set_properties({"delta.checkpointInterval": "7"})
        elif not calls:
            DeltaTable(uri).write(pa.table({"id": pa.array([99], pa.int64())}), mode=concurrent)
        calls.append(1)
        return int(time.time() * 1000)

    if concurrent == "append":
        assert restore_table(DeltaTable(uri), 1, clock=clock).version == 5
        assert _ids(uri) == [1, 99]
    else:
        with pytest.raises(ConcurrentModificationError):
            restore_table(DeltaTable(uri), 1, clock=clock)
        assert DeltaTable(uri).latest_version() == 4
        assert _ids(uri) == ([99] if concurrent == "overwrite" else [1, 2, 3])


@pytest.mark.parametrize("timeout", [None, "soon", float("inf")])
def test_a_bad_sqlite_timeout_is_a_typed_error(tmp_path, timeout):
    from airflow_provider_delta.log import InvalidArgumentError
    with pytest.raises(InvalidArgumentError):
        owner = SqlCommitOwner(f"sqlite:///{tmp_path}/owner.db", engine_kwargs={"connect_args": {"timeout": timeout}})
        with owner._db.engine.connect():
            pass


def test_a_very_long_sqlite_timeout_still_waits(tmp_path):
    owner = SqlCommitOwner(f"sqlite:///{tmp_path}/owner.db", engine_kwargs={"connect_args": {"timeout": 3e6}})
    with owner._db.engine.connect() as c:
        assert c.exec_driver_sql("PRAGMA busy_timeout").scalar() >= 60_000


# ----------------------------------------------------------------- create-only properties, lost creates (b29a945)
def test_create_only_properties_after_a_lost_create_still_meet_the_winners_rules(tmp_path):
    """Held: a Spark-path write (create_only_properties) that lost version 0 to a table with the same schema
    but other properties goes on against the winner under the winner's rules: an overwrite of an append-only
    winner is refused (typed, nothing written); keys in another case are not listed as unapplied; a
    misspelt property is refused before anything."""
    from airflow_provider_delta.log import InvalidArgumentError, PlannedWrite, plan_write
    schema = pa.schema([("id", pa.int64())])
    uri = str(tmp_path / "t")
    write = PlannedWrite(DeltaTable(uri), plan_write(uri, None, schema, mode="overwrite",
                                                     properties={"delta.checkpointInterval": "3"},
                                                     create_only_properties=True), create_only_properties=True)
    DeltaTable(uri).write(pa.table({"id": pa.array([1], pa.int64())}), properties={"delta.appendOnly": "true"})
    with pytest.raises(InvalidArgumentError, match="append-only"):
        write.commit([])
    assert DeltaTable(uri).latest_version() == 0 and _ids(uri) == [1]
    snap = DeltaTable(uri).snapshot()
    plan = plan_write(uri, snap, schema, properties={"DELTA.APPENDONLY": "true"}, create_only_properties=True)
    assert plan.unapplied_properties == {} and plan.metadata is None
    with pytest.raises(InvalidArgumentError):
        plan_write(uri, snap, schema, properties={"delta.apendOnly": "true"}, create_only_properties=True)


def test_optimize_keeps_dictionary_pages_for_low_cardinality_nested_columns(tmp_path):
    n = 200_000
    data = pa.table({"st": pa.array([{"a": f"category-{i % 50:04d}-long-text", "b": i % 7} for i in range(n)]),
                     "l": pa.array([[f"tag-{i % 30}"] for i in range(n)])})
    table = DeltaTable.create(str(tmp_path / "t"), data.schema)
    for i in range(0, n, 50_000):
        table.write(data.slice(i, 50_000))
    before = sum(table.snapshot().files().column("size").to_pylist())
    table.optimize()
    (path,) = table.snapshot().files().column("path").to_pylist()
    meta = pq.ParquetFile(tmp_path / "t" / path).metadata
    leaves = {meta.row_group(0).column(i).path_in_schema: meta.row_group(0).column(i).has_dictionary_page
              for i in range(meta.num_columns)}
    assert os.path.getsize(tmp_path / "t" / path) <= 1.5 * before, (before, leaves)
    assert all(leaves.values()), leaves
