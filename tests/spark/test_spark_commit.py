"""commit_dataframe in real local Spark: one commit per app version, nothing left behind otherwise."""
from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import CommitFailedError, InvalidArgumentError
from airflow_provider_delta.log import Transaction
from airflow_provider_delta.spark import commit as commit_module
from airflow_provider_delta.spark import commit_dataframe
from airflow_provider_delta.spark.staged_write import STAGING_DIR

pytestmark = pytest.mark.spark


def _orders(spark, ids, day="2026-01-01"):
    return spark.createDataFrame([(i, f"c{i % 3}", dt.date.fromisoformat(day)) for i in ids],
                                 "id long, customer string, day date")


def _deltalake_rows(uri: str) -> list[dict]:
    import deltalake
    return sorted(deltalake.DeltaTable(uri).to_pyarrow_table().to_pylist(), key=lambda r: r["id"])


def _log_actions(root: Path, version: int) -> list[dict]:
    text = (root / "_delta_log" / f"{version:020d}.json").read_text()
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_append_commits_once_per_app_version(spark, tmp_path, data_files):
    root = tmp_path / "orders"
    job = {"dag_id": "d", "task_id": "t", "run_id": "r", "try_number": 1}
    v0 = commit_dataframe(_orders(spark, range(5)), str(root), app_id="d.t", app_version=100,
                          partition_by=["day"], job=job)
    assert v0 == 0
    files_after_first = data_files(root)
    assert files_after_first and all(f.startswith("day=2026-01-01/part-") for f in files_after_first)

    # the retry of the same run: skipped, no new version, no new file on disk
    retry = commit_dataframe(_orders(spark, range(5)), str(root), app_id="d.t", app_version=100,
                             job={**job, "try_number": 2})
    assert retry is None
    assert DeltaTable(str(root)).latest_version() == 0
    assert data_files(root) == files_after_first
    assert not (root / STAGING_DIR).exists()

    # an older version of the same app is also already covered (Delta's >= rule)
    assert commit_dataframe(_orders(spark, [99]), str(root), app_id="d.t", app_version=50) is None

    # the next run commits
    v1 = commit_dataframe(_orders(spark, range(5, 8), "2026-01-02"), str(root), app_id="d.t", app_version=101)
    assert v1 == 1
    snap = DeltaTable(str(root)).snapshot()
    assert snap.transaction_version("d.t") == 101
    assert [r["id"] for r in _deltalake_rows(str(root))] == list(range(8))

    actions = _log_actions(root, 0)
    info = actions[0]["commitInfo"]
    assert info["operation"] == "WRITE" and info["job"] == job
    assert info["operationMetrics"]["numOutputRows"] == "5"
    adds = [a["add"] for a in actions if "add" in a]
    assert {a["partitionValues"]["day"] for a in adds} == {"2026-01-01"}
    assert sum(json.loads(a["stats"])["numRecords"] for a in adds) == 5
    assert {"txn": {"appId": "d.t", "version": 100}} == {"txn": {k: v for k, v in a["txn"].items()
                                                                  if k != "lastUpdated"}
                                                         for a in actions if "txn" in a}
    assert not list(root.rglob("_SUCCESS"))


def test_overwrite_replaces_rows_and_deltalake_agrees(spark, tmp_path):
    root = str(tmp_path / "totals")
    commit_dataframe(_orders(spark, range(4)), root, mode="append", app_id="a", app_version=1)
    v = commit_dataframe(_orders(spark, [10, 11]), root, mode="overwrite", app_id="a", app_version=2)
    assert v == 1
    assert [r["id"] for r in _deltalake_rows(root)] == [10, 11]
    ours = DeltaTable(root).snapshot().to_pyarrow()
    assert sorted(ours.column("id").to_pylist()) == [10, 11]
    removes = [a for a in _log_actions(Path(root), 1) if "remove" in a]
    assert len(removes) == len(DeltaTable(root).snapshot(0).files())


