"""The Spark layer's pure-Python parts, without a JVM: manifests, URIs, arguments, partition dirs, stats."""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.log.base.errors import InvalidArgumentError, UnsupportedFeatureError
from airflow_provider_delta.spark import exactly_once
from airflow_provider_delta.spark.file_stats import footer_stats
from airflow_provider_delta.spark.job_args import SECRETS_ENV, JobSpec, read_secrets
from airflow_provider_delta.spark.pinned import from_manifest, from_manifest_document, from_table
from airflow_provider_delta.spark.staged_write import partition_value_from_dir
from airflow_provider_delta.spark.transforms import resolve
from airflow_provider_delta.spark.uris import spark_uri

SCHEMA = pa.schema([("id", pa.int64()), ("day", pa.string())])


def _table(tmp_path, commits: int = 2) -> DeltaTable:
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, partition_by=["day"])
    for i in range(commits):
        table.write(pa.table({"id": [i], "day": [f"2026-01-0{i + 1}"]}))
    return table


def _manifest(tmp_path, table: DeltaTable, version: int) -> str:
    from airflow_provider_delta.hooks.manifest import build_manifest, write_json
    doc = build_manifest(table.snapshot(version), table.uri)
    return write_json(str(tmp_path / f"m{version}.json"), doc)


# ------------------------------------------------------------------ pinned snapshots
def test_manifest_and_table_pin_the_same_files(tmp_path):
    table = _table(tmp_path)
    uri = _manifest(tmp_path, table, 1)
    table.write(pa.table({"id": [9], "day": ["2026-02-01"]}))            # moves on after pinning
    by_manifest = from_manifest(uri)
    by_table = from_table(table, 1)
    assert by_manifest.version == by_table.version == 1
    assert sorted(f.uri for f in by_manifest.files) == sorted(f.uri for f in by_table.files)
    assert len(by_manifest.files) == 1 and by_manifest.files[0].partition_values == {"day": "2026-01-01"}
    assert by_manifest.partition_columns == ("day",)
    assert by_manifest.num_records == 1
    assert all(f.uri.startswith("file:///") for f in by_manifest.files)


def test_manifest_keeps_deletion_vectors_and_counts_live_rows(tmp_path):
    table = _table(tmp_path, 1)
    from airflow_provider_delta.hooks.manifest import build_manifest
    doc = build_manifest(table.snapshot(), table.uri)
    dv = {"storageType": "u", "pathOrInlineDv": "ab", "sizeInBytes": 1, "cardinality": 1}
    doc["files"][0]["deletion_vector"] = dv
    doc["files"][0]["stats"] = {"numRecords": 3}
    pinned = from_manifest_document(doc)
    assert pinned.files[0].deletion_vector == dv and pinned.files[0].num_records == 2
    doc["files"][0]["deletion_vector"] = "not an object"
    with pytest.raises(InvalidArgumentError, match="deletion_vector"):
        from_manifest_document(doc)


def test_column_mapping_modes(tmp_path):
    table = _table(tmp_path, 1)
    from airflow_provider_delta.hooks.manifest import build_manifest
    doc = build_manifest(table.snapshot(), table.uri)
    doc["configuration"]["delta.columnMapping.mode"] = "name"
    assert from_manifest_document(doc).configuration["delta.columnMapping.mode"] == "name"
    doc["configuration"]["delta.columnMapping.mode"] = "hash"
    with pytest.raises(UnsupportedFeatureError, match="'hash'") as e:
        from_manifest_document(doc)
    assert e.value.feature == "columnMapping"


@pytest.mark.parametrize("doc, message", [
    ({"format": "something-else"}, "not a Delta snapshot manifest"),
    ({"format": "delta-snapshot-manifest", "format_version": 99}, "format_version"),
    ({"format": "delta-snapshot-manifest", "format_version": 1, "table_uri": "/t"}, "lacks"),
    ([1, 2], "not a Delta snapshot manifest"),
])
def test_bad_manifest_documents(doc, message):
    with pytest.raises((InvalidArgumentError, UnsupportedFeatureError), match=message):
        from_manifest_document(doc)


def test_missing_and_invalid_manifest_files(tmp_path):
    with pytest.raises(InvalidArgumentError, match="does not exist"):
        from_manifest(str(tmp_path / "nope.json"))
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        from_manifest(str(bad))


def test_manifest_file_without_partition_value_is_refused(tmp_path):
    table = _table(tmp_path, 1)
    from airflow_provider_delta.hooks.manifest import build_manifest
    doc = build_manifest(table.snapshot(), table.uri)
    doc["files"][0]["partition_values"] = {}
    with pytest.raises(InvalidArgumentError, match="no partition value"):
        from_manifest_document(doc)


