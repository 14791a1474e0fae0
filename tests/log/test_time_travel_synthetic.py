"""S: timestamp resolution on synthetic logs (delta-kernel-rs history_manager cases).

The tables are written here, commit by commit, as JSON with chosen file mtimes and
``commitInfo.inCommitTimestamp`` values, so each rule is tested in isolation:
in-commit timestamps enabled mid-history (file mtimes before the enablement version,
ICTs from it on), ICT from creation (mtimes ignored), non-monotonic file mtimes
(monotonized to previous + 1 ms, as Delta Spark does), and a writer bug (an ICT
commit without its timestamp) that must surface as a typed error, not a wrong answer.

``version_at`` is the greatest-lower-bound lookup: the newest version whose commit
time is at or before the timestamp. Also here: a 10,000-commit ICT log, where a
lookup must read O(log n) commit files (binary search over ICTs).
"""
from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import uuid
from pathlib import Path

import fsspec
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import CorruptLogError, DeltaTable, TimestampOutOfRangeError
from corpus_expected import set_mtime

SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "id", "type": "long", "nullable": True, "metadata": {}}]})
ICT_PROTOCOL = {"minReaderVersion": 1, "minWriterVersion": 7, "writerFeatures": ["inCommitTimestamp"]}
GEN_LOG = Path(__file__).resolve().parents[2].parent / "shared" / "tools" / "gen_log.py"


def _metadata(configuration: dict[str, str]) -> dict:
    return {"metaData": {"id": "8f9b2c1e-0000-4000-8000-000000000001", "format": {"provider": "parquet", "options": {}},
                         "schemaString": SCHEMA, "partitionColumns": [], "configuration": configuration,
                         "createdTime": 1}}


def _add(v: int) -> dict:
    return {"add": {"path": f"part-{v:05d}.parquet", "partitionValues": {}, "size": 100,
                    "modificationTime": 1, "dataChange": True}}


def write_commits(root: Path, commits: list[tuple[int, list[dict]]]) -> Path:
    """Write commits 0..n-1: each is (file mtime in ms, actions); returns the table root."""
    log = root / "_delta_log"
    log.mkdir(parents=True)
    for v, (mtime, actions) in enumerate(commits):
        p = log / f"{v:020d}.json"
        p.write_text("\n".join(json.dumps(a) for a in actions) + "\n")
        set_mtime(p, mtime)
    return root


def _ci(ict: int | None = None, ts: int = 0) -> dict:
    info = {"timestamp": ict if ict is not None else ts, "operation": "WRITE", "operationParameters": {}}
    if ict is not None:
        info["inCommitTimestamp"] = ict
    return {"commitInfo": info}


