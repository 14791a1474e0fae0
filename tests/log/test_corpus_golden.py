"""E1-E5: Delta Spark golden tables (delta-io/delta ``GoldenTables.scala``).

Each expectation is the one the upstream kernel-java / standalone tests assert on the
same table (README sections E1-E5): checkpoint selection, rows read through classic
and multi-part checkpoints, typed failures for broken logs, log-replay semantics
(latest protocol/metadata wins, deletion-vector file keys, delete and re-add,
per-commit actions, app transactions, URL-encoded paths, commitInfo fields) and the
live file sets of the ``snapshot-*`` tables.
"""
from __future__ import annotations

import os

import pytest

from airflow_provider_delta.log import (
    CorruptLogError, DeltaError, DeltaTable, InvalidArgumentError, TableNotFoundError,
    UnsupportedFeatureError, VersionNotFoundError,
)
from corpus_expected import (
    E2_ROWS, E5_FILE_COUNTS, column_values, commit_file, make_writable, set_mtime, sorted_rows,
)

GOLDEN = "delta-golden"


def _table(corpus, name: str) -> DeltaTable:
    return DeltaTable(str(corpus / GOLDEN / name))


# ----------------------------------------------------------------------------- E1


def test_checkpoint_table_latest_version_and_single_file(corpus):
    snap = _table(corpus, "checkpoint").snapshot()
    assert snap.version == 14
    files = snap.files()
    assert files.num_rows == 1
    # generator: commit i adds file "i" and removes "i-1", so only "15" survives at v14
    assert files.column("path").to_pylist() == ["15"]
    # the checkpoint at 10 is used; only commits 11..14 are replayed on top of it
    assert snap.segment.checkpoint_version == 10
    assert [c.version for c in snap.segment.commits] == [11, 12, 13, 14]


def test_checkpoint_table_every_version_has_one_file(corpus):
    t = _table(corpus, "checkpoint")
    for v in range(15):
        assert t.snapshot(version=v).files().column("path").to_pylist() == [str(v + 1)], v


# ----------------------------------------------------------------------------- E2


@pytest.mark.parametrize("name", sorted(E2_ROWS))
def test_checkpoint_tables_rows(corpus, name):
    version, ids = E2_ROWS[name]
    snap = DeltaTable(str(corpus / name)).snapshot()
    assert snap.version == version
    rows = snap.to_pyarrow()
    assert column_values(rows, "id") == sorted(ids)


def test_multi_part_checkpoint_uses_both_parts(corpus):
    snap = _table(corpus, "multi-part-checkpoint").snapshot()
    assert snap.segment.checkpoint_version == 1
    assert sorted(f.part for f in snap.segment.checkpoint_files) == [1, 2]
    assert {f.num_parts for f in snap.segment.checkpoint_files} == {2}


def test_corrupted_last_checkpoint_is_ignored(corpus):
    """_last_checkpoint is an empty file: the listing still finds checkpoint 10."""
    assert (corpus / GOLDEN / "corrupted-last-checkpoint-kernel" / "_delta_log" / "_last_checkpoint").stat().st_size == 0
    snap = _table(corpus, "corrupted-last-checkpoint-kernel").snapshot()
    assert snap.segment.checkpoint_version == 10
    assert snap.version == 11


def test_inserts_deletes_checkpoint_schema(corpus):
    snap = _table(corpus, "basic-with-inserts-deletes-checkpoint").snapshot()
    assert snap.schema.names == ["id"]
    assert str(snap.schema.field("id").type) == "int64"


def test_empty_parquet_files_table(corpus):
    rows = _table(corpus, "125-iterator-bug").snapshot().to_pyarrow()
    assert column_values(rows, "col1") == [1, 2, 3, 4, 5]


def test_inserts_updates_rows(corpus):
    rows = _table(corpus, "basic-with-inserts-updates").snapshot().to_pyarrow()
    expected = [{"id": i, "str": "N/A"} for i in range(50)] + [{"id": i, "str": f"val={i}"} for i in range(50, 100)]
    assert sorted_rows(rows, ["id", "str"]) == sorted_rows_of(expected)


def test_inserts_merge_rows(corpus):
    rows = _table(corpus, "basic-with-inserts-merge").snapshot().to_pyarrow()
    expected = ([{"id": i, "str": f"val={i}"} for i in range(10, 50)]
                + [{"id": i, "str": "N/A"} for i in range(50, 100)]
                + [{"id": i, "str": "EXT"} for i in range(100, 150)])
    assert sorted_rows(rows, ["id", "str"]) == sorted_rows_of(expected)


