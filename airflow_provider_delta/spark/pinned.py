"""A pinned snapshot: exactly the files of one table version, as a Spark job needs them.

Two sources give the same answer: the JSON manifest that
``DeltaTimeTravelSnapshotOperator`` writes (format documented in
``airflow_provider_delta.hooks.manifest``; parsed here again because this layer may
not import Airflow), or the table log itself, opened on the driver. Either way the
job reads a fixed list of files, so the data cannot move under it while it runs.

Only what plain parquet reading can honour is accepted: files with deletion
vectors and tables with column mapping are refused with UnsupportedFeatureError
rather than read wrongly.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any

from ..log import InvalidArgumentError, StorageError, UnsupportedFeatureError, column_mapping_mode

MANIFEST_FORMAT = "delta-snapshot-manifest"
SUPPORTED_MANIFEST_VERSIONS = (1,)


@dataclass(frozen=True)
class PinnedFile:
    """One data file: absolute URI, partition values (serialized strings, as in the log), size."""

    uri: str
    partition_values: dict[str, str | None]
    size: int
    num_records: int | None = None


@dataclass(frozen=True)
class PinnedSnapshot:
    """Everything a job needs to read one version: schema (Delta JSON), partitioning, files."""

    table_uri: str
    version: int
    timestamp: int | None
    schema: dict[str, Any]
    partition_columns: tuple[str, ...]
    files: tuple[PinnedFile, ...]
    configuration: dict[str, str] = field(default_factory=dict)
    source: str = ""

    @property
    def num_records(self) -> int | None:
        counts = [f.num_records for f in self.files]
        return None if any(c is None for c in counts) else sum(counts)  # type: ignore[misc]


def _check_readable(schema: dict[str, Any], configuration: dict[str, str], where: str) -> None:
    mode = column_mapping_mode(configuration)
    if mode != "none":
        raise UnsupportedFeatureError(
            f"{where} uses column mapping (mode {mode!r}); its data files store physical column names "
            "that a plain parquet read does not map back", feature="columnMapping")
    if not isinstance(schema, dict) or schema.get("type") != "struct" or not isinstance(schema.get("fields"), list):
        raise InvalidArgumentError(f"{where}: the schema is not a Delta struct schema")


def _file_uri(root: str, path: str) -> str:
    """Absolute URI of a log path relative to ``root`` (a URI or an absolute local path)."""
    if "://" in path or path.startswith("file:"):
        return path
    if "://" not in root and not root.startswith("file:"):
        root = "file://" + os.path.abspath(root)
    return root.rstrip("/") + "/" + path.lstrip("/")


def _num_records(stats: Any) -> int | None:
    if isinstance(stats, str):
        try:
            stats = json.loads(stats)
        except ValueError:
            return None
    n = stats.get("numRecords") if isinstance(stats, dict) else None
    return int(n) if isinstance(n, (int, float)) and not isinstance(n, bool) else None


def _map(value: Any) -> dict[str, str | None]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    return {k: v for k, v in value}      # pyarrow map cells are lists of pairs


def from_manifest_document(doc: Any, where: str = "the manifest") -> PinnedSnapshot:
    """Validate a parsed manifest and turn it into a :class:`PinnedSnapshot`."""
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise InvalidArgumentError(f"{where} is not a Delta snapshot manifest (format {MANIFEST_FORMAT!r})")
    if doc.get("format_version") not in SUPPORTED_MANIFEST_VERSIONS:
        raise UnsupportedFeatureError(
            f"{where} has manifest format_version {doc.get('format_version')!r}; this reader supports "
            f"{list(SUPPORTED_MANIFEST_VERSIONS)}", feature="manifestFormatVersion")
    try:
        table_uri = str(doc["table_uri"])
        version = int(doc["version"])
        schema = doc["schema"]
        raw_files = doc["files"]
    except (KeyError, TypeError, ValueError) as e:
        raise InvalidArgumentError(f"{where} lacks a valid {e} entry") from None
    if isinstance(schema, str):
        schema = json.loads(schema)
    configuration = {str(k): str(v) for k, v in (doc.get("configuration") or {}).items()}
    _check_readable(schema, configuration, where)
    partition_columns = tuple(doc.get("partition_columns") or ())
    files = []
    for i, f in enumerate(raw_files):
        if not isinstance(f, dict) or not (f.get("uri") or f.get("path")):
            raise InvalidArgumentError(f"{where}: file entry {i} has neither 'uri' nor 'path'")
        if f.get("deletion_vector"):
            raise UnsupportedFeatureError(
                f"{where}: file {f.get('path') or f.get('uri')} has a deletion vector (deleted rows); reading it "
                "as plain parquet would resurrect them", feature="deletionVectors")
        values = _map(f.get("partition_values"))
        missing = [c for c in partition_columns if c not in values]
        if missing:
            raise InvalidArgumentError(f"{where}: file entry {i} has no partition value for {missing}")
        files.append(PinnedFile(f.get("uri") or _file_uri(table_uri, f["path"]), values,
                                int(f.get("size") or 0), _num_records(f.get("stats"))))
    ts = doc.get("timestamp")
    return PinnedSnapshot(table_uri, version, int(ts) if ts is not None else None, schema, partition_columns,
                          tuple(files), configuration, source=where)


def from_manifest(manifest_uri: str, storage_options: dict[str, Any] | None = None) -> PinnedSnapshot:
    """Read the manifest at ``manifest_uri`` (local path or any fsspec URL)."""
    if not isinstance(manifest_uri, str) or not manifest_uri.strip():
        raise InvalidArgumentError("manifest_uri must be a non-empty string")
    import fsspec
    try:
        with fsspec.open(manifest_uri, "rb", **(storage_options or {})) as f:
            data = f.read()
    except FileNotFoundError:
        raise InvalidArgumentError(f"snapshot manifest {manifest_uri} does not exist") from None
    except OSError as e:
        raise StorageError(f"cannot read snapshot manifest {manifest_uri}: {e}") from e
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        raise InvalidArgumentError(f"snapshot manifest {manifest_uri} is not valid JSON: {e}") from None
    return from_manifest_document(doc, where=f"snapshot manifest {manifest_uri}")


def from_table(table: Any, version: int | None = None) -> PinnedSnapshot:
    """Pin ``version`` (default: the latest) of an open :class:`DeltaTable`, on the driver."""
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise InvalidArgumentError(f"version must be a non-negative integer, got {version!r}")
    snap = table.snapshot(version=version)
    schema = json.loads(snap.metadata.schema_string)
    where = f"table {table.uri} at version {snap.version}"
    _check_readable(schema, dict(snap.metadata.configuration), where)
    files_tbl = snap.files()
    cols = [c for c in ("path", "partition_values", "size", "stats", "deletion_vector")
            if c in files_tbl.column_names]
    files = []
    for row in files_tbl.select(cols).to_pylist():
        if row.get("deletion_vector"):
            raise UnsupportedFeatureError(
                f"{where}: file {row['path']} has a deletion vector (deleted rows); reading it as plain "
                "parquet would resurrect them", feature="deletionVectors")
        files.append(PinnedFile(_file_uri(table.uri, row["path"]), _map(row.get("partition_values")),
                                int(row.get("size") or 0), _num_records(row.get("stats"))))
    return PinnedSnapshot(table.uri, snap.version, snap.timestamp, schema, tuple(snap.partition_columns),
                          tuple(files), dict(snap.metadata.configuration), source=where)
