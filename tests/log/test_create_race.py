"""Two creators of one table at once: losing to an identical create goes on, losing to a different one fails.

The races are made deterministic by letting the other creator commit between the
loser's checks and its commit (the moment a real race falls in), plus one free-running
race of threads.
"""
from __future__ import annotations

import threading
from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import (ConcurrentModificationError, DeltaTable, InvalidArgumentError,
                                        TableAlreadyExistsError)
from airflow_provider_delta.log.write import create as create_module
from airflow_provider_delta.log.write import writer as writer_module

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])
PROPS = {"delta.appendOnly": "false", "delta.checkpointInterval": "5"}


def rows(ids: list[int], day: str = "2026-01-01") -> pa.Table:
    return pa.table({"id": pa.array(ids, pa.int64()), "day": [day] * len(ids)})


def data_files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.parquet")}


def live_ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow(columns=["id"]).column("id").to_pylist())


def other_creator_first(monkeypatch, module, name: str, other, result=None) -> None:
    """Run ``other()`` (the winning creator) just before ``module.name`` runs for the loser.

    ``result``: what the loser's call then returns instead of running (a check that was
    made before the winner committed).
    """
    real = getattr(module, name)

    def winner_then_real(*args, **kwargs):
        monkeypatch.setattr(module, name, real)
        other()
        return real(*args, **kwargs) if result is None else result
    monkeypatch.setattr(module, name, winner_then_real)


def test_create_that_lost_to_an_identical_create_returns_the_table(tmp_path, monkeypatch):
    uri = str(tmp_path / "t")
    winner: list[DeltaTable] = []
    # the loser has checked that no table exists; then the winner commits version 0
    other_creator_first(monkeypatch, create_module, "table_has_commits", lambda: winner.append(
        DeltaTable.create(uri, SCHEMA, partition_by=["day"], properties=PROPS)), result=False)
    loser = DeltaTable.create(uri, SCHEMA, partition_by=["day"], properties=PROPS)
    assert loser.latest_version() == 0
    assert loser.snapshot().metadata.id == winner[0].snapshot().metadata.id
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir()) == [f"{0:020d}.json"]


@pytest.mark.parametrize("kwargs, named", [
    ({"schema": pa.schema([("id", pa.int32()), ("day", pa.string())])}, "schema"),
    ({"partition_by": []}, "partition columns"),
    ({"properties": {"delta.checkpointInterval": "7"}}, "properties"),
    ({"properties": {**PROPS, "delta.enableChangeDataFeed": "true"}}, "protocol"),
])
def test_create_that_lost_to_a_different_create_fails_and_names_the_difference(tmp_path, monkeypatch, kwargs,
                                                                               named):
    uri = str(tmp_path / "t")
    mine = {"schema": SCHEMA, "partition_by": ["day"], "properties": PROPS}
    theirs = {**mine, **kwargs}
    other_creator_first(monkeypatch, create_module, "table_has_commits", lambda: DeltaTable.create(uri, **theirs),
                        result=False)
    with pytest.raises(TableAlreadyExistsError, match=f"different Delta table.*{named}"):
        DeltaTable.create(uri, **mine)
    assert sorted(p.name for p in (tmp_path / "t" / "_delta_log").iterdir()) == [f"{0:020d}.json"]


def test_create_over_a_table_that_existed_before_still_fails(tmp_path):
    uri = str(tmp_path / "t")
    DeltaTable.create(uri, SCHEMA)
    with pytest.raises(TableAlreadyExistsError, match="already exists"):
        DeltaTable.create(uri, SCHEMA)


