"""Provider metadata Airflow reads through the ``apache_airflow_provider`` entry point.

Declares the ``delta`` connection type with its form fields (``conn-fields`` and
``ui-field-behaviour``: the declarative way since Airflow 3.2, so the hook needs no
UI methods), the modules holding hooks, sensors, triggers and operators, and the
``delta`` asset URI scheme (see :mod:`airflow_provider_delta.assets`).
"""
from __future__ import annotations

from typing import Any

from . import __version__
from .assets import SCHEMES

INTEGRATION = "Delta Lake"


def get_provider_info() -> dict[str, Any]:
    return {
        "package-name": "airflow-provider-delta",
        "name": "Delta Lake",
        "description": "Delta Lake tables in Airflow: a pure-Python Delta transaction log, commit "
                       "sensors, snapshot, checkpoint, backfill and maintenance operators, and "
                       "exactly-once PySpark and Delta Spark jobs.",
        "versions": [__version__],
        "integrations": [{
            "integration-name": INTEGRATION,
            "external-doc-url": "https://delta.io/",
            "tags": ["software"],
        }],
        "hooks": [{"integration-name": INTEGRATION,
                   "python-modules": ["airflow_provider_delta.hooks.delta_table"]}],
        "sensors": [{"integration-name": INTEGRATION,
                     "python-modules": ["airflow_provider_delta.sensors.delta_commit"]}],
        "triggers": [{"integration-name": INTEGRATION,
                      "python-modules": ["airflow_provider_delta.triggers.delta_commit",
                                         "airflow_provider_delta.triggers.delta_commit_event"]}],
        "operators": [{"integration-name": INTEGRATION,
                       "python-modules": ["airflow_provider_delta.operators.backfill",
                                          "airflow_provider_delta.operators.checkpoint",
                                          "airflow_provider_delta.operators.snapshot",
                                          "airflow_provider_delta.operators.maintenance",
                                          "airflow_provider_delta.operators.restore",
                                          "airflow_provider_delta.operators.clone",
                                          "airflow_provider_delta.operators.optimize",
                                          "airflow_provider_delta.operators.spark",
                                          "airflow_provider_delta.operators.delta_spark"]}],
        "asset-uris": [{
            "schemes": list(SCHEMES),
            "handler": "airflow_provider_delta.assets.sanitize_uri",
            "factory": "airflow_provider_delta.assets.to_asset",
            "to_openlineage_converter": "airflow_provider_delta.lineage.asset_to_openlineage",
        }],
        "task-decorators": [{
            "class-name": "airflow_provider_delta.decorators.delta_snapshot.delta_snapshot_task",
            "name": "delta_snapshot",
        }],
        "connection-types": [{
            "connection-type": "delta",
            "hook-class-name": "airflow_provider_delta.hooks.delta_table.DeltaTableHook",
            "hook-name": "Delta Lake",
            "conn-fields": {
                "storage_options": {
                    "label": "Storage options",
                    "description": "JSON object passed to fsspec, e.g. {\"endpoint_url\": "
                                   "\"http://minio:9000\"}. Login and password are added as the "
                                   "storage's credentials (s3: key/secret, abfs: account_name/"
                                   "account_key, gs: project/token, others: username/password).",
                    "schema": {"type": ["object", "null"]},
                },
                "commit_owner_conn_id": {
                    "label": "Commit owner connection",
                    "description": "Airflow connection (postgres, mysql or sqlite) of the SQL commit "
                                   "owner of managed-commit tables.",
                    "schema": {"type": ["string", "null"]},
                },
                "single_writer": {
                    "label": "Single writer",
                    "description": "Allow commits on storage without atomic put-if-absent. Only safe "
                                   "if exactly one process ever writes these tables.",
                    "schema": {"type": ["boolean", "null"], "default": False},
                },
            },
            "ui-field-behaviour": {
                "hidden-fields": ["schema", "port"],
                "relabeling": {"host": "Base URI", "login": "Access key / user",
                               "password": "Secret key / password"},
                "placeholders": {"host": "s3://bucket/warehouse or /data/lake",
                                 "extra": "{\"storage_options\": {}, \"commit_owner\": "
                                          "{\"type\": \"sql\", \"conn_id\": \"owner_db\"}}"},
            },
        }],
    }
