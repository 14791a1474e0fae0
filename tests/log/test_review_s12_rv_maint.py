"""Review s12 (report-only) of OPTIMIZE (log/write/optimize.py).

commit_optimize deletes the new files when the commit raises, unless ``txn.outcome_unknown``. But
``Transaction.commit`` also raises after the commit LANDED: the committer's post-commit hook (the automatic
checkpoint) catches ``Exception`` only, so an interrupt while the checkpoint is written (a SIGTERM turned into
Airflow's task-terminated exception, KeyboardInterrupt, SystemExit - all BaseException) escapes with
``outcome_unknown`` False. commit_optimize then deletes the files the committed OPTIMIZE version adds, whose
removes took the old files out of the table: the table references missing files and its rows are gone. The
transaction knows better: ``txn.surely_not_committed()`` finds its own commit in the log.

The interrupt is raised by a trace function at the entry of the automatic checkpoint (where a signal handler
would raise it), not by replacing any code of ours.
"""
from __future__ import annotations

import contextlib
import os
import sys

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, rewrite_bin


@contextlib.contextmanager
def _interrupt_when_called(function_name: str):
    """A KeyboardInterrupt raised in the first frame of ``function_name`` (as a signal handler raises it at that
    point: Python runs handlers between bytecodes); nothing of ours is replaced."""
    fired = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == function_name and not fired:
            fired.append(frame.f_code.co_filename)
            raise KeyboardInterrupt(f"interrupted entering {function_name}")
        return None

    sys.settrace(tracer)
    try:
        yield fired
    finally:
        sys.settrace(None)


def test_an_interrupt_during_the_post_commit_checkpoint_keeps_the_committed_files(tmp_path):
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, pa.schema([("x", pa.int64())]), properties={"delta.checkpointInterval": "1"})
    for i in range(3):
        table.write(pa.table({"x": [i]}))
    with _interrupt_when_called("maybe_auto_checkpoint") as fired, pytest.raises(KeyboardInterrupt):
        table.optimize()                                     # the commit lands; the checkpoint after it is interrupted
    assert fired and fired[0].endswith(os.path.join("maintenance", "checkpoint.py"))
    fresh = DeltaTable(uri)
    assert fresh.latest_version() == 4                       # the OPTIMIZE commit landed
    (add,) = [a["add"] for a in fresh.read_commit(4) if "add" in a]
    assert os.path.exists(os.path.join(uri, add["path"])), "the committed OPTIMIZE's new file was deleted"
    assert sorted(fresh.snapshot().to_pyarrow().column("x").to_pylist()) == [0, 1, 2]


class _ThreadlessRewriter:
    """A BinRewriter as the Spark engine is one (:class:`SparkBinRewriter`): the bins rewritten elsewhere with
    rewrite_bin on the plan's rewrite source, the commit left to commit_optimize on the driver."""

    def rewrite(self, plan, written):
        out = []
        for b in plan.bins:
            mine: list[str] = []
            out.append(rewrite_bin(plan.rewrite_source(), b, plan.settings, mine))
            written.extend(mine)
        return out


@pytest.mark.parametrize("engine", ["local", "rewriter"])
@pytest.mark.parametrize("interrupt", [KeyboardInterrupt, SystemExit])
def test_an_interrupt_after_the_optimize_commit_landed_keeps_its_files_on_every_engine(tmp_path, engine, interrupt):
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, pa.schema([("x", pa.int64())]), properties={"delta.checkpointInterval": "1"})
    for i in range(3):
        table.write(pa.table({"x": [i]}))
    fired = []

    def tracer(frame, event, arg):
        if event == "call" and frame.f_code.co_name == "maybe_auto_checkpoint" and not fired:
            fired.append(1)
            raise interrupt("interrupted after the put")
        return None

    sys.settrace(tracer)
    try:
        with pytest.raises(interrupt):
            table.optimize(engine=_ThreadlessRewriter() if engine == "rewriter" else "local")
    finally:
        sys.settrace(None)
    fresh = DeltaTable(uri)
    assert fired and fresh.latest_version() == 4
    (add,) = [a["add"] for a in fresh.read_commit(4) if "add" in a]
    assert os.path.exists(os.path.join(uri, add["path"]))
    assert sorted(fresh.snapshot().to_pyarrow().column("x").to_pylist()) == [0, 1, 2]


def test_an_optimize_that_surely_did_not_commit_still_deletes_its_files(tmp_path):
    """The other side of the rule: a commit refused before any put (a conflict) leaves no new file behind."""
    uri = str(tmp_path / "t")
    table = DeltaTable.create(uri, pa.schema([("x", pa.int64())]))
    for i in range(3):
        table.write(pa.table({"x": [i]}))
    before = {os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs if f.endswith(".parquet")}

    class ConflictingRewriter(_ThreadlessRewriter):
        def rewrite(self, plan, written):
            out = super().rewrite(plan, written)
            DeltaTable(uri).optimize()           # a concurrent OPTIMIZE removes the same files first
            return out

    from airflow_provider_delta.log import ConcurrentModificationError
    with pytest.raises(ConcurrentModificationError):
        table.optimize(engine=ConflictingRewriter())
    fresh = DeltaTable(uri)
    assert fresh.latest_version() == 4
    live = {os.path.join(uri, p) for p in fresh.snapshot().files().column("path").to_pylist()}
    after = {os.path.join(d, f) for d, _, fs in os.walk(uri) for f in fs if f.endswith(".parquet")}
    assert after == before | live, "the losing OPTIMIZE's new files were left behind"