def test_racing_identical_creators_all_succeed(tmp_path):
    uri = str(tmp_path / "t")
    barrier = threading.Barrier(8)
    results: list[object] = []

    def create():
        barrier.wait()
        try:
            results.append(DeltaTable.create(uri, SCHEMA, partition_by=["day"]).snapshot().metadata.id)
        except Exception as e:                       # a failure of the test, reported below
            results.append(e)

    threads = [threading.Thread(target=create) for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    # each either lost the race at version 0 or found the table there before it began
    ids = {r for r in results if isinstance(r, str)}
    errors = [r for r in results if not isinstance(r, str)]
    assert all(isinstance(e, TableAlreadyExistsError) and "already exists" in str(e) for e in errors), errors
    assert len(ids) == 1 and ids == {DeltaTable(uri).snapshot().metadata.id}
    assert DeltaTable(uri).latest_version() == 0


@pytest.mark.parametrize("mode, expected", [("append", [1, 2, 10, 11]), ("overwrite", [10, 11])])
def test_write_that_lost_the_create_to_an_identical_one_goes_on(tmp_path, monkeypatch, mode, expected):
    """Append adds its rows to the winner's; overwrite replaces them, as if it had started later."""
    uri = str(tmp_path / "t")
    other_creator_first(monkeypatch, writer_module, "_write_files",
                        lambda: DeltaTable(uri).write(rows([1, 2]), mode=mode, partition_by=["day"]))
    version = DeltaTable(uri).write(rows([10, 11]), mode=mode, partition_by=["day"])
    assert version == 1
    assert live_ids(uri) == expected
    assert len(data_files(tmp_path / "t")) == 2           # nothing left behind: each write's one file
    ops = [h["operation"] for h in DeltaTable(uri).history()]
    assert ops == ["WRITE", "WRITE"]
    assert DeltaTable(uri).snapshot(version=1).metadata.id == DeltaTable(uri).snapshot(version=0).metadata.id


def test_write_that_lost_the_create_to_a_different_table_fails_and_leaves_nothing(tmp_path, monkeypatch):
    uri = str(tmp_path / "t")
    other_creator_first(monkeypatch, writer_module, "_write_files",
                        lambda: DeltaTable(uri).write(rows([1]), partition_by=[]))
    with pytest.raises(ConcurrentModificationError, match="different table.*partition columns") as err:
        DeltaTable(uri).write(rows([10]), partition_by=["day"])
    assert err.value.winning_version == 0 and err.value.reason == "table_created"
    assert live_ids(uri) == [1]
    assert DeltaTable(uri).latest_version() == 0
    assert len(data_files(tmp_path / "t")) == 1           # the loser's file was deleted again


def test_write_whose_app_version_the_winner_recorded_does_not_commit_twice(tmp_path, monkeypatch):
    """The winner is the same write (a retry elsewhere): the original conflict stands, no second append."""
    uri = str(tmp_path / "t")
    other_creator_first(monkeypatch, writer_module, "_write_files",
                        lambda: DeltaTable(uri).write(rows([1]), app_id="dag.task", app_version=5))
    with pytest.raises(ConcurrentModificationError, match="created .* concurrently"):
        DeltaTable(uri).write(rows([1]), app_id="dag.task", app_version=5)
    assert live_ids(uri) == [1] and DeltaTable(uri).latest_version() == 0
    assert len(data_files(tmp_path / "t")) == 1


def test_racing_first_writes_all_land(tmp_path):
    uri = str(tmp_path / "t")
    n = 6
    barrier = threading.Barrier(n)
    errors: list[BaseException] = []

    def write(i):
        barrier.wait()
        try:
            DeltaTable(uri).write(rows([i]), partition_by=["day"])
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(n)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    assert live_ids(uri) == list(range(n))
    assert DeltaTable(uri).latest_version() == n - 1


def test_managed_create_that_lost_to_an_identical_one_returns_the_owners_table(tmp_path, monkeypatch):
    """With a commit owner: the winner's table is the one the owner took; the loser's proposal is forgotten."""
    from airflow_provider_delta.log import InMemoryCommitOwner
    uri = str(tmp_path / "t")
    owner = InMemoryCommitOwner()
    other_creator_first(monkeypatch, create_module, "table_has_commits",
                        lambda: DeltaTable.create(uri, SCHEMA, commit_owner=owner), result=False)
    loser = DeltaTable.create(uri, SCHEMA, commit_owner=owner)
    table_id = loser.snapshot().metadata.id
    assert owner.describe_table(table_id).latest_version == 0
    assert loser.write(rows([1])) == 1                    # the next commit goes through the owner
    assert owner.describe_table(table_id).latest_version == 1


# ------------------------------------------------------------------ properties for the create only (the Spark path)
def test_create_only_properties_apply_to_a_new_table_and_are_listed_for_an_existing_one(tmp_path):
    from airflow_provider_delta.log import plan_write
    uri = str(tmp_path / "t")
    wanted = {"delta.appendOnly": "false", "delta.checkpointInterval": "7"}
    plan = plan_write(uri, None, SCHEMA, properties=wanted, create_only_properties=True)
    assert plan.creates_table and plan.configuration == wanted and not plan.unapplied_properties
    DeltaTable(uri).write(rows([1]), properties={"delta.checkpointInterval": "7"})
    snap = DeltaTable(uri).snapshot()
    plan = plan_write(uri, snap, SCHEMA, properties=wanted, create_only_properties=True)
    assert plan.metadata is None and plan.configuration == {"delta.checkpointInterval": "7"}   # nothing changes
    assert plan.unapplied_properties == {"delta.appendOnly": "false"}      # held otherwise (unset): listed
    # checked all the same: a misspelt name or a bad value is refused, table or not
    for bad in ({"delta.appendOnyl": "true"}, {"delta.checkpointInterval": "0"}, {"delta.feature.x": "on"}):
        with pytest.raises(InvalidArgumentError):
            plan_write(uri, snap, SCHEMA, properties=bad, create_only_properties=True)
    # without the flag (DeltaTable.write): properties for an existing table stay an error
    with pytest.raises(InvalidArgumentError, match="only be given when the table is created"):
        plan_write(uri, snap, SCHEMA, properties=wanted)


def test_write_with_create_only_properties_that_lost_the_create_goes_on_without_them(tmp_path):
    """Another writer created the table (same schema, other properties) between this write's plan
    and its commit: the write lands against that table, which keeps its own properties."""
    from airflow_provider_delta.log import PlannedWrite, plan_write
    uri = str(tmp_path / "t")
    wanted = {"delta.appendOnly": "true", "delta.enableChangeDataFeed": "true"}
    plans = [plan_write(uri, None, SCHEMA, properties=wanted, create_only_properties=flag) for flag in (True, False)]
    writes = [PlannedWrite(DeltaTable(uri), plan, create_only_properties=flag, app_id="d:t@1", app_version=1)
              for plan, flag in zip(plans, (True, False))]
    DeltaTable(uri).write(rows([1]), properties={"delta.checkpointInterval": "5"})      # the winner
    with pytest.raises(ConcurrentModificationError, match="different table.*properties"):
        writes[1].commit([])                      # DeltaTable.write's rule: a different table is an error
    assert writes[0].commit([]) == 1
    snap = DeltaTable(uri).snapshot()
    assert snap.metadata.configuration == {"delta.checkpointInterval": "5"}
    assert snap.transaction_version("d:t@1") == 1 and snap.metadata.id == DeltaTable(uri).snapshot(0).metadata.id
    assert writes[0].plan.unapplied_properties == wanted


def test_create_only_properties_do_not_excuse_another_schema_after_a_lost_create(tmp_path):
    from airflow_provider_delta.log import PlannedWrite, plan_write
    uri = str(tmp_path / "t")
    write = PlannedWrite(DeltaTable(uri), plan_write(uri, None, SCHEMA, properties={"delta.appendOnly": "true"},
                                                     create_only_properties=True), create_only_properties=True)
    DeltaTable(uri).write(pa.table({"id": pa.array([1], pa.int64())}))
    with pytest.raises(ConcurrentModificationError, match="different table.*schema"):
        write.commit([])
    assert DeltaTable(uri).latest_version() == 0
