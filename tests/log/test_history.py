"""``DeltaTable.history``: commits newest first with their commitInfo fields.

Checks the limits delta-rs asserts on a table whose early commits were vacuumed
(README E14), that history ends at the oldest commit file still present, that its
timestamps are the commit timestamps (monotonized mtimes without ICT), that a commit
without commitInfo still appears, and that a limited history reads only the commit
files it returns.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from airflow_provider_delta.log import DeltaTable, TableNotFoundError
from corpus_expected import CHECKPOINTS_VACUUMED_MTIMES, commit_file, make_writable, set_mtime

GEN_LOG = Path(__file__).resolve().parents[2].parent / "shared" / "tools" / "gen_log.py"


def test_vacuumed_log_history_limits(corpus):
    """delta-rs lib.rs test_read_vacuumed_log_history: limit 5 -> 5 entries, limit 10 -> 8."""
    t = DeltaTable(str(corpus / "delta-rs" / "checkpoints_vacuumed"))
    h5 = t.history(limit=5)
    assert [h["version"] for h in h5] == [12, 11, 10, 9, 8]
    h10 = t.history(limit=10)
    assert len(h10) == 8
    assert [h["version"] for h in h10] == list(range(12, 4, -1))
    assert t.history() == h10


def test_history_limit_zero_and_one(corpus):
    t = DeltaTable(str(corpus / "delta-rs" / "checkpoints_vacuumed"))
    assert t.history(limit=0) == []
    assert [h["version"] for h in t.history(limit=1)] == [12]


def test_history_timestamps_are_commit_timestamps(copy_table):
    root = copy_table("delta-rs/checkpoints_vacuumed")
    make_writable(root)
    for name, ms in CHECKPOINTS_VACUUMED_MTIMES.items():
        set_mtime(root / "_delta_log" / name, ms)
    t = DeltaTable(str(root))
    hist = t.history()
    expected = {int(n[:20]): ms for n, ms in CHECKPOINTS_VACUUMED_MTIMES.items() if n.endswith(".json")}
    assert {h["version"]: h["timestamp"] for h in hist} == expected
    ts = [h["timestamp"] for h in hist]
    assert ts == sorted(ts, reverse=True)
    for h in hist:
        assert t.snapshot(version=h["version"]).timestamp == h["timestamp"]


def test_history_operations(corpus):
    """Every entry carries the commitInfo's operation and parameters, newest first."""
    t = DeltaTable(str(corpus / "delta-golden" / "basic-with-inserts-overwrite-restore"))
    hist = t.history()
    assert [h["version"] for h in hist] == [3, 2, 1, 0]
    assert hist[0]["operation"] == "RESTORE"
    for h in hist:
        (ci,) = [a["commitInfo"] for a in t.read_commit(h["version"]) if "commitInfo" in a]
        assert h["operation"] == ci["operation"]
        assert h.get("operationParameters") == ci.get("operationParameters")


def test_history_of_commit_without_commit_info(tmp_path):
    log = tmp_path / "t" / "_delta_log"
    log.mkdir(parents=True)
    schema = json.dumps({"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]})
    (log / f"{0:020d}.json").write_text(
        json.dumps({"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}) + "\n"
        + json.dumps({"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}},
                                   "schemaString": schema, "partitionColumns": [], "configuration": {}}}) + "\n")
    set_mtime(log / f"{0:020d}.json", 1_600_000_000_000)
    (log / f"{1:020d}.json").write_text(json.dumps({"commitInfo": {"operation": "WRITE", "timestamp": 5}}) + "\n")
    set_mtime(log / f"{1:020d}.json", 1_600_000_001_000)
    hist = DeltaTable(str(tmp_path / "t")).history()
    assert [(h["version"], h["timestamp"]) for h in hist] == [(1, 1_600_000_001_000), (0, 1_600_000_000_000)]
    assert hist[0]["operation"] == "WRITE"
    assert "operation" not in hist[1]


def test_history_of_missing_table(tmp_path):
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path / "nothing")).history()


@pytest.fixture(scope="module")
def long_log(tmp_path_factory):
    root = tmp_path_factory.mktemp("long")
    subprocess.run([sys.executable, str(GEN_LOG), str(root), "--commits", "300", "--adds", "1"],
                   check=True, capture_output=True)
    return root


def test_limited_history_reads_only_the_limit(long_log, monkeypatch):
    t = DeltaTable(str(long_log))
    t.snapshot()  # a caller that already holds the latest snapshot
    reads: list[str] = []
    orig = t.storage.read_bytes

    def counting(path, *a, **kw):
        reads.append(path)
        return orig(path, *a, **kw)

    monkeypatch.setattr(t.storage, "read_bytes", counting)
    hist = t.history(limit=3)
    assert [h["version"] for h in hist] == [299, 298, 297]
    commit_reads = [p for p in reads if p.endswith(".json")]
    assert len(commit_reads) <= 6, f"{len(commit_reads)} commit files read for history(limit=3)"


def test_history_timestamps_monotonized(long_log, tmp_path):
    """Commit files with equal or decreasing mtimes get previous + 1 ms (Delta Spark)."""
    import shutil
    root = tmp_path / "t"
    shutil.copytree(long_log, root)
    for v in range(5):
        set_mtime(commit_file(root, v), 2_000_000)
    hist = DeltaTable(str(root)).history()
    by_v = {h["version"]: h["timestamp"] for h in hist}
    assert [by_v[v] for v in range(5)] == [2_000_000 + i for i in range(5)]
