"""OpenLineage of the Delta operators and assets, with the real OpenLineage provider classes."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.lineage import asset_to_openlineage, dataset_name
from airflow_provider_delta.log import DeltaTable
from airflow_provider_delta.operators import (DeltaBackfillOperator, DeltaCheckpointOperator,
                                              DeltaMetadataCleanupOperator, DeltaTimeTravelSnapshotOperator,
                                              DeltaVacuumOperator)
from airflow_provider_delta.operators.spark_base import report_commit

pytest.importorskip("airflow.providers.openlineage", reason="the openlineage extra is part of the test extra")


@pytest.mark.parametrize("uri, storage_options, expected", [
    ("/data/lake/orders", None, ("file", "/data/lake/orders")),
    ("file:///data/lake/orders", None, ("file", "/data/lake/orders")),
    ("s3://bucket/warehouse/orders/", None, ("s3://bucket", "warehouse/orders")),
    ("s3a://bucket/warehouse/orders", None, ("s3://bucket", "warehouse/orders")),
    ("gs://bucket/w/orders", None, ("gs://bucket", "w/orders")),
    ("gcs://bucket/w/orders", None, ("gs://bucket", "w/orders")),
    ("abfss://lake@acct.dfs.core.windows.net/w/orders", None,
     ("abfss://lake@acct.dfs.core.windows.net", "w/orders")),
    ("az://lake/w/orders", {"account_name": "acct"}, ("abfss://lake@acct.dfs.core.windows.net", "w/orders")),
    # the account as the storage layer reads it (data_paths.location_of): one place for the rule
    ("abfss://lake@ACCT.blob.core.windows.net:443/w/orders/", None,
     ("abfss://lake@acct.dfs.core.windows.net", "w/orders")),
    ("abfs://lake/w/orders", {"connection_string": "AccountName=acct;AccountKey=k;EndpointSuffix=core.chinacloudapi.cn"},
     ("abfss://lake@acct.dfs.core.chinacloudapi.cn", "w/orders")),
    ("az://lake/w/orders", {"account_host": "acct.dfs.core.windows.net"},
     ("abfss://lake@acct.dfs.core.windows.net", "w/orders")),
    ("az://lake/w/orders", None, ("abfss://lake", "w/orders")),
    ("adl://lake/w/orders", {"account_name": "acct"}, ("abfss://lake@acct.dfs.core.windows.net", "w/orders")),
    ("hdfs://namenode:8020/w/orders", None, ("hdfs://namenode:8020", "/w/orders")),
])
def test_dataset_names_follow_the_openlineage_naming_spec(uri, storage_options, expected):
    assert dataset_name(uri, storage_options) == expected


def test_the_asset_converter_is_registered_and_used_by_the_openlineage_provider():
    from airflow.providers.common.compat.openlineage.facet import Dataset
    from airflow.providers.openlineage.utils.utils import translate_airflow_asset
    from airflow.sdk import Asset

    from airflow_provider_delta.assets import asset_uri_for_table
    asset = Asset(uri=asset_uri_for_table("s3://bucket/warehouse/orders"))
    assert asset_to_openlineage(asset) == Dataset(namespace="s3://bucket", name="warehouse/orders")
    assert translate_airflow_asset(asset, None) == Dataset(namespace="s3://bucket", name="warehouse/orders")
    local = Asset(uri=asset_uri_for_table("/data/orders"))
    assert translate_airflow_asset(local, None) == Dataset(namespace="file", name="/data/orders")


def _facets(dataset) -> tuple[str, list[tuple[str, str]]]:
    return (dataset.facets["version"].datasetVersion,
            [(f.name, f.type) for f in dataset.facets["schema"].fields])


def test_snapshot_operator_reads_its_pinned_version(make_table, make_context):
    table = make_table(commits=2)
    op = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=table.storage.root, version=1)
    op.execute(make_context("pin"))
    lineage = op.get_openlineage_facets_on_complete(None)
    assert lineage.outputs == []
    (ds,) = lineage.inputs
    assert (ds.namespace, ds.name) == ("file", table.storage.root)
    assert _facets(ds) == ("1", [("id", "long"), ("day", "string")])


def test_checkpoint_and_backfill_write_the_table_at_their_version(make_table, make_context):
    table = make_table(commits=2)
    op = DeltaCheckpointOperator(task_id="cp", table_uri=table.storage.root)
    op.execute(make_context("cp"))
    (out,) = op.get_openlineage_facets_on_complete(None).outputs
    assert (out.name, out.facets["version"].datasetVersion) == (table.storage.root, "2")
    backfill = DeltaBackfillOperator(task_id="bf", table_uri=table.storage.root)
    backfill.execute(make_context("bf"))
    lineage = backfill.get_openlineage_facets_on_complete(None)
    assert lineage.inputs == [] and lineage.outputs[0].facets["version"].datasetVersion == "2"


@pytest.mark.parametrize("cls", [DeltaMetadataCleanupOperator, DeltaVacuumOperator])
def test_maintenance_dry_runs_only_read_the_table(make_table, make_context, cls):
    table = make_table(commits=1)
    dry = cls(task_id="m", table_uri=table.storage.root)
    dry.execute(make_context("m"))
    lineage = dry.get_openlineage_facets_on_complete(None)
    assert [d.name for d in lineage.inputs] == [table.storage.root] and lineage.outputs == []
    real = cls(task_id="m", table_uri=table.storage.root, dry_run=False)
    real.execute(make_context("m"))
    lineage = real.get_openlineage_facets_on_complete(None)
    assert lineage.inputs == [] and [d.name for d in lineage.outputs] == [table.storage.root]


def test_a_spark_commit_reports_its_input_and_output_statistics(make_table, make_context, tmp_path):
    from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
    source = make_table(commits=1)
    out = DeltaTable.create(str(tmp_path / "out"), pa.schema([("id", pa.int64())]))
    # the metrics a Spark job records with its commit (Delta Spark's names), and its txn
    with out.transaction(operation="WRITE", operation_metrics={"numOutputRows": "3", "numOutputBytes": "512",
                                                               "numFiles": "2"}) as txn:
        txn.set_txn("dag.spark@x", 1)
    version = 1
    op = DeltaSparkSubmitOperator(task_id="spark", output_table_uri=out.uri, transform="identity",
                                  input_table_uri=source.uri, input_version=1)
    report_commit(op, make_context("spark"), out, "dag.spark@x", 1, committed=True,
                  input_table_uri=source.uri, input_version=1)
    lineage = op.get_openlineage_facets_on_complete(None)
    (inp,) = lineage.inputs
    assert (inp.name, inp.facets["version"].datasetVersion) == (source.storage.root, "1")
    (outp,) = lineage.outputs
    assert outp.facets["version"].datasetVersion == str(version)
    stats = outp.outputFacets["outputStatistics"]
    assert (stats.rowCount, stats.size, stats.fileCount) == (3, 512, 2)


def test_the_hook_reports_what_it_writes_and_pins_to_airflows_hook_lineage(make_table, tmp_path, monkeypatch):
    """Tasks that use the hook directly get lineage too: Airflow's collector, our asset factory.

    Airflow hands out a real collector only when a lineage reader (the OpenLineage plugin with a
    transport) is configured, a no-op one otherwise; here the real one is handed out directly.
    """
    from airflow.sdk.lineage import HookLineageCollector

    from airflow_provider_delta.assets import asset_uri_for_table
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.hooks import delta_table
    table = make_table(commits=1)
    out = DeltaTable.create(str(tmp_path / "out"), pa.schema([("id", pa.int64()), ("day", pa.string())]))
    collector = HookLineageCollector()
    monkeypatch.setattr(delta_table, "get_hook_lineage_collector", lambda: collector)
    hook = DeltaTableHook()
    hook.write_snapshot_manifest(table.storage.root, version=1)
    hook.write_table(out.storage.root, pa.table({"id": [1], "day": ["d"]}))
    collected = collector.collected_assets
    assert asset_uri_for_table(table.storage.root) in [a.asset.uri for a in collected.inputs]
    assert asset_uri_for_table(out.storage.root) in [a.asset.uri for a in collected.outputs]
