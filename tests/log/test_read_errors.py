"""Bad input on the read path: typed errors, helpful messages, and nothing changed on disk.

Each case breaks a private copy of a corpus table in one way (missing table, version
out of range, corrupt JSON, damaged or stale ``_last_checkpoint``, a multi-part
checkpoint missing a part, a gap after a checkpoint, a damaged checkpoint file, a
missing data file) and checks that the reader either recovers the way Delta Spark does
(the ``_last_checkpoint`` hint is only a hint) or raises the documented error type with
a message that names what is wrong. Reads must never modify the table.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from airflow_provider_delta.log import (
    CorruptLogError, DeltaError, DeltaTable, InvalidArgumentError, TableNotFoundError,
    VersionNotFoundError,
)
from corpus_expected import column_values, commit_file, dir_state, make_writable


def _all_reads(t: DeltaTable) -> None:
    """Everything a reader may do with a table; errors propagate."""
    snap = t.snapshot()
    snap.files()
    snap.tombstones()
    snap.transactions()
    t.history(limit=2)


@pytest.fixture
def checkpoint_table(copy_table) -> Path:
    """delta-golden/checkpoint: commits 0..14, checkpoint at 10, file "i+1" live at version i."""
    root = copy_table("delta-golden/checkpoint")
    make_writable(root)
    return root


# ------------------------------------------------------------------ table not found


def test_nonexistent_path(tmp_path):
    t = DeltaTable(str(tmp_path / "does-not-exist"))
    for call in (t.snapshot, t.latest_version, t.history, lambda: t.version_at(0),
                 lambda: t.snapshot(version=0)):
        with pytest.raises(TableNotFoundError) as ei:
            call()
        assert "does-not-exist" in str(ei.value)
    assert not (tmp_path / "does-not-exist").exists()


def test_empty_delta_log_directory(tmp_path):
    (tmp_path / "t" / "_delta_log").mkdir(parents=True)
    before = dir_state(tmp_path / "t")
    with pytest.raises(TableNotFoundError):
        DeltaTable(str(tmp_path / "t")).snapshot()
    assert dir_state(tmp_path / "t") == before


def test_parquet_directory_without_log(corpus):
    with pytest.raises(TableNotFoundError) as ei:
        DeltaTable(str(corpus / "delta-golden" / "no-delta-log-folder")).snapshot()
    assert "_delta_log" in str(ei.value)


def test_empty_uri_is_invalid_argument():
    with pytest.raises(InvalidArgumentError):
        DeltaTable("")


# -------------------------------------------------------------- version out of range


@pytest.mark.parametrize("version", [15, 100, -1])
def test_version_out_of_range(checkpoint_table, version):
    before = dir_state(checkpoint_table)
    t = DeltaTable(str(checkpoint_table))
    with pytest.raises(VersionNotFoundError) as ei:
        t.snapshot(version=version)
    e = ei.value
    assert (e.version, e.earliest, e.latest) == (version, 0, 14)
    msg = str(e)
    assert str(version) in msg and " 0 " in f" {msg} ".replace(",", " ") and "14" in msg
    assert dir_state(checkpoint_table) == before


def test_version_before_cleaned_up_commits(checkpoint_table):
    """Commits 0..9 deleted: versions 10..14 remain readable through the checkpoint."""
    for v in range(10):
        os.remove(commit_file(checkpoint_table, v))
    t = DeltaTable(str(checkpoint_table))
    assert t.snapshot(version=10).files().column("path").to_pylist() == ["11"]
    with pytest.raises(VersionNotFoundError) as ei:
        t.snapshot(version=9)
    assert (ei.value.earliest, ei.value.latest) == (10, 14)
    assert "10" in str(ei.value) and "14" in str(ei.value)


def test_read_commit_out_of_range(checkpoint_table):
    t = DeltaTable(str(checkpoint_table))
    with pytest.raises(VersionNotFoundError) as ei:
        t.read_commit(15)
    assert ei.value.latest == 14


def test_version_and_timestamp_together_is_invalid(checkpoint_table):
    with pytest.raises(InvalidArgumentError):
        DeltaTable(str(checkpoint_table)).snapshot(version=1, timestamp=0)


@pytest.mark.parametrize("bad", ["yesterday-ish", object(), True])
def test_unparseable_timestamp_is_invalid(checkpoint_table, bad):
    with pytest.raises(InvalidArgumentError):
        DeltaTable(str(checkpoint_table)).version_at(bad)


# ---------------------------------------------------------------------- corrupt JSON


def _corrupt_line(path: Path, line_no: int, replacement: str) -> None:
    lines = path.read_text().splitlines()
    lines[line_no - 1] = replacement
    path.write_text("\n".join(lines) + "\n")


@pytest.mark.parametrize("kind,line_of", [
    ("add", lambda lines: next(i for i, l in enumerate(lines, 1) if l.startswith('{"add"'))),
    ("remove", lambda lines: next(i for i, l in enumerate(lines, 1) if l.startswith('{"remove"'))),
    ("commitInfo", lambda lines: next(i for i, l in enumerate(lines, 1) if l.startswith('{"commitInfo"'))),
])
def test_corrupt_json_line_names_file_and_line(checkpoint_table, kind, line_of):
    path = commit_file(checkpoint_table, 12)
    n = line_of(path.read_text().splitlines())
    original = path.read_text().splitlines()[n - 1]
    _corrupt_line(path, n, original[: len(original) // 2])  # a truncated action
    before = dir_state(checkpoint_table)
    with pytest.raises(CorruptLogError) as ei:
        _all_reads(DeltaTable(str(checkpoint_table)))
    e = ei.value
    assert e.line == n
    assert e.path is not None and e.path.endswith(path.name)
    assert path.name in str(e) and f"line {n}" in str(e)
    assert dir_state(checkpoint_table) == before


def test_json_line_that_is_not_an_object(checkpoint_table):
    path = commit_file(checkpoint_table, 13)
    with open(path, "a") as f:
        f.write("[1, 2, 3]\n")
    n = len(path.read_text().splitlines())
    with pytest.raises(CorruptLogError) as ei:
        DeltaTable(str(checkpoint_table)).snapshot().files()
    assert ei.value.line == n and path.name in str(ei.value)


def test_corrupt_json_in_read_commit(checkpoint_table):
    path = commit_file(checkpoint_table, 3)
    _corrupt_line(path, 1, "{not json")
    with pytest.raises(CorruptLogError) as ei:
        DeltaTable(str(checkpoint_table)).read_commit(3)
    assert ei.value.line == 1 and path.name in str(ei.value)


def test_corrupt_commit_before_checkpoint_is_not_read(checkpoint_table):
    """Commits covered by the checkpoint are never parsed for the latest snapshot."""
    _corrupt_line(commit_file(checkpoint_table, 5), 1, "{garbage")
    snap = DeltaTable(str(checkpoint_table)).snapshot()
    assert snap.files().column("path").to_pylist() == ["15"]
    with pytest.raises(CorruptLogError):
        DeltaTable(str(checkpoint_table)).snapshot(version=6).files()


# ------------------------------------------------------------ _last_checkpoint hints


@pytest.mark.parametrize("content", [b"", b"{not json", b'{"version": "ten"}', b"[]", b"\x00\xff\xfe",
                                     b'{"version": 99, "size": 3}'])
def test_bad_last_checkpoint_falls_back_to_listing(checkpoint_table, content):
    (checkpoint_table / "_delta_log" / "_last_checkpoint").write_bytes(content)
    before = dir_state(checkpoint_table)
    snap = DeltaTable(str(checkpoint_table)).snapshot()
    assert snap.version == 14
    assert snap.segment.checkpoint_version == 10
    assert snap.files().column("path").to_pylist() == ["15"]
    assert dir_state(checkpoint_table) == before


def test_last_checkpoint_names_a_deleted_checkpoint(checkpoint_table):
    """kernel-java 'stale _last_checkpoint after checkpoint cleanup': _last_checkpoint says
    10 but the checkpoint is gone: replay commits 0..14."""
    os.remove(checkpoint_table / "_delta_log" / f"{10:020d}.checkpoint.parquet")
    assert json.loads((checkpoint_table / "_delta_log" / "_last_checkpoint").read_text())["version"] == 10
    snap = DeltaTable(str(checkpoint_table)).snapshot()
    assert snap.segment.checkpoint_version is None
    assert len(snap.segment.commits) == 15
    assert snap.files().column("path").to_pylist() == ["15"]


def test_stale_last_checkpoint_for_golden_kernel_table(copy_table):
    root = copy_table("delta-golden/corrupted-last-checkpoint-kernel")
    make_writable(root)
    os.remove(root / "_delta_log" / f"{10:020d}.checkpoint.parquet")
    (root / "_delta_log" / "_last_checkpoint").write_text('{"version":10,"size":3}')
    rows = DeltaTable(str(root)).snapshot().to_pyarrow()
    assert column_values(rows, "id") == list(range(100))


# ------------------------------------------------------------ multi-part checkpoints


def test_multi_part_checkpoint_missing_a_part_is_ignored(copy_table):
    """Part 2 of 2 is gone: the incomplete checkpoint is skipped, commits 0..1 replayed."""
    root = copy_table("delta-golden/multi-part-checkpoint")
    make_writable(root)
    os.remove(root / "_delta_log" / f"{1:020d}.checkpoint.{2:010d}.{2:010d}.parquet")
    snap = DeltaTable(str(root)).snapshot()
    assert snap.segment.checkpoint_version is None
    assert [c.version for c in snap.segment.commits] == [0, 1]
    assert column_values(snap.to_pyarrow(), "id") == sorted([0] + list(range(30)))


def test_multi_part_checkpoint_missing_part_and_commits_is_an_error(copy_table):
    """Without the incomplete checkpoint and without commit 0 nothing can be rebuilt."""
    root = copy_table("delta-golden/multi-part-checkpoint")
    make_writable(root)
    os.remove(root / "_delta_log" / f"{1:020d}.checkpoint.{1:010d}.{2:010d}.parquet")
    os.remove(commit_file(root, 0))
    with pytest.raises(VersionNotFoundError):
        DeltaTable(str(root)).snapshot()


def test_multi_part_missing_part_falls_back_to_older_checkpoint(copy_table):
    """parquet_row_group_skipping has only a 5-part checkpoint at 1: drop one part and the
    reader replays from commit 0 instead, with the same answer."""
    root = copy_table("delta-kernel-rs/parquet_row_group_skipping")
    make_writable(root)
    full = DeltaTable(str(root)).snapshot()
    expected_txns = full.transactions(include_expired=True)
    expected_files = sorted(full.files().column("path").to_pylist())
    os.remove(root / "_delta_log" / f"{1:020d}.checkpoint.{3:010d}.{5:010d}.parquet")
    snap = DeltaTable(str(root)).snapshot()
    assert snap.segment.checkpoint_version is None
    assert snap.transactions(include_expired=True) == expected_txns
    assert sorted(snap.files().column("path").to_pylist()) == expected_files


# ------------------------------------------------------------------ gaps and damage


def test_gap_after_checkpoint(copy_table):
    root = copy_table("delta-rs/data_err_logs/table_c")
    make_writable(root)
    before = dir_state(root)
    t = DeltaTable(str(root))
    with pytest.raises(CorruptLogError) as ei:
        t.snapshot()
    assert "12" in str(ei.value)
    # versions below the gap are still readable
    assert t.snapshot(version=11).version == 11
    assert dir_state(root) == before


def test_gap_without_checkpoint(checkpoint_table):
    os.remove(checkpoint_table / "_delta_log" / f"{10:020d}.checkpoint.parquet")
    os.remove(commit_file(checkpoint_table, 4))
    with pytest.raises(CorruptLogError) as ei:
        DeltaTable(str(checkpoint_table)).snapshot()
    assert "not contiguous" in str(ei.value)


def test_damaged_checkpoint_file(checkpoint_table):
    cp = checkpoint_table / "_delta_log" / f"{10:020d}.checkpoint.parquet"
    cp.write_bytes(b"PAR1 this is not a parquet file PAR1")
    before = dir_state(checkpoint_table)
    with pytest.raises(CorruptLogError) as ei:
        DeltaTable(str(checkpoint_table)).snapshot().files()
    assert cp.name in str(ei.value)
    assert dir_state(checkpoint_table) == before


def test_missing_data_file_is_a_typed_error(copy_table):
    """A live file that is gone (deleted by hand, or vacuumed too eagerly) is a broken
    table: reading rows must say which file, as a DeltaError (Spark: FileNotFound)."""
    root = copy_table("delta-golden/snapshot-data1")
    make_writable(root)
    t = DeltaTable(str(root))
    victim = t.snapshot().files().column("path")[0].as_py()
    os.remove(root / victim)
    from airflow_provider_delta.log import DataFileNotFoundError
    with pytest.raises(DataFileNotFoundError) as ei:
        t.snapshot().to_pyarrow()
    assert isinstance(ei.value, DeltaError)
    assert victim in str(ei.value)
    # the file list itself does not need the data files
    assert t.snapshot().files().num_rows == 4



# ------------------------------------------------------------ crash leftovers


def test_crash_leftovers_in_the_log_are_ignored(checkpoint_table):
    """Writers that crash leave temporary files behind (ours: ``.<name>.<uuid>.tmp``;
    delta-rs: ``_commit_<uuid>.json.tmp``; Spark: ``.<name>.crc`` and ``.tmp`` dirs). None of
    them is a commit: the table reads exactly as before."""
    expected = DeltaTable(str(checkpoint_table)).snapshot()
    log = checkpoint_table / "_delta_log"
    junk = [f".{15:020d}.json.3f2a9c0e.tmp", "_commit_9b0e8f0e-1c1e-4a53-9a7e-2f1d1d8c6c11.json.tmp",
            f"{15:020d}.json.tmp", f".{14:020d}.json.crc", f"{16:020d}.checkpoint.parquet.tmp",
            f"{15:020d}.json~", "00000000000000015.json"]
    for name in junk:
        (log / name).write_text('{"add":{"path":"junk","size":1,"modificationTime":1,"dataChange":true}}\n')
    (log / ".tmp").mkdir()
    (log / ".tmp" / f"{15:020d}.json").write_text("{}\n")
    t = DeltaTable(str(checkpoint_table))
    assert t.latest_version() == 14
    snap = t.snapshot()
    assert snap.version == 14
    assert snap.files().column("path").to_pylist() == expected.files().column("path").to_pylist()
    assert [h["version"] for h in t.history(limit=2)] == [14, 13]


def test_listing_while_a_writer_churns_temp_files(checkpoint_table):
    """Writers create and rename/delete temporary files in _delta_log all the time. A reader
    listing the directory meanwhile must still see the table (real threads, real files;
    stops at the first wrong answer, else after 3 seconds)."""
    import threading
    import time

    log = checkpoint_table / "_delta_log"
    stop = threading.Event()

    def churn(k: int):
        i = 0
        while not stop.is_set():
            p = log / f"_commit_{k}_{i % 50}.json.tmp"
            p.write_bytes(b"x")
            p.unlink()
            i += 1

    threads = [threading.Thread(target=churn, args=(k,)) for k in range(2)]
    for th in threads:
        th.start()
    failures: list[str] = []
    try:
        deadline = time.monotonic() + 3
        while time.monotonic() < deadline and not failures:
            try:
                v = DeltaTable(str(checkpoint_table)).latest_version()
                if v != 14:
                    failures.append(f"latest_version {v}")
            except DeltaError as e:
                failures.append(f"{type(e).__name__}: {e}")
    finally:
        stop.set()
        for th in threads:
            th.join()
    assert not failures, failures[0]


def test_checkpoint_deleted_between_snapshot_and_files(checkpoint_table):
    """File state is loaded lazily, so a metadata cleanup may delete the checkpoint after
    snapshot() chose it. The reader plans the version again (here from commits 0..14)."""
    expected = DeltaTable(str(checkpoint_table)).snapshot().files().column("path").to_pylist()
    snap = DeltaTable(str(checkpoint_table)).snapshot()
    assert snap.segment.checkpoint_version == 10
    os.remove(checkpoint_table / "_delta_log" / f"{10:020d}.checkpoint.parquet")
    assert snap.files().column("path").to_pylist() == expected == ["15"]
    assert snap.segment.checkpoint_version is None


def test_checkpoint_and_commits_gone_is_a_typed_error(checkpoint_table):
    """When nothing else can rebuild the version, the answer is a DeltaError, not an OSError."""
    snap = DeltaTable(str(checkpoint_table)).snapshot()
    os.remove(checkpoint_table / "_delta_log" / f"{10:020d}.checkpoint.parquet")
    os.remove(checkpoint_table / "_delta_log" / f"{0:020d}.json")
    with pytest.raises(DeltaError):
        snap.files()


def test_commit_deleted_after_snapshot_is_already_read(checkpoint_table):
    """Commits of the segment are read when the snapshot is built: deleting one afterwards
    does not change the snapshot's answer."""
    snap = DeltaTable(str(checkpoint_table)).snapshot(version=12)
    os.remove(commit_file(checkpoint_table, 11))
    assert snap.files().column("path").to_pylist() == ["13"]