def mock_table(root: Path, v4_has_ict: bool = True) -> Path:
    """v0 (mtime 50), v1 (150), v2 (250): no ICT; v3 (350, ICT 300) enables ICT with
    enablementVersion 3 / enablementTimestamp 300; v4 (450, ICT 400)."""
    enable = {"delta.enableInCommitTimestamps": "true", "delta.inCommitTimestampEnablementVersion": "3",
              "delta.inCommitTimestampEnablementTimestamp": "300"}
    return write_commits(root, [
        (50, [_ci(ts=50), {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, _metadata({}), _add(0)]),
        (150, [_ci(ts=150), _add(1)]),
        (250, [_ci(ts=250), _add(2)]),
        (350, [_ci(ict=300), {"protocol": ICT_PROTOCOL}, _metadata(enable)]),
        (450, [_ci(ict=400) if v4_has_ict else _ci(ts=450), _add(4)]),
    ])


# ------------------------------------------------------------ ICT enabled at version 3


@pytest.mark.parametrize("ts,expected", [
    (50, 0), (100, 0), (150, 1), (251, 2), (299, 2), (300, 3), (301, 3), (350, 3), (400, 4),
])
def test_mock_table_greatest_lower_bound(tmp_path, ts, expected):
    t = DeltaTable(str(mock_table(tmp_path / "t")))
    assert t.version_at(ts) == expected
    assert t.snapshot(timestamp=ts).version == expected


def test_mock_table_before_first_commit(tmp_path):
    t = DeltaTable(str(mock_table(tmp_path / "t")))
    with pytest.raises(TimestampOutOfRangeError) as ei:
        t.version_at(0)
    assert ei.value.earliest == 50


def test_mock_table_after_latest(tmp_path):
    """ts 1000 is after the last ICT (400): the kernel-rs answer v4 needs allow_after_latest=True."""
    t = DeltaTable(str(mock_table(tmp_path / "t")))
    with pytest.raises(TimestampOutOfRangeError) as ei:
        t.version_at(1000)
    assert ei.value.latest == 400
    assert t.version_at(1000, allow_after_latest=True) == 4


def test_mock_table_commit_timestamps(tmp_path):
    """Before enablement the (file) time is the mtime, from it on the ICT: 350/450 mtimes are unused."""
    t = DeltaTable(str(mock_table(tmp_path / "t")))
    snap = t.snapshot()
    assert snap.in_commit_timestamps_enabled
    assert snap.ict_enablement == (3, 300)
    assert [t.snapshot(version=v).timestamp for v in range(5)] == [50, 150, 250, 300, 400]
    assert [h["timestamp"] for h in t.history()] == [400, 300, 250, 150, 50]
    assert not t.snapshot(version=2).in_commit_timestamps_enabled


def test_missing_ict_after_enablement_is_an_error(tmp_path):
    """v4 lacks inCommitTimestamp although ICT is on (a writer bug): a lookup that needs it
    fails with a typed error instead of guessing; lookups that do not need it still work."""
    t = DeltaTable(str(mock_table(tmp_path / "t", v4_has_ict=False)))
    with pytest.raises(CorruptLogError) as ei:
        t.version_at(350)
    assert "4" in str(ei.value) and "inCommitTimestamp" in str(ei.value)
    with pytest.raises(CorruptLogError):
        t.snapshot().timestamp  # noqa: B018 - the property raises
    assert t.version_at(299) == 2  # before enablement: file mtimes only
    assert t.snapshot(version=3).timestamp == 300


# ------------------------------------------------------------------ ICT from creation


def _ict_from_creation(root: Path) -> Path:
    conf = {"delta.enableInCommitTimestamps": "true"}
    # mtimes are deliberately far off and decreasing: they must not matter
    return write_commits(root, [
        (9000, [_ci(ict=100), {"protocol": ICT_PROTOCOL}, _metadata(conf), _add(0)]),
        (8000, [_ci(ict=200), _add(1)]),
        (7000, [_ci(ict=300), _add(2)]),
    ])


@pytest.mark.parametrize("ts,expected", [(150, 0), (250, 1), (100, 0), (200, 1), (300, 2)])
def test_ict_from_creation(tmp_path, ts, expected):
    t = DeltaTable(str(_ict_from_creation(tmp_path / "t")))
    assert t.snapshot().ict_enablement == (0, None)
    assert t.version_at(ts) == expected
    assert t.snapshot(timestamp=ts).timestamp == (expected + 1) * 100


def test_ict_from_creation_out_of_range(tmp_path):
    t = DeltaTable(str(_ict_from_creation(tmp_path / "t")))
    with pytest.raises(TimestampOutOfRangeError):
        t.version_at(50)
    with pytest.raises(TimestampOutOfRangeError):
        t.version_at(301)
    assert t.version_at(301, allow_after_latest=True) == 2
    assert [h["timestamp"] for h in t.history()] == [300, 200, 100]


# ------------------------------------------------------------ non-monotonic file mtimes


def _non_monotonic(root: Path) -> Path:
    mt = [100, 200, 150, 180, 300]
    commits = [(mt[0], [_ci(ts=1), {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, _metadata({}), _add(0)])]
    commits += [(m, [_ci(ts=1), _add(v)]) for v, m in enumerate(mt[1:], start=1)]
    return write_commits(root, commits)


@pytest.mark.parametrize("ts,expected", [(201, 2), (202, 3), (250, 3), (200, 1), (199, 0), (300, 4)])
def test_non_monotonic_mtimes_greatest_lower_bound(tmp_path, ts, expected):
    """Mtimes 100, 200, 150, 180, 300 are monotonized to 100, 200, 201, 202, 300."""
    t = DeltaTable(str(_non_monotonic(tmp_path / "t")))
    assert t.version_at(ts) == expected


def test_non_monotonic_mtimes_commit_timestamps(tmp_path):
    t = DeltaTable(str(_non_monotonic(tmp_path / "t")))
    assert [t.snapshot(version=v).timestamp for v in range(5)] == [100, 200, 201, 202, 300]
    assert [h["timestamp"] for h in t.history()] == [300, 202, 201, 200, 100]


def test_mtime_precision_is_exact_to_the_millisecond(tmp_path):
    """A commit time read from the file system must be the exact millisecond that was set.
    Some values lose 1 ms when computed as int(st_mtime * 1000) through a float; find such
    a value on this machine (a property of IEEE doubles, not of the OS) and check that an
    exact-timestamp lookup still lands on that commit."""
    probe = tmp_path / "probe"
    probe.write_bytes(b"")
    base = 1_081_703_551_000  # 2004-04-11: about 3% of the milliseconds around here are lossy
    lossy = None
    for ms in range(base, base + 10_000):
        set_mtime(probe, ms)
        if int(os.stat(probe).st_mtime * 1000) != ms:
            lossy = ms
            break
    if lossy is None:
        pytest.skip("no float-lossy millisecond value found on this platform")
    root = write_commits(tmp_path / "t", [
        (lossy - 1000, [_ci(ts=1), {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}, _metadata({}), _add(0)]),
        (lossy, [_ci(ts=1), _add(1)]),
    ])
    t = DeltaTable(str(root))
    assert t.snapshot(version=1).timestamp == lossy
    assert t.version_at(lossy) == 1


# --------------------------------------------------------- 10,000 commits: O(log n) reads

N_COMMITS = 10_000
GEN_START = 1_700_000_000_000  # gen_log.py's default --start-ms; commit v has ICT start + 1000 * (v + 1)


def _ict(v: int) -> int:
    return GEN_START + 1000 * (v + 1)


def _write_classic_checkpoint(root: Path, version: int) -> None:
    """A classic checkpoint of ``version`` for a gen_log.py log (adds only), plus _last_checkpoint."""
    str_map = pa.map_(pa.string(), pa.string())
    schema = pa.schema([
        ("protocol", pa.struct([("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32()),
                                ("readerFeatures", pa.list_(pa.string())), ("writerFeatures", pa.list_(pa.string()))])),
        ("metaData", pa.struct([("id", pa.string()),
                                ("format", pa.struct([("provider", pa.string()), ("options", str_map)])),
                                ("schemaString", pa.string()), ("partitionColumns", pa.list_(pa.string())),
                                ("configuration", str_map), ("createdTime", pa.int64())])),
        ("add", pa.struct([("path", pa.string()), ("partitionValues", str_map), ("size", pa.int64()),
                           ("modificationTime", pa.int64()), ("dataChange", pa.bool_()), ("stats", pa.string())])),
    ])
    rows: list[dict] = []
    for v in range(version + 1):
        for line in (root / "_delta_log" / f"{v:020d}.json").read_text().splitlines():
            a = json.loads(line)
            if "protocol" in a:
                rows.append({"protocol": a["protocol"]})
            elif "metaData" in a:
                m = dict(a["metaData"])
                m["format"] = {"provider": m["format"]["provider"], "options": list(m["format"]["options"].items())}
                m["configuration"] = list(m["configuration"].items())
                rows.append({"metaData": m})
            elif "add" in a:
                add = dict(a["add"])
                add["partitionValues"] = list(add["partitionValues"].items())
                rows.append({"add": add})
    pq.write_table(pa.Table.from_pylist(rows, schema=schema),
                   root / "_delta_log" / f"{version:020d}.checkpoint.parquet")
    (root / "_delta_log" / "_last_checkpoint").write_text(json.dumps({"version": version, "size": len(rows)}))


def _to_memory(src: Path, with_checkpoint: bool) -> str:
    """Copy a generated log into fsspec's in-memory filesystem, so every read goes through fsspec."""
    fs = fsspec.filesystem("memory")
    root = f"/ict10k-{uuid.uuid4().hex}"
    for p in (src / "_delta_log").iterdir():
        if not with_checkpoint and (".checkpoint." in p.name or p.name == "_last_checkpoint"):
            continue
        fs.pipe_file(f"{root}/_delta_log/{p.name}", p.read_bytes())
    return root


@pytest.fixture(scope="module")
def ict_log(tmp_path_factory):
    src = tmp_path_factory.mktemp("ict10k")
    subprocess.run([sys.executable, str(GEN_LOG), str(src), "--ict", "--commits", str(N_COMMITS), "--adds", "1"],
                   check=True, capture_output=True)
    _write_classic_checkpoint(src, N_COMMITS - 1)
    roots = {flag: _to_memory(src, flag) for flag in (True, False)}
    yield roots
    # fs.rm(recursive=True) is quadratic on the memory filesystem: drop the keys directly
    fs = fsspec.filesystem("memory")
    for r in roots.values():
        for key in [k for k in fs.store if k.startswith(r + "/")]:
            del fs.store[key]
        for d in [d for d in fs.pseudo_dirs if d == r or d.startswith(r + "/")]:
            fs.pseudo_dirs.remove(d)


class ReadCounter:
    """Counts file reads of one table: Storage.read_bytes / read_into / open and the fsspec
    filesystem's cat_file (which bulk ``fs.cat`` uses). Observation only: every call is
    passed through unchanged."""

    def __init__(self, table: DeltaTable, monkeypatch):
        self.paths: list[str] = []
        storage = table.storage
        for obj, name in ((storage, "read_bytes"), (storage, "read_into"), (storage, "open"), (storage.fs, "cat_file")):
            orig = getattr(obj, name)
            monkeypatch.setattr(obj, name, self._wrap(orig, name))
        self._depth = 0

    def _wrap(self, orig, name):
        def wrapper(path, *a, **kw):
            outer = self._depth == 0
            if outer:
                self.paths.append(f"{name}:{path}")
            self._depth += 1
            try:
                return orig(path, *a, **kw)
            finally:
                self._depth -= 1
        return wrapper

    def reset(self) -> None:
        self.paths.clear()

    @property
    def commit_reads(self) -> int:
        return sum(1 for p in self.paths if p.endswith(".json") and "/_delta_log/" in p)

    @property
    def total(self) -> int:
        return len(self.paths)


BOUND = int(2 * math.log2(N_COMMITS)) + 10


@pytest.mark.parametrize("v,delta", [(0, 0), (1, 500), (4999, 0), (4999, 999), (7777, 1), (N_COMMITS - 1, 0)])
def test_ten_thousand_commits_lookup_reads_log_n_files(ict_log, monkeypatch, v, delta):
    """With a checkpoint at the latest version (as writers keep one), a cold lookup reads
    the checkpoint's protocol/metadata and then O(log n) commit files."""
    t = DeltaTable(f"memory://{ict_log[True]}")
    counter = ReadCounter(t, monkeypatch)
    assert t.version_at(_ict(v) + delta) == v
    assert counter.total <= BOUND, counter.paths
    assert 1 <= counter.commit_reads <= BOUND


def test_ten_thousand_commits_lookup_edges(ict_log):
    t = DeltaTable(f"memory://{ict_log[True]}")
    with pytest.raises(TimestampOutOfRangeError):
        t.version_at(_ict(0) - 1)
    with pytest.raises(TimestampOutOfRangeError):
        t.version_at(_ict(N_COMMITS - 1) + 1)
    assert t.version_at(_ict(N_COMMITS - 1) + 10**9, allow_after_latest=True) == N_COMMITS - 1
    snap = t.snapshot(timestamp=_ict(1234) + 1)
    assert snap.version == 1234 and snap.timestamp == _ict(1234)


def test_ten_thousand_commits_lookup_without_checkpoint_after_snapshot(ict_log, monkeypatch):
    """No checkpoint: building the first snapshot must replay all commits (protocol and
    metadata are in commit 0), but once the table holds that snapshot, a lookup (what a
    sensor repeats) reads O(log n) commit files."""
    t = DeltaTable(f"memory://{ict_log[False]}")
    assert t.snapshot().version == N_COMMITS - 1
    counter = ReadCounter(t, monkeypatch)
    assert t.version_at(_ict(4321) + 3) == 4321
    assert counter.commit_reads <= BOUND, f"{counter.commit_reads} commit files read"
