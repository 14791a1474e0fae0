"""Work and memory bounded by the files that exist, whatever version numbers they claim.

A stray ``_delta_log/99999999999999999999.json`` next to a normal log used to make
``snapshot()`` walk (and list) every version in between until the kernel killed it.
Every operation must instead answer from the files present: a typed error that names
the gap as a range, or the documented answer.
"""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import CorruptLogError, DeltaTable

HUGE = 99999999999999999999


def tree(root) -> dict[str, int]:
    return {os.path.join(d, f): os.stat(os.path.join(d, f)).st_mtime_ns for d, _, fs in os.walk(root) for f in fs}


@pytest.fixture
def table_with_stray(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    t.write(pa.table({"id": [2]}))
    (tmp_path / "t" / "_delta_log" / f"{HUGE:020d}.json").write_text('{"commitInfo":{"timestamp":1}}\n')
    return tmp_path / "t"


@pytest.mark.timeout(60)
def test_a_stray_huge_version_is_a_typed_error_naming_the_gap(table_with_stray):
    t = DeltaTable(str(table_with_stray))
    before = tree(table_with_stray)
    assert t.latest_version() == HUGE                       # listing: the documented answer
    for op in (t.snapshot, t.history, lambda: t.version_at(0),
               lambda: t.write(pa.table({"id": [3]})), t.checkpoint, t.cleanup_metadata,
               lambda: t.vacuum(dry_run=False)):
        with pytest.raises(CorruptLogError, match=f"missing commit\\(s\\) 3 to {HUGE - 1}"):
            op()
    assert tree(table_with_stray) == before
    assert t.snapshot(version=2).version == 2               # the versions before the gap still read
    # a poll reads forward from the version it last saw, one commit file after the other (as
    # Delta Spark reads winners), so it stops at the gap: the stray file is never a new commit
    new = t.commits_since(1)
    assert new.latest == 2 and [c.version for c in new.commits] == [2]
    with pytest.raises(CorruptLogError, match="missing commit"):
        t.compact_log(0, HUGE)
    assert tree(table_with_stray) == before


@pytest.mark.timeout(60)
def test_a_wide_gap_is_described_by_its_range(tmp_path):
    t = DeltaTable.create(str(tmp_path / "t"), pa.schema([("id", pa.int64())]))
    t.write(pa.table({"id": [1]}))
    (tmp_path / "t" / "_delta_log" / f"{10_000_000:020d}.json").write_text('{"commitInfo":{"timestamp":1}}\n')
    with pytest.raises(CorruptLogError) as e:
        DeltaTable(str(tmp_path / "t")).snapshot()
    message = str(e.value)
    assert "2 to 9999999 (9999998 versions)" in message and len(message) < 500
