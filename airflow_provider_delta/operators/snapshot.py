"""``DeltaTimeTravelSnapshotOperator``: pin a table version for downstream jobs.

Resolves "the table as of <time>" once, in Airflow, and writes a manifest listing
that version's files (format: :mod:`airflow_provider_delta.hooks.manifest`), so
every PySpark job of the run reads exactly the same data however the table moves
on meanwhile.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..hooks.arguments import check_flags, flag, optional_value
from .base import DeltaVersionAsOfOperator, job_info

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


class DeltaTimeTravelSnapshotOperator(DeltaVersionAsOfOperator):
    """Resolve a version and write its snapshot manifest.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param version: pin this version (templated)
    :param timestamp: or pin the version as of this time (templated, e.g.
        ``"{{ data_interval_end }}"``; epoch ms, datetime or ISO-8601), resolved by the
        in-commit-timestamp rules; with neither, the latest version is pinned
    :param manifest_uri: where to write the manifest (templated; any fsspec URL or path; a
        relative one is below the table root). Default:
        ``<table root>/_delta_manifests/<dag_id>/<run_id>/v<version>.json``; when the task may
        not write into the table folder there, the manifest is skipped with a warning
        (``manifest_uri`` None in the result) instead of failing a read-only task
    :param write_manifest: False pins the version only, writing nothing (default True)
    :param allow_after_latest: a timestamp after the latest commit pins the latest version
        (default True; False raises TimestampOutOfRangeError as Delta Spark does); a bool or
        true/false/1/0/yes/no
    :param delta_conn_id: ``delta`` connection

    Returns (XCom ``return_value``) ``{"version", "timestamp", "manifest_uri", "num_files",
    "table_uri"}``; ``timestamp`` is the pinned commit's timestamp in epoch ms.
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "version", "timestamp", "manifest_uri",
                                      "allow_after_latest", "write_manifest")
    lineage_role = "input"      # it reads the pinned version; the manifest is not a table

    def __init__(self, *, table_uri: str, version: int | str | None = None, timestamp: Any = None,
                 manifest_uri: str | None = None, allow_after_latest: bool = True, write_manifest: bool = True,
                 **kwargs: Any) -> None:
        check_flags(allow_after_latest=allow_after_latest, write_manifest=write_manifest)
        super().__init__(table_uri=table_uri, version=version, timestamp=timestamp, **kwargs)
        self.manifest_uri = manifest_uri
        self.allow_after_latest = allow_after_latest
        self.write_manifest = write_manifest

    def execute(self, context: "Context") -> dict[str, Any]:
        version, timestamp = self.version_as_of()
        allow_after_latest = flag(self.allow_after_latest, "allow_after_latest")
        write_manifest = flag(self.write_manifest, "write_manifest")
        result = self.hook.write_snapshot_manifest(
            self.table_uri, version=version, timestamp=timestamp,
            manifest_uri=optional_value(self.manifest_uri), job=job_info(context),
            allow_after_latest=allow_after_latest, write=write_manifest)
        self.log.info("Pinned %s at version %s (%s files): manifest %s", result["table_uri"],
                      result["version"], result["num_files"], result["manifest_uri"])
        self.emit_asset_events(context, {"version": result["version"], "timestamp": result["timestamp"],
                                         "manifest_uri": result["manifest_uri"]})
        return result