# ----------------------------------------------------------------------------- URIs
@pytest.mark.parametrize("uri, expected", [
    ("/data/t", "file:///data/t"),
    ("file:///data/t", "file:///data/t"),
    ("file://localhost/data/t", "file:///data/t"),
    ("file:/data/t", "file:///data/t"),
    ("s3://bucket/t", "s3a://bucket/t"),
    ("gs://bucket/t", "gs://bucket/t"),
    ("abfss://c@acct.dfs.core.windows.net/t", "abfss://c@acct.dfs.core.windows.net/t"),
])
def test_spark_uri(uri, expected):
    assert spark_uri(uri) == expected


def test_spark_uri_refuses_in_process_storage():
    with pytest.raises(InvalidArgumentError, match="cannot reach"):
        spark_uri("memory://t")


# ------------------------------------------------------------------------ arguments
def test_job_spec_round_trip(tmp_path):
    spec = JobSpec(output_table_uri="/out", transform="pkg.mod:f", mode="overwrite", partition_by=["d"],
                   input_table_uri="/in", input_version=3, app_id="a.b", app_version=7,
                   params={"x": 1}, job={"dag_id": "a"})
    again = JobSpec.parse(spec.to_json())
    assert again == spec
    path = tmp_path / "args.json"
    path.write_text(spec.to_json())
    assert JobSpec.parse(f"@{path}") == spec


@pytest.mark.parametrize("doc, message", [
    ({"transform": "identity"}, "output"),
    ({"output": {"table_uri": "/o"}}, "transform is required"),
    ({"output": {"table_uri": "/o"}, "transform": "identity", "app_id": "a"}, "app_version"),
    ({"output": {"table_uri": "/o"}, "transform": "identity", "app_id": "a", "app_version": -1}, "non-negative"),
    ({"output": {"table_uri": "/o"}, "transform": "identity", "input": {"manifest_uri": "m", "table_uri": "t"}},
     "not both"),
    ({"output": {"table_uri": "/o"}, "transform": "identity", "input": {"version": 2}}, "needs input.table_uri"),
    ({"output": {"table_uri": "/o", "partition_by": "d"}, "transform": "identity"}, "list of column names"),
])
def test_job_spec_errors(doc, message):
    with pytest.raises(InvalidArgumentError, match=message):
        JobSpec.from_document(doc)


def test_job_spec_not_json():
    with pytest.raises(InvalidArgumentError, match="not valid JSON"):
        JobSpec.parse("{oops")


def test_secrets_from_environment():
    assert read_secrets({}) == {}
    assert read_secrets({SECRETS_ENV: '{"output": {"storage_options": {"key": "k"}}}'}) == {
        "output": {"storage_options": {"key": "k"}}}
    with pytest.raises(InvalidArgumentError):
        read_secrets({SECRETS_ENV: "[1]"})


def test_job_main_rejects_bad_arguments_without_starting_spark(capsys):
    from airflow_provider_delta.spark.job import main
    assert main([]) == 2
    assert main(['{"transform": "identity"}']) == 2
    assert "output" in capsys.readouterr().err


