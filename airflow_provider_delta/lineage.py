"""OpenLineage for Delta tables: dataset names by the OpenLineage naming spec, version, schema, statistics.

A Delta table is one dataset whatever its version; the version is the dataset's
``version`` facet. Names follow the OpenLineage dataset naming spec for the storage
the table lives on (namespace = the storage, name = the table path):

=========================  =================================================  ==========================
table URI                  namespace                                          name
=========================  =================================================  ==========================
``/data/orders``           ``file``                                           ``/data/orders``
``s3://bkt/w/orders``      ``s3://bkt`` (also for ``s3a``)                    ``w/orders``
``gs://bkt/w/orders``      ``gs://bkt`` (also for ``gcs``)                    ``w/orders``
``abfss://c@acct.dfs...``  ``abfss://c@acct.dfs.core.windows.net``            ``w/orders``
``az://c/w/orders``        ``abfss://c@<account_name>.dfs.core.windows.net``  ``w/orders``
``hdfs://nn:8020/w/o``     ``hdfs://nn:8020``                                 ``/w/o``
``sftp://u:pw@h:22/w/o``   ``sftp://h:22`` (no user information)              ``/w/o``
=========================  =================================================  ==========================

``apache-airflow-providers-openlineage`` is optional (extra ``openlineage``): its classes
are imported only when Airflow asks for lineage, so nothing here costs a task without it.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Iterable
from urllib.parse import urlsplit

from .assets import table_uri_for_asset
from .log.read.data_paths import location_of, split_uri

if TYPE_CHECKING:  # pragma: no cover
    from .log import DeltaTable

def dataset_name(table_uri: str, storage_options: dict[str, Any] | None = None) -> tuple[str, str]:
    """``(namespace, name)`` of the table at ``table_uri`` by the OpenLineage naming spec."""
    parsed = urlsplit(str(table_uri))
    scheme = parsed.scheme.lower()
    if len(scheme) <= 1 or scheme == "file":          # a local path (or a Windows drive letter)
        return "file", os.path.abspath(parsed.path if scheme == "file" else str(table_uri))
    path = parsed.path.rstrip("/")
    # the place only: no user information (sftp://u:<password>@host holds a credential), as the naming spec's
    # namespaces are scheme://{host}:{port}
    place = parsed.netloc.rpartition("@")[2]
    if scheme in ("s3", "s3a", "s3n"):
        return f"s3://{place}", path.lstrip("/")
    if scheme in ("gs", "gcs"):
        return f"gs://{place}", path.lstrip("/")
    if scheme in ("abfs", "abfss", "az", "adl"):
        return _adls_dataset_name(str(table_uri), storage_options)
    return f"{scheme}://{place}", path or "/"


def _adls_dataset_name(table_uri: str, storage_options: dict[str, Any] | None) -> tuple[str, str]:
    """``abfss://<container>@<account>.dfs.<cloud>`` and the path: the account as the storage layer knows
    it (:func:`~.log.read.data_paths.location_of`: the URI's DFS or Blob host, else the options' account
    or connection string); ``abfss://<container>`` when neither names one. ``adl://`` is named alike."""
    parts = split_uri(table_uri)
    assert parts is not None, "an abfs/abfss/az/adl URI"
    location = location_of(parts._replace(scheme="abfss"), storage_options)   # adl: in the abfss namespace too
    container, _, account_cloud = (location.authority or location.written).partition("@")
    account, _, cloud = account_cloud.partition(".")
    namespace = f"abfss://{container}@{account}.dfs.{cloud}" if account_cloud else f"abfss://{container}"
    return namespace, location.path.lstrip("/")


def asset_to_openlineage(asset: Any, lineage_context: Any = None) -> Any:
    """``to_openlineage_converter`` of the ``delta`` asset scheme: the asset's table as a dataset."""
    from airflow.providers.common.compat.openlineage.facet import Dataset
    namespace, name = dataset_name(table_uri_for_asset(asset.uri))
    return Dataset(namespace=namespace, name=name)


def _schema_fields(fields: list[dict[str, Any]]) -> list[Any]:
    """Delta schema fields (JSON) as OpenLineage schema fields, structs nested, types as Delta names."""
    from airflow.providers.common.compat.openlineage.facet import SchemaDatasetFacetFields
    out = []
    for f in fields:
        kind = f.get("type")
        if isinstance(kind, dict):
            nested = _schema_fields(kind.get("fields") or []) if kind.get("type") == "struct" else []
            out.append(SchemaDatasetFacetFields(name=f["name"], type=str(kind.get("type")), fields=nested,
                                                description=(f.get("metadata") or {}).get("comment")))
        else:
            out.append(SchemaDatasetFacetFields(name=f["name"], type=str(kind),
                                                description=(f.get("metadata") or {}).get("comment")))
    return out


def output_statistics(table: "DeltaTable", version: int) -> dict[str, int]:
    """Rows, bytes and files a commit added, from its commitInfo.operationMetrics (Delta Spark's names)."""
    info = next((a["commitInfo"] for a in table.read_commit(version) if isinstance(a.get("commitInfo"), dict)), {})
    metrics = info.get("operationMetrics") or {}
    stats = {}
    for ours, theirs in (("rowCount", "numOutputRows"), ("size", "numOutputBytes"), ("fileCount", "numFiles")):
        try:
            stats[ours] = int(metrics[theirs])
        except (KeyError, TypeError, ValueError):
            pass
    return stats


def table_dataset(table: "DeltaTable", version: int | None, output: bool,
                  statistics: dict[str, int] | None = None) -> Any:
    """An OpenLineage input or output dataset: the table, its version, schema and (outputs) statistics."""
    from airflow.providers.common.compat.openlineage.facet import (InputDataset, OutputDataset,
                                                                    OutputStatisticsOutputDatasetFacet,
                                                                    SchemaDatasetFacet)
    from openlineage.client.facet_v2 import dataset_version_dataset
    namespace, name = dataset_name(table.uri, table.storage.storage_options)
    facets: dict[str, Any] = {}
    if version is not None:
        snap = table.snapshot(version=version)
        facets["version"] = dataset_version_dataset.DatasetVersionDatasetFacet(datasetVersion=str(version))
        schema = json.loads(snap.metadata.schema_string)
        facets["schema"] = SchemaDatasetFacet(fields=_schema_fields(schema.get("fields") or []))
    if not output:
        return InputDataset(namespace=namespace, name=name, facets=facets)
    output_facets = {}
    if statistics:
        output_facets["outputStatistics"] = OutputStatisticsOutputDatasetFacet(**statistics)
    return OutputDataset(namespace=namespace, name=name, facets=facets, outputFacets=output_facets)


def operator_lineage(inputs: Iterable[tuple["DeltaTable", int | None]],
                     outputs: Iterable[tuple["DeltaTable", int | None, dict[str, int] | None]]) -> Any:
    """The ``OperatorLineage`` of a Delta task: what it read and what it wrote, at which versions."""
    from airflow.providers.openlineage.extractors import OperatorLineage
    return OperatorLineage(inputs=[table_dataset(t, v, output=False) for t, v in inputs],
                           outputs=[table_dataset(t, v, output=True, statistics=s) for t, v, s in outputs])
