"""E7, E8, E11, E12, E13: delta-kernel-rs test tables.

V2 checkpoints (UUID-named, JSON or parquet manifests, sidecars, classic-named
compat checkpoints), catalog-managed tables (not supported yet: a typed error),
change-data-feed tables (their table state here; their change rows here and in
``test_change_feed.py``), log compaction files (must not change any answer) and app
transactions (with and without retention). Expected values are the upstream
tests' (README sections E7-E13).
"""
from __future__ import annotations

from datetime import date

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError, UnsupportedFeatureError, VersionNotFoundError
from corpus_expected import (
    E7_ROWS, E7_STRUCT_STATS_ONLY, column_values, make_writable, sorted_rows,
)

KRS = "delta-kernel-rs"


def _table(corpus, name: str) -> DeltaTable:
    return DeltaTable(str(corpus / KRS / name))


def _file_state(snap) -> list[dict]:
    """Live files, order-free, with the columns a replay must agree on."""
    return sorted_rows(snap.files(), ["path", "partition_values", "size", "deletion_vector"])


def _strip_checkpoints(root) -> None:
    """Delete every checkpoint, sidecar and _last_checkpoint: only the commits remain."""
    log = root / "_delta_log"
    for p in list(log.iterdir()):
        if ".checkpoint." in p.name or p.name == "_last_checkpoint":
            p.unlink()
    sidecars = log / "_sidecars"
    if sidecars.is_dir():
        for p in sidecars.iterdir():
            p.unlink()


# ----------------------------------------------------------------------------- E7


@pytest.mark.parametrize("name", sorted(E7_ROWS))
def test_v2_checkpoint_rows(corpus, name):
    rows = _table(corpus, name).snapshot().to_pyarrow()
    assert column_values(rows, "id") == sorted(E7_ROWS[name])


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_v2_checkpoint_with_sidecars_picks_latest_manifest(corpus, fmt):
    name = f"v2-checkpoints-{fmt}-with-sidecars"
    snap = _table(corpus, name).snapshot()
    assert snap.version == 6
    assert snap.segment.checkpoint_version == 6
    (cp,) = snap.segment.checkpoint_files
    assert cp.uuid is not None and cp.fmt == fmt
    assert snap.segment.commits == []
    sidecars = [p for p in (corpus / KRS / name / "_delta_log" / "_sidecars").iterdir()
                if p.suffix == ".parquet" and not p.name.startswith(".")]
    assert len(sidecars) == 12


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_v2_checkpoint_without_sidecars_and_without_last_checkpoint(corpus, fmt):
    name = f"v2-checkpoints-{fmt}-without-sidecars"
    assert not (corpus / KRS / name / "_delta_log" / "_last_checkpoint").exists()
    snap = _table(corpus, name).snapshot()
    assert snap.segment.checkpoint_version == 2
    assert snap.segment.checkpoint_files[0].uuid is not None


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_v2_compat_classic_named_checkpoint(corpus, fmt):
    snap = _table(corpus, f"v2-classic-checkpoint-{fmt}").snapshot()
    assert snap.segment.checkpoint_version == 1
    (cp,) = snap.segment.checkpoint_files
    assert cp.name == "00000000000000000001.checkpoint.parquet"


@pytest.mark.parametrize("fmt", ["json", "parquet"])
def test_v2_checkpoint_named_by_last_checkpoint(corpus, fmt):
    snap = _table(corpus, f"v2-checkpoints-{fmt}-with-last-checkpoint").snapshot()
    assert snap.version == 0 and snap.segment.checkpoint_version == 0
    assert snap.segment.checkpoint_files[0].uuid is not None


@pytest.mark.parametrize("name", sorted(E7_ROWS) + E7_STRUCT_STATS_ONLY)
def test_checkpoint_and_commit_replay_agree_at_every_version(copy_table, corpus, name):
    """Reading through the (v2, multi-part, sidecar) checkpoints gives the same files as
    replaying the JSON commits alone, at every version."""
    with_cp = _table(corpus, name)
    root = copy_table(f"{KRS}/{name}")
    make_writable(root)
    _strip_checkpoints(root)
    commits_only = DeltaTable(str(root))
    latest = with_cp.latest_version()
    assert commits_only.latest_version() == latest
    for v in range(latest + 1):
        a, b = with_cp.snapshot(version=v), commits_only.snapshot(version=v)
        assert _file_state(a) == _file_state(b), v
        assert a.metadata == b.metadata and a.protocol == b.protocol
        assert a.transactions(include_expired=True) == b.transactions(include_expired=True)
    assert with_cp.snapshot().segment.checkpoint_version is not None
    assert commits_only.snapshot().segment.checkpoint_version is None


