"""The ``delta`` asset scheme and the provider metadata Airflow reads."""
from __future__ import annotations

import json
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from airflow.sdk import Asset

from airflow_provider_delta.assets import asset_uri_for_table, sanitize_uri, table_uri_for_asset, to_asset
from airflow_provider_delta.get_provider_info import get_provider_info


@pytest.mark.parametrize("written,canonical", [
    ("delta:///data/orders", "delta:///data/orders"),
    ("delta:///data//sales/../orders/", "delta:///data/orders"),
    ("delta://localhost/data/orders", "delta:///data/orders"),
    ("delta+file:///data/orders", "delta:///data/orders"),
    ("delta+s3://bucket/wh//orders/", "delta+s3://bucket/wh/orders"),
    ("DELTA+S3://bucket/wh/orders#frag", "delta+s3://bucket/wh/orders"),
])
def test_airflow_normalizes_delta_asset_uris_through_the_provider(written, canonical):
    assert Asset(written).uri == canonical


@pytest.mark.parametrize("bad", ["delta://bucket/orders", "delta:///", "delta+s3:///no-bucket"])
def test_ambiguous_or_empty_delta_uris_are_rejected(bad):
    with pytest.raises(ValueError):
        Asset(bad)


def test_factory_and_table_uri_mapping_agree_with_asset(tmp_path):
    local = str(tmp_path / "orders")
    for table_uri in (local, "file://" + local, local + "/"):
        assert to_asset(table_uri=table_uri).uri == f"delta://{local}" == Asset(f"delta://{local}").uri
    assert asset_uri_for_table("s3://bucket/wh/orders") == "delta+s3://bucket/wh/orders"
    assert table_uri_for_asset("delta+s3://bucket/wh/orders") == "s3://bucket/wh/orders"
    assert table_uri_for_asset(f"delta://{local}") == local
    asset = to_asset(table_uri=local, extra={"team": "sales"}, name="orders")
    assert (asset.name, asset.extra) == ("orders", {"team": "sales"})
    with pytest.raises(ValueError):
        sanitize_uri(urlsplit("s3://bucket/x"))


def test_provider_info_validates_against_airflows_schema():
    import jsonschema

    import airflow
    schema = json.loads((Path(airflow.__file__).parent / "provider_info.schema.json").read_text())
    info = get_provider_info()
    jsonschema.validate(info, schema)
    conn = info["connection-types"][0]
    assert conn["connection-type"] == "delta"
    assert conn["hook-class-name"] == "airflow_provider_delta.hooks.delta_table.DeltaTableHook"
    assert set(conn["conn-fields"]) == {"storage_options", "commit_owner_conn_id", "single_writer"}
    assert conn["ui-field-behaviour"]["relabeling"]["host"] == "Base URI"
    assert "delta" in info["asset-uris"][0]["schemes"]


def test_every_module_and_class_the_provider_names_imports():
    from airflow.sdk._shared.module_loading import import_string
    info = get_provider_info()
    for section in ("hooks", "sensors", "triggers", "operators"):
        for entry in info[section]:
            for module in entry["python-modules"]:
                __import__(module)
    import_string(info["connection-types"][0]["hook-class-name"])
    import_string(info["asset-uris"][0]["handler"])
    import_string(info["asset-uris"][0]["factory"])


def test_public_import_paths():
    from airflow_provider_delta.hooks import DeltaTableHook  # noqa: F401
    from airflow_provider_delta.operators import (DeltaBackfillOperator, DeltaCheckpointOperator,  # noqa: F401
                                                  DeltaMetadataCleanupOperator, DeltaTimeTravelSnapshotOperator,
                                                  DeltaVacuumOperator)
    from airflow_provider_delta.sensors import DeltaCommitSensor  # noqa: F401
    from airflow_provider_delta.triggers import DeltaCommitTrigger  # noqa: F401
