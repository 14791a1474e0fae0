"""The change feed consumed incrementally: the position is the output's txn record, so every
change reaches the output exactly once across rounds, retries after crashes and duplicate runs."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from airflow_provider_delta.log import (ConcurrentModificationError, DeltaTable, InvalidArgumentError,
                                        pending_changes, process_changes)

SCHEMA = pa.schema([("id", pa.int64()), ("v", pa.string())])
APP = "consumer"


def _source(tmp_path) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "source"), SCHEMA, properties={"delta.enableChangeDataFeed": "true"})
    t.write(pa.table({"id": pa.array([1, 2], pa.int64()), "v": ["a", "b"]}))
    return t


def _keys(table: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["v"], r["_change_type"], r["_commit_version"]) for r in table.to_pylist())


def test_rounds_process_each_change_once(tmp_path):
    source, output = _source(tmp_path), DeltaTable(str(tmp_path / "out"))
    first = process_changes(source, output, APP)
    assert (first.range.start, first.range.end, first.version, first.rows) == (0, 1, 0, 2)
    assert output.snapshot().transaction_version(APP) == 1
    again = process_changes(source, output, APP)                 # nothing new: no commit
    assert again.version is None and again.range.empty and output.latest_version() == 0
    source.write(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))                  # v2
    source.write(pa.table({"id": pa.array([9], pa.int64()), "v": ["z"]}), mode="overwrite")  # v3
    pinned = source.latest_version()
    source.write(pa.table({"id": pa.array([10], pa.int64()), "v": ["late"]}))             # v4: after the pin
    second = process_changes(source, output, APP, end_version=pinned)
    assert (second.range.start, second.range.end, second.rows) == (2, 3, 5)
    third = process_changes(source, output, APP)
    assert (third.range.start, third.range.end, third.rows) == (4, 4, 1)
    # the output holds every change of versions 0..4 exactly once
    assert _keys(output.snapshot().to_pyarrow()) == _keys(source.changes(0))


def test_crash_before_the_commit_reprocesses_the_same_range(tmp_path):
    source, output = _source(tmp_path), DeltaTable(str(tmp_path / "out"))
    process_changes(source, output, APP)
    source.write(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))

    def crash(changes: pa.Table) -> pa.Table:
        raise RuntimeError("worker died")

    with pytest.raises(RuntimeError):
        process_changes(source, output, APP, transform=crash)
    assert output.latest_version() == 0 and output.snapshot().transaction_version(APP) == 1
    retry = process_changes(source, output, APP, transform=lambda c: c.filter(pc.greater(c["id"], 0)))
    assert (retry.range.start, retry.range.end, retry.version) == (2, 2, 1)
    assert _keys(output.snapshot().to_pyarrow()) == _keys(source.changes(0))


def test_crash_after_the_commit_and_a_duplicate_run_add_nothing(tmp_path):
    source, output = _source(tmp_path), DeltaTable(str(tmp_path / "out"))
    process_changes(source, output, APP)                                   # output v0
    source.write(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))  # source v2
    # two runs of the same step plan the same range before either commits (a duplicate task)
    plan_a, plan_b = pending_changes(source, output, APP), pending_changes(source, output, APP)
    assert plan_a == plan_b and (plan_a.start, plan_a.end) == (2, 2)
    assert process_changes(source, output, APP).version == 1
    # the loser, which read output version 0, commits the same app id: Delta's txn conflict refuses it
    txn = output.transaction(read_version=0)
    txn.set_txn(APP, plan_b.end)
    with pytest.raises(ConcurrentModificationError):
        txn.commit()
    # "the task crashed after its commit": the retry finds nothing left
    assert process_changes(source, output, APP).version is None
    assert _keys(output.snapshot().to_pyarrow()) == _keys(source.changes(0))


def test_empty_transform_output_still_moves_the_position(tmp_path):
    source, output = _source(tmp_path), DeltaTable(str(tmp_path / "out"))
    step = process_changes(source, output, APP, transform=lambda c: c.slice(0, 0))
    assert step.version == 0 and output.snapshot().to_pyarrow().num_rows == 0
    assert output.snapshot().transaction_version(APP) == 1
    assert process_changes(source, output, APP).version is None


def test_initial_version_and_bad_arguments(tmp_path):
    source, output = _source(tmp_path), DeltaTable(str(tmp_path / "out"))
    step = process_changes(source, output, APP, initial_version=1)
    assert step.range.start == 1 and step.rows == 2
    with pytest.raises(InvalidArgumentError):
        pending_changes(source, output, "")
    with pytest.raises(InvalidArgumentError):
        process_changes(source, DeltaTable(str(tmp_path / "o2")), APP, transform=lambda c: None)
    assert not (tmp_path / "o2").exists()


def test_a_consumer_without_a_position_continues_from_its_former_ids_furthest(tmp_path):
    """A renamed consumer: no txn under its id, txns under two former ids: it continues after the
    furthest of them, commits under its own id, and its next round reads that one."""
    source, output = _source(tmp_path), DeltaTable(str(tmp_path / "out"))
    process_changes(source, output, "old.mapped.1")                           # position 1 under a former id
    source.write(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))     # v2
    process_changes(source, output, "old.mapped[1]", initial_version=2)      # position 2 under another
    source.write(pa.table({"id": pa.array([4], pa.int64()), "v": ["d"]}))     # v3
    rng = pending_changes(source, output, "new:mapped[1]", former_app_ids=["old.mapped[1]", "old.mapped.1"])
    assert (rng.processed, rng.start, rng.resumed_from) == (2, 3, "old.mapped[1]")
    step = process_changes(source, output, "new:mapped[1]", former_app_ids=("old.mapped.1", "old.mapped[1]"))
    assert (step.range.start, step.range.end, step.rows, step.range.resumed_from) == (3, 3, 1, "old.mapped[1]")
    assert output.snapshot().transaction_version("new:mapped[1]") == 3        # the position moved to the new id
    assert _keys(output.snapshot().to_pyarrow()) == _keys(source.changes(0))  # every change once
    again = pending_changes(source, output, "new:mapped[1]", former_app_ids=["old.mapped.1"])
    assert again.empty and again.resumed_from is None


def test_a_position_under_the_consumers_own_id_wins_over_a_former_one(tmp_path):
    source, output = _source(tmp_path), DeltaTable(str(tmp_path / "out"))
    process_changes(source, output, "new:c", end_version=0)                   # own position 0
    source.write(pa.table({"id": pa.array([3], pa.int64()), "v": ["c"]}))     # v2
    process_changes(source, output, "old.c", end_version=2)                   # a former id further on
    rng = pending_changes(source, output, "new:c", former_app_ids=["old.c"])
    assert (rng.processed, rng.start, rng.end, rng.resumed_from) == (0, 1, 2, None)
    assert pending_changes(source, output, "nobody", former_app_ids=["nobody.else"]).start == 0


@pytest.mark.parametrize("former", ["old.c", [""], [None], [" "]])
def test_bad_former_ids_are_refused_and_nothing_is_written(tmp_path, former):
    source, output = _source(tmp_path), DeltaTable(str(tmp_path / "out"))
    with pytest.raises(InvalidArgumentError, match="former_app_ids"):
        process_changes(source, output, "new:c", former_app_ids=former)
    assert not (tmp_path / "out").exists()
