"""commit_dataframe when things go wrong or look odd: the log decides, nothing committed is lost.

Real local Spark and real files. Where the store must misreport a commit, the local backend
really writes the commit file (or really does not) and then answers as a flaky object store
would (tests/log/test_commit_outcome.py has the log-level cases).
"""
from __future__ import annotations

import datetime as dt
import os
import time
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CommitOutcomeUnknownError, DeltaTable
from airflow_provider_delta.spark import commit_dataframe, read_snapshot
from airflow_provider_delta.spark.staged_write import STAGING_DIR
from airflow_provider_delta.spark.staging_cleanup import STAGING_RETENTION_HOURS, clean_stale_staging
from misreporting_store import MisreportingFiles, misreport

pytestmark = pytest.mark.spark


def _ids(spark, ids):
    return spark.createDataFrame([(i, f"n{i}") for i in ids], "id long, name string")


def _misreporting(root: Path, lands: bool, answer: str) -> DeltaTable:
    return misreport(DeltaTable(str(root)), lands, answer)


def _parquet(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet") if "_delta_log" not in p.parts}


@pytest.mark.parametrize("answer", ["exists", "raises"])
def test_a_landed_commit_reported_failed_keeps_its_files_and_counts_as_ours(spark, tmp_path, answer):
    root = tmp_path / "t"
    assert commit_dataframe(_ids(spark, [1]), str(root), app_id="a", app_version=1) == 0
    table = _misreporting(root, lands=True, answer=answer)
    assert commit_dataframe(_ids(spark, [2, 3]), table, app_id="a", app_version=2) == 1   # ours, not a skip
    fresh = DeltaTable(str(root))
    assert fresh.latest_version() == 1 and fresh.snapshot().transaction_version("a") == 2
    assert sorted(fresh.snapshot().to_pyarrow().column("id").to_pylist()) == [1, 2, 3]   # the table opens
    import deltalake
    assert deltalake.DeltaTable(str(root)).to_pyarrow_table().num_rows == 3
    assert not (root / STAGING_DIR).exists()
    # and a retry of the same run is a skip, not a second append
    assert commit_dataframe(_ids(spark, [2, 3]), str(root), app_id="a", app_version=2) is None


def test_an_unknown_outcome_keeps_the_files(spark, tmp_path):
    root = tmp_path / "t"
    commit_dataframe(_ids(spark, [1]), str(root))
    before = _parquet(root)
    table = _misreporting(root, lands=False, answer="raises")
    with pytest.raises(CommitOutcomeUnknownError):
        commit_dataframe(_ids(spark, [2]), table, app_id="a", app_version=1)
    assert len(_parquet(root) - before) == 1          # kept: the PUT may still land
    assert DeltaTable(str(root)).latest_version() == 0
    assert not (root / STAGING_DIR).exists()


def test_a_zombie_of_the_same_run_that_committed_first_is_a_skip(spark, tmp_path):
    """The conflict case proper: the files of the loser are deleted, its report says skipped."""
    root = tmp_path / "t"
    commit_dataframe(_ids(spark, [1]), str(root))
    table = DeltaTable(str(root))
    df = _ids(spark, [5])
    original = table.storage.files

    class ZombieWinsFirst(MisreportingFiles):
        def put_if_absent(self, target, data):
            if self.armed and "_delta_log" in target:
                self.armed = False
                zombie = DeltaTable(str(root)).transaction()
                zombie.set_txn("a", 1)
                zombie.commit()
            return self.inner.put_if_absent(target, data)

    table.storage.files = ZombieWinsFirst(original, False, "")
    before = _parquet(root)
    assert commit_dataframe(df, table, app_id="a", app_version=1) is None
    assert _parquet(root) == before                   # the loser's files are gone again


@pytest.mark.parametrize("partition", ["_p", "__q"])
def test_a_partition_column_starting_with_an_underscore_keeps_its_rows(spark, tmp_path, partition):
    root = tmp_path / "t"
    df = spark.createDataFrame([(1, "a"), (2, "b"), (3, None)], f"id long, {partition} string")
    assert commit_dataframe(df, str(root), partition_by=[partition], app_id="a", app_version=1) == 0
    adds = [a for a in DeltaTable(str(root)).read_commit(0) if "add" in a]
    assert len(adds) == 3                                                      # not a txn without files
    want = [(1, "a"), (2, "b"), (3, None)]
    assert sorted((r["id"], r[partition]) for r in read_snapshot(spark, table_uri=str(root)).collect()) \
        == sorted(want, key=str)
    assert sorted((r["id"], r[partition]) for r in spark.read.format("delta").load(str(root)).collect()) \
        == sorted(want, key=str)
    import deltalake
    rows = deltalake.DeltaTable(str(root)).to_pyarrow_table().to_pylist()
    assert sorted((r["id"], r[partition]) for r in rows) == sorted(want, key=str)


def test_nested_not_null_fields_are_enforced_on_append(spark, tmp_path):
    root = tmp_path / "t"
    schema = "id long, s struct<a: long not null, b: string>"
    from pyspark.sql.types import StructType
    st = StructType.fromDDL(schema)
    ok = spark.createDataFrame([(1, {"a": 1, "b": "x"})], st)
    assert commit_dataframe(ok, str(root)) == 0
    assert DeltaTable(str(root)).snapshot().schema.field("s").type.field("a").nullable is False
    loose = spark.createDataFrame([(2, {"a": None, "b": "y"})], "id long, s struct<a: long, b: string>")
    with pytest.raises(Exception, match=r"'s\.a' is NOT NULL"):
        commit_dataframe(loose, str(root))
    assert DeltaTable(str(root)).latest_version() == 0 and len(_parquet(root)) == 1
    # Delta Spark refuses the same append
    with pytest.raises(Exception, match="(?i)not null"):
        loose.write.format("delta").mode("append").save(str(root))


def _staging_folder(root: Path, name: str, age_hours: float) -> Path:
    folder = root / STAGING_DIR / name / "day=1"
    folder.mkdir(parents=True)
    (folder / "part-0.parquet").write_bytes(b"x")
    when = time.time() - age_hours * 3600
    for p in [folder / "part-0.parquet", folder, folder.parent]:
        os.utime(p, (when, when))
    return folder.parent


def test_stale_staging_folders_of_dead_writes_are_removed_and_nothing_else(spark, tmp_path):
    root = tmp_path / "t"
    commit_dataframe(_ids(spark, [1]), str(root))
    old = _staging_folder(root, "dead", STAGING_RETENTION_HOURS + 1)
    fresh = _staging_folder(root, "running", 1)
    table = DeltaTable(str(root))
    assert clean_stale_staging(table) == ["dead"]
    assert not old.exists() and fresh.exists()
    # a folder the log references (some other tool committed from it) is kept
    kept = _staging_folder(root, "referenced", STAGING_RETENTION_HOURS + 1)
    from airflow_provider_delta.log import AddFile
    with table.transaction() as txn:
        txn.add_file(AddFile(f"{STAGING_DIR}/referenced/day=1/part-0.parquet", 1, {}, 1))
    assert clean_stale_staging(table) == [] and kept.exists()
    # the next write cleans up on its way (best effort)
    _staging_folder(root, "dead2", STAGING_RETENTION_HOURS + 1)
    commit_dataframe(_ids(spark, [2]), str(root))
    assert sorted(p.name for p in (root / STAGING_DIR).iterdir()) == ["referenced", "running"]