@pytest.mark.parametrize("name", E7_STRUCT_STATS_ONLY)
def test_struct_stats_only_checkpoints(corpus, name):
    snap = _table(corpus, name).snapshot()
    assert snap.version == 5 and snap.segment.checkpoint_version == 5
    rows = snap.to_pyarrow()
    assert column_values(rows, "id") == [1, 2, 3, 4, 5]
    assert sorted(rows.column("value").to_pylist()) == [f"value_{i}" for i in range(1, 6)]


def test_missing_sidecar_is_a_typed_error(copy_table):
    from airflow_provider_delta.log import CorruptLogError
    root = copy_table(f"{KRS}/v2-checkpoints-parquet-with-sidecars")
    make_writable(root)
    victim = next(p for p in (root / "_delta_log" / "_sidecars").iterdir() if p.name.startswith(f"{6:020d}."))
    victim.unlink()
    with pytest.raises(CorruptLogError) as ei:
        DeltaTable(str(root)).snapshot().files()
    assert victim.name in str(ei.value)


# ----------------------------------------------------------------------------- E8


def test_catalog_managed_is_refused_with_a_clear_error(corpus):
    """catalog_managed_0: v0 is published, v1 and v2 exist only in _staged_commits and come
    from the catalog. Reading staged commits through a catalog client is FUTURE WORK
    (README E8: the expected answer is version 2, 200 rows of (part1, col1), ICTs
    1749830855993 / 1749830871085 / 1749830881799). Until then the reader must refuse
    the table, naming the reader feature, instead of silently showing version 0."""
    t = _table(corpus, "catalog_managed_0")
    with pytest.raises(UnsupportedFeatureError) as ei:
        t.snapshot()
    assert ei.value.feature == "catalogManaged"
    assert "catalogManaged" in str(ei.value)
    with pytest.raises(UnsupportedFeatureError):
        t.snapshot(version=0)


def test_catalog_managed_history_and_timestamps_are_refused_too(corpus):
    """Without the catalog, history and timestamp lookups would silently miss the staged
    versions 1 and 2 (README: v1Ts -> version 1). They must refuse like snapshot() does."""
    t = _table(corpus, "catalog_managed_0")
    with pytest.raises(UnsupportedFeatureError):
        t.history()
    with pytest.raises(UnsupportedFeatureError):
        t.version_at(1749830871085)  # v1's ICT: the answer would be 1 with the catalog


# ---------------------------------------------------------------------------- E11
# Change Data Feed reads (table_changes, _change_type rows) are not a feature of this
# project. What *is* checked: the table state of every CDF table at every version,
# which follows from the README's change lists, and that cdc actions alone never
# change the table state.

_CDF_V0 = [(1, "Steve", date(2023, 12, 22)), (2, "Bob", date(2023, 12, 23)), (3, "Dave", date(2023, 12, 23)),
           (4, "Kate", date(2023, 12, 23)), (5, "Emily", date(2023, 12, 24)), (6, "Carl", date(2023, 12, 24)),
           (7, "Dennis", date(2023, 12, 24)), (8, "Claire", date(2023, 12, 25)), (9, "Ada", date(2023, 12, 25)),
           (10, "Borb", date(2023, 12, 25))]


def _cdf_state(version: int) -> list[tuple]:
    rows = {r[0]: r for r in _CDF_V0}
    if version >= 1:
        for i in (2, 3, 4):
            rows[i] = (i, rows[i][1], date(2023, 12, 22))
    if version >= 2:
        for i in (5, 6, 7):
            rows[i] = (i, rows[i][1], date(2023, 12, 29))
    if version >= 3:
        del rows[7]
    return sorted(rows.values())


def _tuples(table: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in table.to_pylist())


@pytest.mark.parametrize("name", [f"{KRS}/cdf-table", "delta-rs/cdf-table"])
def test_cdf_table_state_at_every_version(corpus, name):
    t = DeltaTable(str(corpus / name))
    assert t.latest_version() == 3
    for v in range(4):
        rows = t.snapshot(version=v).to_pyarrow()
        assert _tuples(rows, ["id", "name", "birthday"]) == _cdf_state(v), v


