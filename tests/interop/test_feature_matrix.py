"""Every table feature the package knows, every operation: refused cleanly or done right (issue #10).

For each table of :mod:`feature_tables` (one feature each, mostly made by Delta Spark) and each
operation (snapshot, rows, write, transaction, checkpoint, log compaction, cleanup, vacuum,
enabling and disabling in-commit timestamps), on a fresh copy of the table:

- refused: ``UnsupportedFeatureError`` naming the feature and the operation, and the
  directory tree byte-identical before and after (sizes, mtimes, contents);
- done: the operation did what it says, and we and ``deltalake`` still read every retained
  version (``deltalake`` where it supports the table at all).

Delta Spark checks the results too: after a chain of all the operations a table allows (ending
with our checkpoint as the table's latest: V2 with sidecars, JSON and parquet, on ``v2Checkpoint``
tables), Delta Spark and we agree on the table as Delta Spark made it and as we left it (files,
protocol, metadata, schema, rows, history, DESCRIBE DETAIL; every version with
``DELTA_FEATURE_MATRIX_ALL_VERSIONS=1``), deltalake loads every version, and after our cleanup
Delta Spark reads the latest version from what is left. Also: no stale ``.crc`` after our commits, and domains
(``delta.clustering``, ``delta.rowTracking``, a user domain) survive our checkpoints and writes.

The Delta Spark tables are built once per module and copied for each test.
"""
from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import deltalake
import pytest

from feature_tables import (ALL_OPERATIONS, EXPECTED_REFUSALS, FEATURE_OF, OPERATION_WORDS, READER_FEATURE_TABLES,
                            SPARK_TABLES, TABLES,
                            build_invariants_table, build_spark_table, copy_catalog_managed, one_row,
                            open_table, operations, plant_old_orphan, tree)
from interop_support import (Expect, assert_same, compare_table, normalize_metadata, normalize_protocol, our_files,
                             spark_latest_version, spark_state)
from airflow_provider_delta.log import DeltaTable, UnsupportedFeatureError

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def sources(spark, corpus, tmp_path_factory):
    """Table name -> the path of that table, built on first use and never changed afterwards."""
    root = tmp_path_factory.mktemp("feature_tables")
    built: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in built:
            path = root / re.sub(r"\W+", "_", name)
            if name == "catalogManaged":
                copy_catalog_managed(corpus, path)
            elif name == "invariants":
                build_invariants_table(str(path))
            else:
                build_spark_table(spark, name, str(path))
            built[name] = path
        return built[name]
    return get


@pytest.fixture
def fresh(sources, tmp_path):
    """A private copy of a source table (mtimes kept), with an old orphan file for vacuum."""
    def copy(name: str) -> Path:
        path = tmp_path / "t"
        shutil.copytree(sources(name), path)
        plant_old_orphan(path)
        return path
    return copy


def retained_versions(name: str, path: Path) -> list[int]:
    """The versions we can still load (cleanup removes the oldest)."""
    table = open_table(name, path)
    out = []
    for v in range(table.latest_version() + 1):
        try:
            table.snapshot(version=v)
        except UnsupportedFeatureError:
            raise
        except Exception:  # noqa: BLE001 - cleaned up
            continue
        out.append(v)
    return out


def deltalake_reads(path: Path, versions: list[int], rows: bool) -> list[str]:
    """Problems deltalake has loading each version (and its rows); empty when it reads them all."""
    problems = []
    for v in versions:
        try:
            dt = deltalake.DeltaTable(str(path), version=v)
            dt.file_uris()
            if rows:
                dt.to_pyarrow_table()
        except Exception as e:  # noqa: BLE001 - reported
            problems.append(f"v{v}: {type(e).__name__}: {str(e).splitlines()[0][:200]}")
    return problems


def deltalake_supports(path: Path) -> tuple[bool, bool]:
    """(log, rows): whether deltalake reads the untouched table at its latest version at all."""
    try:
        dt = deltalake.DeltaTable(str(path))
        dt.file_uris()
    except Exception:  # noqa: BLE001
        return False, False
    try:
        dt.to_pyarrow_table()
        return True, True
    except Exception:  # noqa: BLE001
        return True, False


