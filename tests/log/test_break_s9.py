"""Break review s9 of the late s8 fixes (log layer): findings as strict xfails, fixed ones as plain tests."""
from __future__ import annotations

import json
import os
import time

import deltalake
import pyarrow as pa
import pytest

from built_on_store import BuiltOnAtOnce, idle_table
from airflow_provider_delta.log import AddFile, DeltaTable, SqlCatalog

SCHEMA = pa.schema([("id", pa.int64())])
DAY_S = 86_400


def _log_dir(t: DeltaTable) -> str:
    return os.path.join(t.storage.root, "_delta_log")


# ------------------------------------------------------------------ clone of a catalog-managed table
def test_a_catalog_managed_table_clones_into_a_plain_table_that_claims_no_catalog(tmp_path):
    """The clone docs promise a plain filesystem table; the clone kept multiTableTransaction-dev (a
    writer feature only a catalog serves), so committing version 0 was refused, and it copied the
    source's io.airflowproviderdelta.catalogId, claiming the source's catalog."""
    catalog = SqlCatalog(f"sqlite:///{tmp_path}/c.db", publish_grace_ms=0)
    src = DeltaTable.create(str(tmp_path / "src"), SCHEMA, catalog=catalog)
    DeltaTable(src.uri, catalog=catalog).write(pa.table({"id": [1, 2]}))
    clone = DeltaTable(src.uri, catalog=catalog).clone(str(tmp_path / "clone"))
    snap = DeltaTable(clone.uri).snapshot()                     # opened without any catalog
    assert sorted(snap.to_pyarrow().column("id").to_pylist()) == [1, 2]
    features = set(snap.protocol.reader_features or ()) | set(snap.protocol.writer_features or ())
    assert not any(f.startswith(("catalog", "multiTable")) for f in features)
    assert "io.airflowproviderdelta.catalogId" not in snap.metadata.configuration
    assert snap.metadata.configuration.get("delta.enableInCommitTimestamps") == "true"
    DeltaTable(clone.uri).write(pa.table({"id": [3]}))          # a plain table: anyone may commit
    assert sorted(DeltaTable(clone.uri).snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]
    assert not catalog.manages(clone.uri)


# ------------------------------------------------------------------ commit_successor (27c58c5)


def test_a_commit_built_on_within_the_same_second_is_neither_withdrawn_nor_reported_failed(tmp_path):
    t = idle_table(str(tmp_path / "t"))                         # v1, v2, checkpoint 2: 0..2 past log retention
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri)
    outcome = None
    try:
        t.write(pa.table({"id": [3]}))                          # lands as v3; v4 builds on it
        outcome = "committed"
    except Exception as e:                                      # noqa: BLE001 - what the user is told
        outcome = f"{type(e).__name__}: {e}"
    fresh = DeltaTable(t.uri)
    live = sorted(fresh.snapshot().to_pyarrow().column("id").to_pylist())
    assert live == [1, 2, 3, 100]                               # our rows are live either way
    assert os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))   # the commit v4 built on stays
    assert outcome == "committed"                               # and the writer is told so


def test_a_tied_commit_without_new_files_is_left_in_place_as_an_unknown_outcome(tmp_path):
    """The same race for a commit that adds no file (a property change): nothing tells a checkpoint
    built on it from one written before it, so the commit file stays and the writer is told the
    outcome is unknown (not that it failed, which invites redoing a change that may be live)."""
    from airflow_provider_delta.log import CommitOutcomeUnknownError
    t = idle_table(str(tmp_path / "t"))
    t.storage.files = BuiltOnAtOnce(t.storage.files, t.uri)
    with pytest.raises(CommitOutcomeUnknownError, match="left in place"):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_metadata(txn.snapshot.metadata.with_configuration({"delta.appendOnly": "false"}))
    assert os.path.exists(os.path.join(_log_dir(t), f"{3:020d}.json"))
    fresh = DeltaTable(t.uri).snapshot()
    assert fresh.metadata.configuration.get("delta.appendOnly") == "false"