def test_cdf_simple_state(corpus):
    """v0 inserts 0..9, v1 deletes them; v2 is a hand-made commit of cdc actions only,
    which (carrying no add/remove) leaves the table empty."""
    t = _table(corpus, "cdf-table-simple")
    assert column_values(t.snapshot(version=0).to_pyarrow(), "id") == list(range(10))
    assert t.snapshot(version=1).to_pyarrow().num_rows == 0
    assert t.snapshot(version=2).to_pyarrow().num_rows == 0
    assert [next(iter(a)) for a in t.read_commit(2)] == ["commitInfo", "cdc", "cdc"]


def test_cdf_update_ops_cdc_only_commits_leave_rows(corpus):
    t = _table(corpus, "cdf-table-update-ops")
    for v in range(3):
        assert column_values(t.snapshot(version=v).to_pyarrow(), "id") == list(range(10)), v


def test_cdf_partitioned_state(corpus):
    t = _table(corpus, "cdf-table-partitioned")
    cols = ["id", "text", "part"]
    v0 = [(i, "old", i % 2) for i in range(6)]
    assert _tuples(t.snapshot(version=0).to_pyarrow(), cols) == v0
    v1 = [r for r in v0 if r[0] != 3]
    v1 = [(1, "new", 1) if r[0] == 1 else r for r in v1]
    assert _tuples(t.snapshot(version=1).to_pyarrow(), cols) == sorted(v1)
    v2 = [r for r in v1 if r[0] not in (0, 2, 4)]
    assert _tuples(t.snapshot(version=2).to_pyarrow(), cols) == sorted(v2)


def test_cdf_data_change_false_commit_keeps_rows(corpus):
    """v1 is an OPTIMIZE (dataChange=false): new files, same rows."""
    t = _table(corpus, "cdf-table-data-change")
    v0, v1 = t.snapshot(version=0), t.snapshot(version=1)
    assert set(v0.files().column("path").to_pylist()).isdisjoint(v1.files().column("path").to_pylist())
    assert v1.files().column("data_change").to_pylist() == [False]
    assert column_values(v0.to_pyarrow(), "id") == column_values(v1.to_pyarrow(), "id") == list(range(10))


def test_cdf_non_partitioned_latest_ids(corpus):
    """v0 inserts 1..10, v1/v2 update, v3 deletes 7, v4 inserts (1 Alex), (2 Alan)."""
    rows = _table(corpus, "cdf-table-non-partitioned").snapshot().to_pyarrow()
    assert column_values(rows, "id") == sorted([i for i in range(1, 11) if i != 7] + [1, 2])
    assert {("Alex", 1), ("Alan", 2)} <= {(r["name"], r["id"]) for r in rows.to_pylist()}
    assert "Dennis" not in rows.column("name").to_pylist()


def test_cdf_reads(corpus):
    """Formerly skipped: cdf-table-simple's version ranges and their errors (kernel's simple_cdf_version_ranges)."""
    t = DeltaTable(str(corpus / "delta-kernel-rs/cdf-table-simple"))
    ins0 = [(i, "insert", 0) for i in range(10)]
    del1 = [(i, "delete", 1) for i in range(10)]
    ins2 = [(i, "insert", 2) for i in range(20, 25)]
    cols = ["id", "_change_type", "_commit_version"]
    assert _change_rows(t.changes(0, 0), cols) == ins0
    assert _change_rows(t.changes(1, 1), cols) == del1
    assert _change_rows(t.changes(2, 2), cols) == ins2
    assert _change_rows(t.changes(0, 2), cols) == sorted(ins0 + del1 + ins2)
    with pytest.raises(InvalidArgumentError, match="start version 1 is after end version 0"):
        t.changes(1, 0)
    with pytest.raises(VersionNotFoundError, match="end version 4 .* does not exist yet") as ei:
        t.changes(3, 4)
    assert ei.value.version == 4 and ei.value.latest == 2


def _change_rows(table: pa.Table, columns: list[str]) -> list[tuple]:
    return sorted(tuple(r[c] for c in columns) for r in table.to_pylist())


# ---------------------------------------------------------------------------- E12


def test_compacted_log_files_same_answer_with_and_without_compactions(copy_table, corpus):
    name = "compacted-log-files-table"
    with_c = _table(corpus, name)
    assert len([p for p in (corpus / KRS / name / "_delta_log").iterdir() if "compacted" in p.name]) == 3
    root = copy_table(f"{KRS}/{name}")
    make_writable(root)
    for p in (root / "_delta_log").iterdir():
        if p.name.endswith(".compacted.json"):
            p.unlink()
    without = DeltaTable(str(root))
    assert with_c.latest_version() == without.latest_version() == 25
    for v in range(26):
        a, b = with_c.snapshot(version=v), without.snapshot(version=v)
        assert _file_state(a) == _file_state(b), v
        assert a.metadata == b.metadata and a.protocol == b.protocol