def _check_done(name: str, op: str, path: Path, before: DeltaTable, result) -> None:
    """What an operation that was not refused must have done (``before``: the snapshot before it)."""
    before_version = before.version
    table = open_table(name, path)
    latest = table.latest_version()
    snap = table.snapshot()
    log = sorted(os.listdir(path / "_delta_log"))
    if op == "enable ICT" and before.in_commit_timestamps_enabled:
        assert latest == before_version and snap.in_commit_timestamps_enabled, "enabling ICT again is a no-op"
    elif op in ("write", "transaction", "enable ICT", "disable ICT"):
        assert latest == before_version + 1 == result, (op, latest, result)
    else:
        assert latest == before_version, f"{op} must not commit"
    if op == "write":
        assert snap.files().num_rows == before.files().num_rows + 1
        if FEATURE_OF[name] not in ("deletionVectors", "columnMapping"):   # rows: the reader helper's issue
            assert snap.to_pyarrow().num_rows == before.to_pyarrow().num_rows + 1
    elif op == "transaction":
        assert snap.transaction_version("feature-matrix") == 1
    elif op == "enable ICT":
        assert snap.in_commit_timestamps_enabled
    elif op == "disable ICT":
        assert not snap.in_commit_timestamps_enabled
    elif op == "checkpoint":
        prefix = f"{latest:020d}.checkpoint."
        mine = [f for f in log if f.startswith(prefix)]
        if snap.protocol.has_reader_feature("v2Checkpoint"):
            assert any(re.fullmatch(rf"{prefix}[0-9a-f-]{{36}}\.parquet", f) for f in mine), mine
            assert len(os.listdir(path / "_delta_log" / "_sidecars")) >= 2
        else:
            assert f"{prefix}parquet" in mine, log
    elif op == "compaction":
        assert "00000000000000000001.00000000000000000002.compacted.json" in log
    elif op == "cleanup":
        assert result["checkpoint_version"] is not None and "00000000000000000000.json" not in log, result
    elif op == "vacuum":
        assert not (path / "part-orphan-by-matrix.parquet").exists(), result


@pytest.mark.parametrize("op", ALL_OPERATIONS)
@pytest.mark.parametrize("name", TABLES)
def test_operation_refused_untouched_or_done(name, op, fresh):
    path = fresh(name)
    feature = FEATURE_OF[name]
    dl_log, dl_rows = deltalake_supports(path)
    table = open_table(name, path)
    before_snapshot = table.snapshot() if name not in READER_FEATURE_TABLES else None
    before = tree(path)
    run = operations(name, table)[op]
    if op in EXPECTED_REFUSALS.get(name, ()):
        with pytest.raises(UnsupportedFeatureError) as e:
            run()
        assert e.value.feature == feature, f"{name} {op}: names {e.value.feature!r}: {e.value}"
        words = "cannot read" if name in READER_FEATURE_TABLES else OPERATION_WORDS[op]
        assert re.search(words, str(e.value)), f"{name} {op}: operation not named: {e.value}"
        assert tree(path) == before, f"{name}: the refused {op} changed files"
        return
    result = run()
    if op in ("snapshot", "rows"):
        assert tree(path) == before, f"{name}: {op} changed files"
    _check_done(name, op, path, before_snapshot, result)
    versions = retained_versions(name, path)
    assert versions[-1] == table.latest_version()
    if dl_log:   # after vacuum, only the latest version still has all its data files
        assert deltalake_reads(path, versions, rows=False) == [], f"deltalake after our {op} on {name}"
        assert deltalake_reads(path, versions[-1:] if op == "vacuum" else versions, rows=dl_rows) == [], \
            f"deltalake rows after our {op} on {name}"


#: DELTA_FEATURE_MATRIX_ALL_VERSIONS=1: Delta Spark compares every version after our operations, not
#: only the table as made and as we left it (about three times as long).
ALL_VERSIONS = os.environ.get("DELTA_FEATURE_MATRIX_ALL_VERSIONS", "") == "1"
SPARK_READABLE = sorted([n for n in SPARK_TABLES if n != "futureFeatureX (reader-writer)"] + ["invariants"])


def _allowed(name: str, op: str) -> bool:
    return op not in EXPECTED_REFUSALS.get(name, ())