# ------------------------------------------------- valid JSON, malformed actions

_SCHEMA = json.dumps({"type": "struct", "fields": [{"name": "a", "type": "long", "nullable": True, "metadata": {}}]})
_P = {"protocol": {"minReaderVersion": 1, "minWriterVersion": 2}}
_M = {"metaData": {"id": "x", "format": {"provider": "parquet", "options": {}}, "schemaString": _SCHEMA,
                   "partitionColumns": [], "configuration": {}}}
_A = {"add": {"path": "f1.parquet", "partitionValues": {}, "size": 1, "modificationTime": 1, "dataChange": True}}

MALFORMED = {
    "add-size-not-a-number": ([_P, _M, {"add": {**_A["add"], "size": "big"}}], "pyarrow ArrowInvalid"),
    "add-not-an-object": ([_P, _M, {"add": "nope"}], "AttributeError"),
    # an add without a path is no action, as for Delta Spark (register row C12f,
    # tests/log/test_line_unwrap_rules.py::test_a_pathless_file_action_alone_on_its_line_is_no_action)
    "remove-timestamp-not-a-number": ([_P, _M, _A, {"remove": {"path": "f1.parquet", "deletionTimestamp": "yesterday",
                                                               "dataChange": True}}], "pyarrow ArrowInvalid"),
    "partition-values-not-an-object": ([_P, _M, {"add": {**_A["add"], "partitionValues": "x"}}], "AttributeError"),
    "txn-without-version": ([_P, _M, _A, {"txn": {"appId": "a"}}], "KeyError"),
    "domain-without-name": ([_P, _M, _A, {"domainMetadata": {"configuration": "{}"}}], "KeyError"),
    "reader-version-not-a-number": ([{"protocol": {"minReaderVersion": "x", "minWriterVersion": 2}}, _M, _A],
                                    "ValueError"),
    "protocol-not-an-object": ([{"protocol": [1, 2]}, _M, _A], "AttributeError"),
    "schema-string-not-json": ([_P, {"metaData": {**_M["metaData"], "schemaString": "not json"}}, _A], ""),
    "metadata-null": ([_P, {"metaData": None}, _A], ""),
}