def test_compacted_log_files_latest_rows(corpus):
    """Expected rows (README E12): ids 0, 1, 2, 10, 12, with deletion vectors applied; the
    live files hold more physical rows than that, so the DVs are what makes it exact."""
    name = "compacted-log-files-table"
    root = corpus / KRS / name
    snap = _table(corpus, name).snapshot()
    assert snap.protocol.has_reader_feature("deletionVectors")
    import pyarrow.parquet as pq
    physical = sum(pq.read_metadata(root / p).num_rows for p in snap.files().column("path").to_pylist())
    assert physical > 5
    rows = sorted(snap.to_pyarrow().to_pylist(), key=lambda r: r["id"])
    assert [r["id"] for r in rows] == [0, 1, 2, 10, 12]
    comments = {r["id"]: r["comment"] for r in rows}
    # upstream prints id 2's comment as blank: the file holds an empty string
    assert comments[2] in ("", None)
    assert {k: v for k, v in comments.items() if k != 2} == {
        0: "new", 1: "after-large-delete", 10: "merge1-insert", 12: "merge2-insert"}


# ---------------------------------------------------------------------------- E13


@pytest.mark.parametrize("name", ["app-txn-no-checkpoint", "app-txn-checkpoint"])
def test_app_transactions(corpus, name):
    snap = _table(corpus, name).snapshot()
    txns = snap.transactions(include_expired=True)
    assert set(txns) == {"my-app", "my-app2"}
    assert txns["my-app2"] == (2, None)
    assert snap.transaction_version("my-app2") == 2
    assert snap.transaction_version("my-app") == 3
    assert snap.transaction_version("other") is None


def test_app_txn_checkpoint_reads_txns_from_checkpoint(corpus):
    snap = _table(corpus, "app-txn-checkpoint").snapshot()
    assert snap.segment.checkpoint_version == snap.version and snap.segment.commits == []


def test_no_transactions(corpus):
    assert _table(corpus, "basic_partitioned").snapshot().transactions(include_expired=True) == {}


def test_app_txn_with_last_updated_all_without_retention(corpus):
    snap = _table(corpus, "app-txn-with-last-updated").snapshot()
    assert snap.configuration["delta.setTransactionRetentionDuration"] == "interval 1 days"
    txns = snap.transactions(include_expired=True)
    assert txns == {"new_app_0": (1, None), "new_app_1": (1, 1000), "new_app_2": (1, 1002),
                    "old_app": (1, 1747935650)}


def test_app_txn_with_last_updated_retention(corpus):
    """Default transactions() applies delta.setTransactionRetentionDuration (1 day) as Delta
    Spark does: a txn whose lastUpdated is at or before now - 1 day is expired; one without
    lastUpdated never expires. (kernel-rs's scanner applies no retention, hence the
    include_expired=True answer above.)"""
    snap = _table(corpus, "app-txn-with-last-updated").snapshot()
    day = 24 * 3600 * 1000
    old = 1747935650
    # just inside the retention of old_app: the two older ones (1000, 1002) are gone
    assert set(snap.transactions(now_ms=old + day - 1)) == {"new_app_0", "old_app"}
    # exactly one day later old_app expires too
    assert set(snap.transactions(now_ms=old + day)) == {"new_app_0"}
    # with the real clock (2020s) every txn with a lastUpdated (all from 1970) is expired
    assert snap.transactions() == {"new_app_0": (1, None)}
    assert snap.transaction_version("old_app") is None
    assert snap.transaction_version("new_app_0") == 1
    # one day after new_app_1's lastUpdated (1000) it is expired; new_app_2 (1002) is not yet
    assert set(snap.transactions(now_ms=1000 + day)) == {"new_app_0", "new_app_2", "old_app"}


def test_five_part_checkpoint_one_action_per_part(corpus):
    snap = _table(corpus, "parquet_row_group_skipping").snapshot()
    assert len(snap.segment.checkpoint_files) == 5
    assert len(snap.transactions(include_expired=True)) == 2


def test_checkpoint_found_without_last_checkpoint(corpus):
    name = "with_checkpoint_no_last_checkpoint"
    assert not (corpus / KRS / name / "_delta_log" / "_last_checkpoint").exists()
    snap = _table(corpus, name).snapshot()
    assert snap.version == 3
    assert snap.segment.checkpoint_version == 2
    assert len(snap.segment.checkpoint_files) == 1
    assert [c.version for c in snap.segment.commits] == [3]