def _run_chain(name: str, table: DeltaTable, v2_format: str) -> list[str]:
    """Every operation the table allows, in a row, ending with our checkpoint as the latest."""
    ops = operations(name, table)
    done = []
    for op in ("transaction", "write", "enable ICT", "checkpoint", "write", "transaction", "compaction",
               "vacuum", "disable ICT"):
        if not _allowed(name, op):
            continue
        if op == "compaction":   # the last two commits, after our checkpoint
            v = table.latest_version()
            if v - 1 <= table.snapshot().segment.checkpoint_version:
                continue
            table.compact_log(v - 1, v)
        else:
            ops[op]()
        done.append(op)
    table.checkpoint(v2_format=v2_format, sidecars=2)
    return done + ["checkpoint"]


def _vacuumed(path: Path, table: DeltaTable, versions: list[int]) -> set[int]:
    """Versions with a data file vacuum deleted (their rows cannot be read any more)."""
    gone = set()
    for v in versions:
        if any(not (path / f).exists() for f in table.snapshot(version=v).files().column("path").to_pylist()):
            gone.add(v)
    return gone


def _compare_files_only(spark, path: Path, versions: list[int]) -> list[str]:
    """Variant tables: our schema has no Arrow type for the column, so compare live files, protocol
    and metadata at each version, and Delta Spark's row count (it reads the values)."""
    state = spark_state(spark, str(path), versions)
    table = DeltaTable(str(path))
    diffs = []
    for v in versions:
        snap = table.snapshot(version=v)
        if our_files(snap) != state.files[v]:
            diffs.append(f"v{v}: files differ: ours {sorted(our_files(snap))}, Delta Spark {sorted(state.files[v])}")
        if normalize_protocol(snap.protocol.to_json()) != state.protocol[v]:
            diffs.append(f"v{v}: protocol ours {snap.protocol.to_json()}, Delta Spark {state.protocol[v]}")
        if normalize_metadata(snap.metadata.to_json()) != state.metadata[v]:
            diffs.append(f"v{v}: metadata differs")
    return diffs


CHAIN = [n for n in SPARK_READABLE if _allowed(n, "checkpoint")]   # not futureFeatureX: nothing is allowed


@pytest.mark.parametrize("name,v2_format", [(n, "parquet") for n in CHAIN] + [("v2Checkpoint", "json")])
def test_delta_spark_reads_every_version_after_our_operations(name, v2_format, spark, fresh):
    """The table as Delta Spark made it, then everything it allows us to do (our last checkpoint is
    the table's latest: V2 with sidecars, JSON or parquet, on v2Checkpoint tables). Delta Spark and
    we agree at every version (its and ours: files, protocol, metadata, schema, rows, history,
    DESCRIBE DETAIL) and deltalake loads them; after our cleanup, Delta Spark reads what is left."""
    path = fresh(name)
    table = open_table(name, path)
    table.auto_checkpoint = False
    made = table.latest_version()
    done = _run_chain(name, table, v2_format)
    latest = table.latest_version()
    ours = [f for f in os.listdir(path / "_delta_log") if f.startswith(f"{latest:020d}.checkpoint.")]
    if table.snapshot().protocol.has_reader_feature("v2Checkpoint"):
        assert any(re.fullmatch(rf"{latest:020d}\.checkpoint\.[0-9a-f-]{{36}}\.{v2_format}", f) for f in ours), ours
    else:
        assert ours == [f"{latest:020d}.checkpoint.parquet"], ours
    versions = list(range(latest + 1))
    if not ALL_VERSIONS:   # CI: the table as made and as we left it (each version costs Delta Spark a replay)
        versions = sorted({made, latest})
    if FEATURE_OF[name] == "variantType":
        assert_same(_compare_files_only(spark, path, versions), f"{name} after our {done}")
    else:
        expect = Expect(skip_rows=_vacuumed(path, table, versions))
        assert_same(compare_table(spark, str(path), versions=versions, timestamps=False, expect=expect),
                    f"{name} after our {done}")
    dl_log, dl_rows = deltalake_supports(path)
    if dl_log:
        assert deltalake_reads(path, list(range(latest + 1)), rows=False) == []
    if _allowed(name, "cleanup"):   # Delta Spark reads the latest version from what our cleanup left
        rows_before = spark.read.format("delta").load(str(path)).count()
        result = operations(name, table)["cleanup"]()
        assert result["checkpoint_version"] == latest and result["commits"], result
        assert spark_latest_version(spark, str(path)) == latest
        assert spark.read.format("delta").load(str(path)).count() == rows_before