# ----------------------------------------------------------------------- transforms
def test_transform_resolution(tmp_path, monkeypatch):
    (tmp_path / "my_transforms.py").write_text("def double(spark, source, factor=2):\n    return factor\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    assert resolve("my_transforms:double")(None, None, factor=3) == 3
    assert resolve("identity").__name__ == "identity"
    with pytest.raises(InvalidArgumentError, match="unknown transform"):
        resolve("nonsense")
    with pytest.raises(InvalidArgumentError, match="cannot be imported"):
        resolve("no_such_module_xyz:f")
    with pytest.raises(InvalidArgumentError, match="has no attribute"):
        resolve("my_transforms:missing")


# ------------------------------------------------------------------- exactly once
def test_txn_lookup(tmp_path):
    table = _table(tmp_path, 1)
    assert exactly_once.committed_txn_version(table, "app") is None
    assert not exactly_once.already_committed(table, "app", 5)
    with table.transaction() as txn:
        txn.set_txn("app", 5)
    table.write(pa.table({"id": [3], "day": ["2026-01-03"]}))
    assert exactly_once.already_committed(table, "app", 5)
    assert exactly_once.already_committed(table, "app", 4)
    assert not exactly_once.already_committed(table, "app", 6)
    assert exactly_once.find_txn_commit(table, "app", 5) == 2
    assert exactly_once.find_txn_commit(table, "app", 4) is None
    assert exactly_once.find_txn_commit(table, "app", 5, max_commits=1) is None   # only looks at v3
    assert exactly_once.committed_txn_version(DeltaTable(str(tmp_path / "none")), "app") is None
    with pytest.raises(InvalidArgumentError):
        exactly_once.check_app("", 1)
    with pytest.raises(InvalidArgumentError):
        exactly_once.check_app("a", True)


# ---------------------------------------------------------------- partition dirs
@pytest.mark.parametrize("text, t, expected", [
    ("2026-01-01", pa.date32(), "2026-01-01"),
    ("b%3Ac d", pa.string(), "b:c d"),
    ("100%25", pa.string(), "100%"),
    ("__HIVE_DEFAULT_PARTITION__", pa.int32(), None),
    ("-7", pa.int64(), "-7"),
    ("true", pa.bool_(), "true"),
    # zoned timestamps are written as microseconds since the epoch (partition_frame)
    ("1767270600000000", pa.timestamp("us", tz="UTC"), "2026-01-01T12:30:00.000000Z"),
    ("-62135596800000000", pa.timestamp("us", tz="UTC"), "0001-01-01T00:00:00.000000Z"),
    ("253402300799999999", pa.timestamp("us", tz="UTC"), "9999-12-31T23:59:59.999999Z"),
    ("2026-01-01 12%3A30%3A00", pa.timestamp("us"), "2026-01-01 12:30:00.000000"),
])
def test_partition_value_from_spark_dir(text, t, expected):
    assert partition_value_from_dir(text, t) == expected


@pytest.mark.parametrize("text, t", [("2026-13-45 99:00:00", pa.timestamp("us")),
                                     ("2026-01-01 12:30:00", pa.timestamp("us", tz="UTC"))])
def test_unparsable_partition_value(text, t):
    with pytest.raises(InvalidArgumentError):
        partition_value_from_dir(text, t)


# --------------------------------------------------------------------------- stats
def test_footer_stats_match_counts_and_bounds(tmp_path):
    data = pa.table({
        "id": pa.array([3, 1, None, 7], pa.int64()),
        "name": pa.array(["b", "a", "c", None]),
        "ts": pa.array([dt.datetime(2026, 1, 1, tzinfo=dt.timezone.utc), None, None,
                        dt.datetime(2026, 1, 2, 3, tzinfo=dt.timezone.utc)], pa.timestamp("us", tz="UTC")),
        "x": pa.array([0.5, float("nan"), 1.0, 2.0]),
        "s": pa.array([{"a": 1}, {"a": 2}, None, {"a": 3}], pa.struct([("a", pa.int32())])),
    })
    path = tmp_path / "f.parquet"
    pq.write_table(data, path, row_group_size=2)
    stats = json.loads(footer_stats(pq.read_metadata(path), data.schema, {}))
    assert stats["numRecords"] == 4
    assert stats["minValues"] == {"id": 1, "name": "a", "ts": "2026-01-01T00:00:00.000Z"}
    assert stats["maxValues"] == {"id": 7, "name": "c", "ts": "2026-01-02T03:00:00.000Z"}
    assert stats["nullCount"] == {"id": 1, "name": 1, "ts": 2, "x": 0}
    assert "x" not in stats["minValues"]   # floats: a footer cannot say whether NaN was there


def test_footer_stats_follow_num_indexed_cols(tmp_path):
    data = pa.table({"a": [1, 2], "b": [3, 4]})
    path = tmp_path / "f.parquet"
    pq.write_table(data, path)
    stats = json.loads(footer_stats(pq.read_metadata(path), data.schema, {"delta.dataSkippingNumIndexedCols": "1"}))
    assert stats["minValues"] == {"a": 1} and stats["nullCount"] == {"a": 0}
    assert stats["numRecords"] == 2


# ------------------------------------------------------------------------ layering
def test_spark_layer_imports_neither_airflow_nor_pyspark_eagerly():
    """The Spark layer runs in Spark drivers without Airflow; pyspark loads only when used."""
    import subprocess
    import sys
    code = ("import sys\n"
            "import airflow_provider_delta.spark as s\n"
            "from airflow_provider_delta.spark import commit, reader, job, job_args, exactly_once, transforms\n"
            "s.read_snapshot, s.commit_dataframe\n"
            "bad = sorted(m for m in sys.modules if m == 'airflow' or m.startswith('airflow.'))\n"
            "assert not bad, bad\n"
            "assert 'pyspark' not in sys.modules\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


def test_job_file_runs_as_a_script():
    """spark-submit runs job.py by path: its directory must not shadow other modules."""
    import subprocess
    import sys

    from airflow_provider_delta.operators.spark import DEFAULT_APPLICATION
    proc = subprocess.run([sys.executable, DEFAULT_APPLICATION, '{"output": {"table_uri": "/x"}}'],
                          capture_output=True, text=True)
    assert proc.returncode == 2 and "transform is required" in proc.stderr
