"""E0: the Delta Acceptance Testing (DAT v0.0.3) reader tables.

DAT's reader rule: load each expected version, compare ``table_version_metadata.json``
(version, protocol versions, properties), then compare the rows after sorting. The
expected rows were written by Delta Spark, so this checks our log replay and our
row reading against the reference implementation, table by table, version by version.
Tables whose rows need deletion vectors or column mapping are read like the others,
and checked to really use the feature (so their row test exercises it).
"""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable, column_mapping_mode
from corpus_expected import CORPUS, DAT_FEATURE_TABLES, DAT_ROW_COUNTS, parquet_num_rows, sorted_rows

DAT = CORPUS / "dat"  # parametrization needs it at collection; tests also take `corpus` so a
                      # missing corpus fails with the fixture's explanation


def _cases() -> list[tuple[str, str]]:
    out = []
    for table in sorted(DAT_ROW_COUNTS):
        for d in sorted(DAT_ROW_COUNTS[table]):
            out.append((table, d))
    return out


def _load_expected(table: str, expected_dir: str) -> tuple[dict, pa.Table]:
    base = DAT / table / "expected" / expected_dir
    meta = json.loads((base / "table_version_metadata.json").read_text())
    rows = pq.read_table(base / "table_content")
    return meta, rows


def _snapshot(table: str, expected_dir: str):
    version = None if expected_dir == "latest" else int(expected_dir[1:])
    return DeltaTable(str(DAT / table / "delta")).snapshot(version=version)


def test_every_dat_table_is_covered(corpus):
    """The parametrization below is the README's list; fail if the corpus grew or shrank."""
    on_disk = {p.name: sorted(x.name for x in (p / "expected").iterdir())
               for p in (corpus / "dat").iterdir() if p.is_dir()}
    assert on_disk == {t: sorted(d) for t, d in DAT_ROW_COUNTS.items()}


@pytest.mark.parametrize("table,expected_dir", _cases())
def test_dat_metadata(table, expected_dir, corpus):
    meta, _ = _load_expected(table, expected_dir)
    snap = _snapshot(table, expected_dir)
    assert snap.version == meta["version"]
    assert snap.protocol.min_reader_version == meta["min_reader_version"]
    assert snap.protocol.min_writer_version == meta["min_writer_version"]
    assert snap.metadata.configuration == meta["properties"]


@pytest.mark.parametrize("table,expected_dir", _cases())
def test_dat_rows(table, expected_dir, corpus):
    _, expected = _load_expected(table, expected_dir)
    assert expected.num_rows == DAT_ROW_COUNTS[table][expected_dir]
    actual = _snapshot(table, expected_dir).to_pyarrow()
    assert actual.column_names == expected.column_names
    for a, e in zip(actual.schema, expected.schema):
        # only the timestamp unit may differ (DAT wrote some as ns); anything else is a bug
        assert a.type == e.type or (pa.types.is_timestamp(a.type) and pa.types.is_timestamp(e.type)), a.name
    if actual.schema != expected.schema:
        actual = actual.cast(expected.schema)
    assert sorted_rows(actual) == sorted_rows(expected)


@pytest.mark.parametrize("table", sorted(DAT_FEATURE_TABLES))
def test_dat_feature_tables_use_the_feature(table, corpus):
    """The row test above passes on these only if the feature is applied: the DV table has
    a file with deleted rows, the mapped tables store columns under other names."""
    snap = _snapshot(table, "latest")
    files = snap.files()
    if DAT_FEATURE_TABLES[table] == "deletionVectors":
        assert files.column("deletion_vector").null_count < files.num_rows
    else:
        assert column_mapping_mode(snap.metadata.configuration) == "name"
        stored = pq.read_schema(DAT / table / "delta" / files.column("path")[0].as_py()).names
        assert not set(snap.to_pyarrow().column_names) & set(stored)


@pytest.mark.parametrize("table", ["column_mapping", "iceberg_compat_v1"])
def test_dat_column_mapping_files_hold_the_expected_rows(table, corpus):
    """files() works on column-mapped tables: its files hold exactly the expected row count."""
    _, expected = _load_expected(table, "latest")
    files = _snapshot(table, "latest").files()
    assert files.num_rows > 0
    root = DAT / table / "delta"
    physical = sum(parquet_num_rows(root / p) for p in files.column("path").to_pylist())
    assert physical == expected.num_rows


def test_dat_deletion_vectors_file_list(corpus):
    """README: 1 live file with a DV of cardinality 4; 5 physical rows - 4 deleted = 1 expected row."""
    _, expected = _load_expected("deletion_vectors", "latest")
    files = _snapshot("deletion_vectors", "latest").files()
    assert files.num_rows == 1
    dv = files.column("deletion_vector")[0].as_py()
    assert dv is not None and dv["cardinality"] == 4
    physical = parquet_num_rows(DAT / "deletion_vectors" / "delta" / files.column("path")[0].as_py())
    assert physical - dv["cardinality"] == expected.num_rows == 1


def test_dat_no_replay_uses_checkpoint_without_deleted_commits(corpus):
    """no_replay: commits 0-1 are gone, checkpoints at 2 and 4; the latest reads from checkpoint 4."""
    snap = _snapshot("no_replay", "latest")
    assert snap.segment.checkpoint_version == 4
    assert [c.version for c in snap.segment.commits] == [5]


def test_dat_partitioned_with_null_partition_values_are_null(corpus):
    """A null partition value is typed null, not the string 'null' or ''."""
    rows = _snapshot("partitioned_with_null", "latest").to_pyarrow()
    _, expected = _load_expected("partitioned_with_null", "latest")
    pcols = _snapshot("partitioned_with_null", "latest").partition_columns
    assert pcols
    for c in pcols:
        assert rows.column(c).null_count == expected.column(c).null_count
        assert pc.sum(pc.is_null(rows.column(c))).as_py() > 0