def test_one_row_fits_every_writable_schema(sources):
    """The matrix's 'write' adds a row of the table's own schema (else a refusal would be vacuous)."""
    for name in ("appendOnly", "timestampNtz", "typeWidening"):
        schema = DeltaTable(str(sources(name))).snapshot().schema
        assert one_row(schema).schema.equals(schema)


def _crc(path: Path, version: int) -> dict | None:
    f = path / "_delta_log" / f"{version:020d}.crc"
    return json.loads(f.read_text()) if f.exists() else None


def test_no_stale_checksum_after_our_commits(spark, fresh):
    """Delta Spark writes ``<v>.crc`` version checksums; we do not. After our commits on its table,
    every ``.crc`` still describes its own version, and when Delta Spark commits after us it does
    not build its checksum on the older one: its ``.crc`` matches the table (our files included)."""
    path = fresh("domainMetadata")
    table = DeltaTable(str(path))
    table.auto_checkpoint = False
    spark_version = table.latest_version()
    assert _crc(path, spark_version) is not None, "Delta Spark should have written a checksum"
    ours = [table.write(one_row(table.snapshot().schema)) for _ in range(2)]
    assert [_crc(path, v) for v in ours] == [None, None], "we write no checksum files"
    spark.sql(f"INSERT INTO delta.`{path}` VALUES (100, 'after us')").collect()
    after = table.latest_version()
    assert after == ours[-1] + 1
    for v in (spark_version, after):
        crc, snap = _crc(path, v), table.snapshot(version=v)
        if crc is None:
            continue       # Delta Spark may skip the checksum when the previous version has none
        files = snap.files()
        assert (crc["numFiles"], crc["tableSizeBytes"]) == (files.num_rows, sum(files.column("size").to_pylist())), v
        assert crc["metadata"]["configuration"] == dict(snap.configuration)
    assert spark.read.format("delta").load(str(path)).count() == table.snapshot().to_pyarrow().num_rows
    spark.sql(f"DESCRIBE DETAIL delta.`{path}`").collect()   # Delta Spark's detail agrees (compare_table)
    assert_same(compare_table(spark, str(path), versions=[spark_version, after], timestamps=False),
                "checksums after our commits")


@pytest.mark.parametrize("name,domain", [("clustering", "delta.clustering"), ("rowTracking", "delta.rowTracking"),
                                         ("domainMetadata", "matrix.user")])
def test_domains_survive_our_checkpoints_and_writes(name, domain, spark, fresh):
    """Domains (Delta Spark's clustering columns and row-id high-water mark, a user domain of ours)
    are kept by our commits, our checkpoints (classic and V2) and log compaction."""
    path = fresh(name)
    table = DeltaTable(str(path))
    table.auto_checkpoint = False
    if domain == "matrix.user":
        with table.transaction(operation="SET DOMAIN") as txn:
            txn.set_domain_metadata(domain, '{"owner":"feature-matrix"}')
        table.write(one_row(table.snapshot().schema))
    expected = table.snapshot().domain_metadata()[domain]
    table.checkpoint()
    table.compact_log(1, 2)
    fresh_read = DeltaTable(str(path)).snapshot()
    assert fresh_read.segment.checkpoint_version == table.latest_version()
    assert fresh_read.domain_metadata().get(domain) == expected
    if _allowed(name, "write"):
        table.write(one_row(table.snapshot().schema))
        assert DeltaTable(str(path)).snapshot().domain_metadata().get(domain) == expected
    # Delta Spark reads the domain from our checkpoint too
    from interop_support import spark_snapshot
    _df, snap = spark_snapshot(spark, str(path), table.latest_version())
    it = snap.domainMetadata().iterator()
    theirs = {}
    while it.hasNext():
        d = it.next()
        theirs[str(d.domain())] = str(d.configuration())
    assert theirs.get(domain) == expected