def _malformed_cases():
    for name, (actions, raw) in MALFORMED.items():
        yield pytest.param(actions, id=name)


@pytest.mark.parametrize("actions", list(_malformed_cases()))
def test_malformed_action_is_a_typed_error(tmp_path, actions):
    """Lines that parse as JSON but are not valid actions make the log corrupt: every read
    that touches them fails with a DeltaError (CorruptLogError), never a raw Python or
    Arrow exception, and the table is left as it was."""
    root = tmp_path / "t"
    (root / "_delta_log").mkdir(parents=True)
    commit_file(root, 0).write_text("\n".join(json.dumps(a, separators=(",", ":")) for a in actions) + "\n")
    before = dir_state(root)
    with pytest.raises(DeltaError):
        t = DeltaTable(str(root))
        snap = t.snapshot()
        snap.schema  # noqa: B018 - parses schemaString
        snap.files()
        snap.transactions()
        snap.domain_metadata()
        t.history()
    assert dir_state(root) == before




@pytest.mark.parametrize("call", [
    pytest.param(lambda t: t.snapshot(version="abc"), id="version-abc"),
    pytest.param(lambda t: t.snapshot(version=1.5), id="version-1.5"),
    pytest.param(lambda t: t.snapshot(version=[1]), id="version-list"),
    pytest.param(lambda t: t.read_commit("x"), id="read_commit-x"),
    pytest.param(lambda t: t.history(limit="x"), id="history-limit-x"),
])
def test_bad_arguments_are_invalid_argument_errors(checkpoint_table, call):
    with pytest.raises(InvalidArgumentError):
        call(DeltaTable(str(checkpoint_table)))