# ------------------------------------------------------------------ vacuum and symlinks
def _parquet(path: str, ids: list[int], age_s: float) -> int:
    import pyarrow.parquet as pq
    pq.write_table(pa.table({"id": ids}), path)
    os.utime(path, (time.time() - age_s, time.time() - age_s))
    return os.path.getsize(path)


def _commit_add_as_another_writer(t: DeltaTable, path: str, size: int) -> None:
    """Version 1 adding ``path`` as another writer spells it (add_file refuses '.'/'..' segments, 543cee5)."""
    now = int(time.time() * 1000)
    add = {"add": {"path": path, "partitionValues": {}, "size": size, "modificationTime": now, "dataChange": True,
                   "stats": json.dumps({"numRecords": 1})}}
    with open(os.path.join(_log_dir(t), f"{t.latest_version() + 1:020d}.json"), "x") as f:
        f.write(json.dumps({"commitInfo": {"timestamp": now, "operation": "WRITE"}}) + "\n" + json.dumps(add) + "\n")


@pytest.mark.parametrize("spelling", ["relative", "absolute"])
def test_vacuum_keeps_both_files_a_dotdot_path_through_a_link_may_name(tmp_path, spelling):
    """``ln/../x.parquet`` with ``ln -> realdir/sub``: Hadoop resolves ``..`` lexically (x.parquet),
    the operating system through the link (realdir/x.parquet, what our reader opened). Vacuum kept
    only the lexical one and deleted the file the snapshot reads; and it removed the empty realdir/sub
    (the link's target, on the live path's way), so the path no longer resolved at all."""
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, SCHEMA)
    os.makedirs(f"{root}/realdir/sub")
    os.symlink(f"{root}/realdir/sub", f"{root}/ln")
    size = _parquet(f"{root}/x.parquet", [1], 30 * DAY_S)
    _parquet(f"{root}/realdir/x.parquet", [2], 30 * DAY_S)
    path = "ln/../x.parquet" if spelling == "relative" else f"file:{root}/ln/../x.parquet"
    _commit_add_as_another_writer(t, path, size)
    read = t.snapshot().to_pyarrow().column("id").to_pylist()
    result = t.vacuum(retention_hours=0, dry_run=False, enforce_retention=False)
    assert result["files_deleted"] == []
    assert os.path.exists(f"{root}/x.parquet") and os.path.exists(f"{root}/realdir/x.parquet")
    assert os.path.isdir(f"{root}/realdir/sub")
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == read


# ------------------------------------------------------------------ table property values (property_values.py)
def _set_refused(tmp_path, properties: dict[str, str]) -> None:
    """Setting ``properties`` on a fresh table raises InvalidArgumentError and commits nothing; creating
    a table with them is refused too and leaves no table."""
    from airflow_provider_delta.log import InvalidArgumentError
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    before = sorted(os.listdir(_log_dir(t)))
    with pytest.raises(InvalidArgumentError):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties(properties)
    assert sorted(os.listdir(_log_dir(t))) == before
    assert DeltaTable(t.uri).snapshot().metadata.configuration == {}
    with pytest.raises(InvalidArgumentError):
        DeltaTable.create(str(tmp_path / "new"), SCHEMA, properties=properties)
    assert not (tmp_path / "new").exists() or not os.listdir(tmp_path / "new" / "_delta_log")