def sorted_rows_of(dicts):
    import pyarrow as pa
    return sorted_rows(pa.Table.from_pylist(dicts))


# ----------------------------------------------------------------------------- E3


def test_versions_not_contiguous(corpus):
    with pytest.raises(CorruptLogError) as ei:
        _table(corpus, "versions-not-contiguous").snapshot()
    assert "versions are not contiguous: ([0, 2])" in str(ei.value)


@pytest.mark.parametrize("name,what,version", [
    ("deltalog-state-reconstruction-without-protocol", "protocol", 0),
    ("deltalog-state-reconstruction-without-metadata", "metadata", 0),
    ("deltalog-state-reconstruction-from-checkpoint-missing-metadata", "metadata", 10),
    # kernel-java disables this one (broken generation); standalone expects protocol at 10
    ("deltalog-state-reconstruction-from-checkpoint-missing-protocol", "protocol", 10),
])
def test_missing_protocol_or_metadata(corpus, name, what, version):
    with pytest.raises(CorruptLogError) as ei:
        _table(corpus, name).snapshot()
    msg = str(ei.value)
    assert f"No {what} found" in msg
    assert f"version {version}" in msg


def test_invalid_protocol_version(corpus):
    with pytest.raises(UnsupportedFeatureError) as ei:
        _table(corpus, "deltalog-invalid-protocol-version").snapshot()
    assert "Unsupported Delta protocol reader version" in str(ei.value)
    assert "99" in str(ei.value)


def test_no_delta_log_folder(corpus):
    t = _table(corpus, "no-delta-log-folder")
    with pytest.raises(TableNotFoundError):
        t.snapshot()
    with pytest.raises(TableNotFoundError):
        t.latest_version()


@pytest.mark.parametrize("name", [
    "versions-not-contiguous", "deltalog-state-reconstruction-without-protocol",
    "deltalog-state-reconstruction-without-metadata",
    "deltalog-state-reconstruction-from-checkpoint-missing-metadata",
    "deltalog-state-reconstruction-from-checkpoint-missing-protocol",
    "deltalog-invalid-protocol-version", "no-delta-log-folder",
])
def test_negative_tables_fail_with_delta_error(corpus, name):
    """kernel-rs ``negative_test!``: opening the latest snapshot errors (and typed, here)."""
    with pytest.raises(DeltaError):
        _table(corpus, name).snapshot()


# ----------------------------------------------------------------------------- E4


def test_latest_metadata_and_protocol_win(corpus):
    snap = _table(corpus, "log-replay-latest-metadata-protocol").snapshot()
    assert set(snap.schema.names) == {"col1", "col2"}
    assert (snap.protocol.min_reader_version, snap.protocol.min_writer_version) == (3, 7)


def test_dv_key_cases_same_path_different_dvs(corpus):
    files = _table(corpus, "log-replay-dv-key-cases").snapshot().files()
    assert files.num_rows == 1
    dv = files.column("deletion_vector")[0].as_py()
    assert dv["cardinality"] == 3
    assert dv["storageType"] == "u"


def test_dv_key_cases_earlier_versions_differ(corpus):
    """The same path is re-added with new DVs by 3 DELETEs: each version keeps exactly one
    entry for that path, and its DV cardinality never decreases."""
    t = _table(corpus, "log-replay-dv-key-cases")
    latest = t.latest_version()
    cards = []
    for v in range(latest + 1):
        f = t.snapshot(version=v).files()
        paths = f.column("path").to_pylist()
        assert len(paths) == len(set(paths)), f"duplicate live path at v{v}"
        dvs = [d for d in f.column("deletion_vector").to_pylist() if d]
        cards.append(max((d["cardinality"] for d in dvs), default=0))
    assert cards == sorted(cards)
    assert cards[-1] == 3


def test_delete_and_re_add_same_file(corpus):
    files = _table(corpus, "delete-re-add-same-file-different-transactions").snapshot().files()
    got = dict(zip(files.column("path").to_pylist(), files.column("modification_time").to_pylist()))
    assert set(got) == {"foo", "bar"}
    assert got["foo"] == 1700000000000


def test_get_changes_actions_per_version(corpus):
    t = _table(corpus, "deltalog-getChanges")
    kinds = [[next(iter(a)) for a in t.read_commit(v)] for v in range(3)]
    assert kinds == [
        ["commitInfo", "protocol", "metaData", "add"],
        ["commitInfo", "cdc", "remove"],
        ["commitInfo", "protocol", "txn"],
    ]
    with pytest.raises(VersionNotFoundError):
        t.read_commit(3)
    with pytest.raises((VersionNotFoundError, InvalidArgumentError)):
        t.read_commit(-1)