def test_properties_apply_when_the_write_creates_the_table_and_later_runs_still_commit(spark, tmp_path, caplog):
    """DeltaSparkSubmitOperator(table_properties=...) hands them to every run: the first creates the
    table with them; later runs commit (no InvalidArgumentError, hence no retry re-submitting Spark),
    leave the table's properties as they are and warn about those that differ, as Delta Spark's
    df.write.option("delta.x", ...) does nothing to an existing table."""
    root = str(tmp_path / "t")
    props = {"delta.appendOnly": "true", "delta.checkpointInterval": "3"}
    assert commit_dataframe(_orders(spark, [1, 2]), root, app_id="d:t@1", app_version=1, properties=props) == 0
    assert DeltaTable(root).snapshot().metadata.configuration == props
    assert DeltaTable(root).snapshot().protocol.min_writer_version >= 2          # appendOnly's protocol
    caplog.clear()
    assert commit_dataframe(_orders(spark, [3]), root, app_id="d:t@2", app_version=2, properties=props) == 1
    assert "not applied" not in caplog.text                                        # the same: nothing to say
    other = {"delta.appendOnly": "true", "delta.checkpointInterval": "9"}
    assert commit_dataframe(_orders(spark, [4]), root, app_id="d:t@3", app_version=3, properties=other) == 2
    assert "{'delta.checkpointInterval': '9'}" in caplog.text and "not applied" in caplog.text
    snap = DeltaTable(root).snapshot()
    assert snap.metadata.configuration == props and snap.metadata.id == DeltaTable(root).snapshot(0).metadata.id
    assert sorted(snap.to_pyarrow(columns=["id"]).column("id").to_pylist()) == [1, 2, 3, 4]


def test_existing_table_schema_rules(spark, tmp_path, data_files):
    root = tmp_path / "t"
    schema = pa.schema([("id", pa.int64(), False), ("customer", pa.string()), ("day", pa.date32()),
                        ("extra", pa.string())])
    DeltaTable.create(str(root), schema, partition_by=["day"])
    # int ids widen to long; the missing nullable column is filled with nulls
    df = spark.createDataFrame([(1, "x", dt.date(2026, 1, 1))], "id int, customer string, day date")
    assert commit_dataframe(df, str(root)) == 1
    assert _deltalake_rows(str(root)) == [{"id": 1, "customer": "x", "day": dt.date(2026, 1, 1), "extra": None}]
    before = data_files(root)

    with pytest.raises(InvalidArgumentError, match="not in the table"):
        commit_dataframe(df.withColumn("surprise", df.id), str(root))
    with pytest.raises(InvalidArgumentError, match="partitioned by"):
        commit_dataframe(df, str(root), partition_by=["customer"])
    with pytest.raises(InvalidArgumentError, match="schema mismatch"):
        commit_dataframe(spark.createDataFrame([("1", "x", dt.date(2026, 1, 1))],
                                               "id string, customer string, day date"), str(root))
    with pytest.raises(InvalidArgumentError, match="unknown Delta table property 'delta.appendOnyl'"):
        commit_dataframe(df, str(root), properties={"delta.appendOnyl": "true"})     # checked, table or not
    # NOT NULL is enforced while Spark writes: the job fails, nothing is committed or left behind
    nulls = spark.createDataFrame([(None, "x", dt.date(2026, 1, 1))], "id long, customer string, day date")
    with pytest.raises(Exception, match="NOT NULL"):
        commit_dataframe(nulls, str(root))
    assert DeltaTable(str(root)).latest_version() == 1
    assert data_files(root) == before
    assert not (root / STAGING_DIR).exists()


@pytest.mark.parametrize("kwargs, message", [
    ({"mode": "upsert"}, "mode must be"),
    ({"app_id": "a"}, "app_version"),
    ({"app_id": "a", "app_version": -3}, "non-negative"),
    ({"job": "not a dict"}, "job must be a dict"),
])
def test_bad_arguments_write_nothing(spark, tmp_path, kwargs, message):
    with pytest.raises(InvalidArgumentError, match=message):
        commit_dataframe(_orders(spark, [1]), str(tmp_path / "t"), **kwargs)
    assert not (tmp_path / "t").exists()


def test_timestamp_partitions_are_stored_in_utc(spark, tmp_path, session_time_zone):
    session_time_zone("Asia/Tokyo")
    root = str(tmp_path / "events")
    df = spark.sql("select 1L as id, timestamp'2026-05-01 09:00:00' as hour")   # 09:00 Tokyo = 00:00 UTC
    commit_dataframe(df, root, partition_by=["hour"])
    adds = [a["add"] for a in _log_actions(Path(root), 0) if "add" in a]
    # ISO 8601 in UTC with its zone, as Delta Spark writes it: every reader sees the same instant
    assert [a["partitionValues"]["hour"] for a in adds] == ["2026-05-01T00:00:00.000000Z"]
    got = _deltalake_rows(root)[0]["hour"]
    assert got.astimezone(dt.timezone.utc) == dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc)
    for tz in ("America/Los_Angeles", "UTC"):        # Delta Spark reads it in other session zones
        session_time_zone(tz)
        (row,) = spark.read.format("delta").load(root).selectExpr("cast(hour as long) as s").collect()
        assert row.s == int(dt.datetime(2026, 5, 1, tzinfo=dt.timezone.utc).timestamp())