@pytest.mark.parametrize("properties", [
    {"delta.checkpointInterval": "2147483648"},                 # Delta Spark: a Java int (NumberFormatException)
    {"delta.dataSkippingNumIndexedCols": "99999999999"},
    {"delta.dataSkippingStringPrefixLength": "3000000000"},
    {"delta.checkpointInterval": " 5"},                         # Integer.parseInt takes no blanks
    {"delta.appendOnly": " true"},                              # Scala's toBoolean takes no blanks
    {"delta.enableDeletionVectors": " false "},
    {"delta.deletedFileRetentionDuration": "interval\t1\tday"},   # Spark's interval words split on spaces
    {"delta.deletedFileRetentionDuration": "interval 10000000000 days"},   # beyond a CalendarInterval
    {"delta.logRetentionDuration": "interval 1 day"},           # shorter than the default 1 week of removed files
    {"delta.logRetentionDuration": "interval 2 days", "delta.deletedFileRetentionDuration": "interval 3 days"},
], ids=lambda p: ",".join(f"{k}={v!r}" for k, v in p.items()))
def test_property_values_delta_spark_refuses_are_refused(tmp_path, properties):
    """Each value Delta Spark 4's ALTER TABLE SET TBLPROPERTIES refuses (probed on the jars in .jars);
    the check accepted them. A value Delta Spark cannot parse fails its every later read of the table."""
    _set_refused(tmp_path, properties)


@pytest.mark.parametrize("properties", [
    {"delta.checkpointInterval": "+5"}, {"delta.checkpointInterval": "05"}, {"delta.appendOnly": "TRUE"},
    {"delta.logRetentionDuration": "INTERVAL 1 WEEK"}, {"delta.deletedFileRetentionDuration": "interval 1 hour"},
    {"delta.logRetentionDuration": "interval 2 days", "delta.deletedFileRetentionDuration": "interval 1 day"},
], ids=lambda p: ",".join(f"{k}={v!r}" for k, v in p.items()))
def test_property_values_delta_spark_accepts_are_accepted(tmp_path, properties):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=properties)
    assert all(t.snapshot().metadata.configuration[k] == v for k, v in properties.items())


def test_a_retention_pair_changed_one_at_a_time_is_checked_against_the_table(tmp_path):
    from airflow_provider_delta.log import InvalidArgumentError
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={"delta.deletedFileRetentionDuration": "interval 1 day"})
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.logRetentionDuration": "interval 3 days"})   # >= the table's 1 day
    with pytest.raises(InvalidArgumentError):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties({"delta.deletedFileRetentionDuration": "interval 4 days"})
    assert t.latest_version() == 1


@pytest.mark.parametrize("properties", [
    {"delta.logRetentionDurations": "interval 60 days"}, {"delta.fooBar": "1"},
    {"delta.appendonly": "maybe"}, {"delta.checkpointPolicy": "foo"}, {"delta.randomPrefixLength": "x"},
    {"delta.dataSkippingStatsColumns": "a,,b"}, {"delta.dataSkippingStatsColumns": "`a"},
], ids=lambda p: ",".join(f"{k}={v!r}" for k, v in p.items()))
def test_other_property_values_delta_spark_refuses_are_refused(tmp_path, properties):
    _set_refused(tmp_path, properties)


@pytest.mark.parametrize("properties", [{"delta.minReaderVersion": "5"}, {"delta.minWriterVersion": "8"}],
                         ids=["reader5", "writer8"])
def test_protocol_versions_that_do_not_exist_are_refused(tmp_path, properties):
    _set_refused(tmp_path, properties)


def test_our_reader_resolves_a_dotdot_path_as_delta_spark_does(tmp_path):
    """``ln/../x.parquet`` with ``ln`` a linked directory: Delta Spark (Hadoop's Path) reads x.parquet
    (tests/spark/test_break_s9_spark.py); our reader resolved '..' through the operating system
    (realdir/x.parquet) and read other rows for the same version."""
    root = str(tmp_path / "t")
    t = DeltaTable.create(root, SCHEMA)
    os.makedirs(f"{root}/realdir/sub")
    os.symlink(f"{root}/realdir/sub", f"{root}/ln")
    size = _parquet(f"{root}/x.parquet", [1], 0)
    _parquet(f"{root}/realdir/x.parquet", [2], 0)
    _commit_add_as_another_writer(t, "ln/../x.parquet", size)
    assert t.snapshot().to_pyarrow().column("id").to_pylist() == [1]