def test_get_changes_transaction_version(corpus):
    snap = _table(corpus, "deltalog-getChanges").snapshot()
    assert snap.transaction_version("fakeAppId") == 3
    assert snap.transaction_version("nonExistentAppId") is None


def test_get_changes_after_data_loss(copy_table):
    """After 0.json and 1.json are deleted only commit 2 can be read; 0 and 1 are typed errors."""
    root = copy_table(f"{GOLDEN}/deltalog-getChanges")
    make_writable(root)
    os.remove(commit_file(root, 0))
    os.remove(commit_file(root, 1))
    t = DeltaTable(str(root))
    assert [next(iter(a)) for a in t.read_commit(2)] == ["commitInfo", "protocol", "txn"]
    for v in (0, 1):
        with pytest.raises(VersionNotFoundError) as ei:
            t.read_commit(v)
        assert ei.value.latest == 2
    # no checkpoint and commit 0 gone: no version can be rebuilt
    with pytest.raises(VersionNotFoundError):
        t.snapshot()


def test_special_characters_add_then_remove(corpus):
    assert _table(corpus, "log-replay-special-characters-a").snapshot().files().num_rows == 0


def test_special_characters_path_is_decoded(corpus):
    t = _table(corpus, "log-replay-special-characters-b")
    assert t.snapshot().files().column("path").to_pylist() == ["special p@#h"]
    raw = [a["add"]["path"] for v in range(t.latest_version() + 1) for a in t.read_commit(v) if "add" in a]
    assert "special%20p@%23h" in raw


def test_commit_info_fields(copy_table):
    root = copy_table(f"{GOLDEN}/deltalog-commit-info")
    make_writable(root)
    mtime = 1540415658000 + 12345
    set_mtime(commit_file(root, 0), mtime)
    t = DeltaTable(str(root))
    (entry,) = t.history()
    assert entry["version"] == 0
    # history's timestamp is the commit timestamp (file mtime without ICT), as in Delta
    # Spark's DESCRIBE HISTORY; the commitInfo's own timestamp stays in the commit itself.
    assert entry["timestamp"] == mtime
    (ci,) = [a["commitInfo"] for a in t.read_commit(0) if "commitInfo" in a]
    assert ci["timestamp"] == 1540415658000
    expected = {
        "userId": "user_0", "userName": "username_0", "operation": "WRITE",
        "operationParameters": {"test": "test"},
        "job": {"jobId": "job_id_0", "jobName": "job_name_0", "runId": "run_id_0",
                "jobOwnerId": "job_owner_0", "triggerType": "trigger_type_0"},
        "notebook": {"notebookId": "notebook_id_0"}, "clusterId": "cluster_id_0",
        "readVersion": -1, "isolationLevel": "default", "isBlindAppend": True,
        "operationMetrics": {"test": "test"}, "userMetadata": "foo",
    }
    for k, v in expected.items():
        assert entry[k] == v, k


def test_snapshot_vacuumed_commit_info_versions(corpus):
    hist = _table(corpus, "snapshot-vacuumed").history()
    assert [h["version"] for h in hist] == [5, 4, 3, 2, 1, 0]
    for h in hist:
        if h["version"] > 0:
            assert h["readVersion"] == h["version"] - 1


# ----------------------------------------------------------------------------- E5


@pytest.mark.parametrize("name", sorted(E5_FILE_COUNTS))
def test_snapshot_file_counts(corpus, name):
    version, count = E5_FILE_COUNTS[name]
    snap = _table(corpus, name).snapshot()
    assert snap.version == version
    assert snap.files().num_rows == count
    assert snap.num_files() == count


def test_snapshot_vacuumed_every_remaining_parquet_is_active(corpus):
    root = corpus / GOLDEN / "snapshot-vacuumed"
    on_disk = {p.name for p in root.iterdir() if p.suffix == ".parquet"}
    assert set(_table(corpus, "snapshot-vacuumed").snapshot().files().column("path").to_pylist()) == on_disk


def test_snapshot_tables_live_files_exist(corpus):
    """Every live file of every snapshot-* table exists on disk (the writes it lists)."""
    for name in E5_FILE_COUNTS:
        root = corpus / GOLDEN / name
        for p in _table(corpus, name).snapshot().files().column("path").to_pylist():
            assert (root / p).is_file(), (name, p)