def test_empty_dataframe_records_the_txn_without_files(spark, tmp_path, data_files):
    root = tmp_path / "t"
    assert commit_dataframe(_orders(spark, range(3)), str(root), app_id="a", app_version=1) == 0
    v = commit_dataframe(_orders(spark, []), str(root), app_id="a", app_version=2)
    assert v == 1
    assert not [a for a in _log_actions(root, 1) if "add" in a]
    assert DeltaTable(str(root)).snapshot().transaction_version("a") == 2
    assert len(data_files(root)) == len(DeltaTable(str(root)).snapshot().files())


def test_concurrent_duplicate_is_a_skip_and_cleans_up(spark, tmp_path, data_files, monkeypatch):
    """A zombie try of the same task commits the same app version while we write: we step back."""
    root = tmp_path / "t"
    commit_dataframe(_orders(spark, range(2)), str(root), app_id="other", app_version=1)
    real_publish = commit_module.publish

    def zombie_then_publish(*args, **kwargs):
        with DeltaTable(str(root)).transaction() as txn:     # the other try wins the race
            txn.set_txn("dag.task", 7)
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(commit_module, "publish", zombie_then_publish)
    before = data_files(root)
    assert commit_dataframe(_orders(spark, range(10, 13)), str(root), app_id="dag.task", app_version=7) is None
    assert DeltaTable(str(root)).latest_version() == 1          # only the zombie's commit
    assert data_files(root) == before                            # our moved files were deleted again
    assert not (root / STAGING_DIR).exists()


def test_concurrent_unrelated_append_is_retried(spark, tmp_path, monkeypatch):
    root = tmp_path / "t"
    commit_dataframe(_orders(spark, range(2)), str(root))
    real_publish = commit_module.publish

    def other_writer_then_publish(*args, **kwargs):
        DeltaTable(str(root)).write(pa.table({"id": [100], "customer": ["z"], "day": [dt.date(2026, 1, 1)]}))
        return real_publish(*args, **kwargs)

    monkeypatch.setattr(commit_module, "publish", other_writer_then_publish)
    assert commit_dataframe(_orders(spark, [5]), str(root), app_id="a", app_version=1) == 2
    assert [r["id"] for r in _deltalake_rows(str(root))] == [0, 1, 5, 100]


def test_failed_commit_deletes_the_written_files(spark, tmp_path, data_files, monkeypatch):
    root = tmp_path / "t"
    commit_dataframe(_orders(spark, range(2)), str(root))
    before = data_files(root)

    def refuse(self):
        raise CommitFailedError("storage said no", retryable=True)

    monkeypatch.setattr(Transaction, "commit", refuse)
    with pytest.raises(CommitFailedError, match="storage said no"):
        commit_dataframe(_orders(spark, range(5, 9)), str(root), app_id="a", app_version=1)
    assert data_files(root) == before
    assert not (root / STAGING_DIR).exists()
    assert DeltaTable(str(root)).latest_version() == 0


def test_managed_commit_table_gets_its_owner_from_its_properties(spark, tmp_path):
    """A Spark job opening a managed-commit table by URI alone rebuilds its SQL owner and commits through it."""
    from airflow_provider_delta.log import SqlCommitOwner
    from airflow_provider_delta.spark import read_snapshot
    owner = SqlCommitOwner(f"sqlite:///{tmp_path / 'owner.db'}", backfill_batch_size=100)
    root = str(tmp_path / "managed")
    DeltaTable.create(root, pa.schema([("id", pa.int64()), ("customer", pa.string()), ("day", pa.date32())]),
                      commit_owner=owner)
    assert commit_dataframe(_orders(spark, range(3)), root, app_id="a", app_version=1) == 1
    assert commit_dataframe(_orders(spark, range(3)), root, app_id="a", app_version=1) is None
    # the commit went through the owner: not backfilled into _delta_log yet
    assert not (tmp_path / "managed" / "_delta_log" / f"{1:020d}.json").exists()
    managed = DeltaTable(root, commit_owner=owner)
    assert managed.latest_version() == 1 and managed.snapshot().transaction_version("a") == 1
    assert sorted(r.id for r in read_snapshot(spark, table_uri=root).collect()) == [0, 1, 2]