# ------------------------------------------------------------------ one Azure location, several spellings
FULL, SHORT = "abfss://c@acct.dfs.core.windows.net/t", ("az://c/t", "abfs://c/t")
BLOB = "wasbs://c@acct.blob.core.windows.net/t"
AZURE_PAIRS = ([(FULL, s) for s in (*SHORT, BLOB)] + [("abfs://c@acct.dfs.core.windows.net/t", s) for s in SHORT]
               + [(s, live) for s in SHORT for live in (FULL, "abfs://c@acct.dfs.core.windows.net/t", BLOB)])


@pytest.mark.parametrize("root,live", AZURE_PAIRS)
def test_vacuum_places_a_live_azure_path_of_the_same_location_inside_the_table(root, live):
    from airflow_provider_delta.log.base.storage import Storage
    from airflow_provider_delta.log.read.data_paths import Undecided, table_relative
    storage = Storage(root, {"account_name": "acct", "anon": True})
    where = table_relative(storage, live + "/part-0.parquet")
    assert where == "part-0.parquet" or isinstance(where, Undecided)


@pytest.mark.parametrize("properties, stored", [
    ({"delta.APPENDONLY": "true"}, {"delta.appendOnly": "true"}),
    ({"delta.enablechangedatafeed": "TRUE"}, {"delta.enableChangeDataFeed": "TRUE"}),
    ({"delta.dataSkippingStatsColumns": " a , `b.c`.d,`x``y` "}, None),
    ({"delta.dataSkippingStatsColumns": ""}, None),
    ({"delta.checkpointPolicy": "classic", "delta.randomPrefixLength": "+3"}, None),
    ({"delta.targetFileSize": "1048576", "delta.columnMapping.maxColumnId": "0"}, None),
    ({"io.airflowproviderdelta.anything": "x", "owner": "me"}, None),
], ids=lambda p: ",".join(f"{k}={v!r}" for k, v in p.items()) if isinstance(p, dict) else "")
def test_property_names_delta_spark_knows_pass_in_its_spelling(tmp_path, properties, stored):
    """What Delta Spark takes passes (a known name in any case is stored in its own spelling, as
    validateConfigurations returns it), on create and on SET TBLPROPERTIES."""
    stored = stored or properties
    created = DeltaTable.create(str(tmp_path / "c"), SCHEMA, properties=properties)
    assert {k: created.snapshot().metadata.configuration.get(k) for k in stored} == stored
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties(properties)
    assert {k: DeltaTable(t.uri).snapshot().metadata.configuration.get(k) for k in stored} == stored


def test_protocol_versions_that_exist_upgrade_and_feature_names_pass(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.minwriterversion": "4"})
    assert DeltaTable(t.uri).snapshot().protocol.min_writer_version == 4
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.feature.changeDataFeed": "supported"})     # implied by writer 4: kept
    assert DeltaTable(t.uri).snapshot().protocol.min_writer_version >= 4


def test_an_unknown_delta_name_a_table_holds_can_still_be_removed_and_does_not_stop_writes(tmp_path):
    """The name check applies to names being set, never to a table's stored configuration (a table
    written with allowArbitraryProperties): it opens, takes writes and its stray name can be removed."""
    from airflow_provider_delta.log import InvalidArgumentError
    t = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    with t.transaction(operation="SET TBLPROPERTIES") as txn:      # as another engine would write it
        txn.set_metadata(txn.metadata.with_configuration({"delta.someoneElses": "1"}))
    DeltaTable(t.uri).write(pa.table({"id": [1]}))
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.appendOnly": "false"})
    with pytest.raises(InvalidArgumentError):
        with t.transaction(operation="SET TBLPROPERTIES") as txn:
            txn.set_properties({"delta.someoneElses": "2"})
    with t.transaction(operation="SET TBLPROPERTIES") as txn:
        txn.set_properties({"delta.someoneElses": None})
    assert "delta.someoneElses" not in DeltaTable(t.uri).snapshot().metadata.configuration
    assert DeltaTable(t.uri).snapshot().to_pyarrow().num_rows == 1
