"""A pinned snapshot: exactly the files of one table version, as a Spark job needs them.

Two sources give the same answer: the JSON manifest that
``DeltaTimeTravelSnapshotOperator`` writes (format documented in
``airflow_provider_delta.hooks.manifest``; parsed here again because this layer may
not import Airflow), or the table log itself, opened on the driver. Either way the
job reads a fixed list of files, so the data cannot move under it while it runs.

Each file keeps its deletion vector descriptor, and the table's configuration
keeps its column mapping mode: the reader (``reader.dataframe_of``) drops deleted
rows and reads columns by physical name, or by Parquet field id in mode ``id``. An
unknown mapping mode is refused with UnsupportedFeatureError rather than read wrongly.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..log import InvalidArgumentError, StorageError, UnsupportedFeatureError, file_uri, physical_schema

MANIFEST_FORMAT = "delta-snapshot-manifest"
SUPPORTED_MANIFEST_VERSIONS = (1,)


@dataclass(frozen=True)
class PinnedFile:
    """One data file: absolute URI, partition values (serialized strings keyed as in the log,
    physical names under column mapping), size, live rows, and its deletion vector descriptor."""

    uri: str
    partition_values: dict[str, str | None]
    size: int
    num_records: int | None = None
    deletion_vector: dict[str, Any] | None = None


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
    #: fsspec options to read deletion vector files with (not shown: they may hold secrets)
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def partition_keys(self) -> list[str]:
        """Where each partition column's value is in ``PinnedFile.partition_values``."""
        return _partition_keys(self.schema, self.configuration, self.partition_columns)

    @property
    def num_records(self) -> int | None:
        counts = [f.num_records for f in self.files]
        return None if any(c is None for c in counts) else sum(counts)  # type: ignore[misc]


def _check_readable(schema: dict[str, Any], configuration: dict[str, str], where: str) -> None:
    if not isinstance(schema, dict) or schema.get("type") != "struct" or not isinstance(schema.get("fields"), list):
        raise InvalidArgumentError(f"{where}: the schema is not a Delta struct schema")
    physical_schema(schema, configuration, where)  # refuses a column mapping mode it does not know


def _file_uri(root: str, path: str) -> str:
    """Absolute URI of a log path of the table at ``root`` (a URI or a local path): the log's one rule
    (:func:`~..log.file_uri`; a scheme-less absolute path is on the table's own file system)."""
    return file_uri(root, path)


def _num_records(stats: Any, dv: dict[str, Any] | None) -> int | None:
    """Live rows of a file: ``numRecords`` less the rows its deletion vector removes."""
    if isinstance(stats, str):
        try:
            stats = json.loads(stats)
        except ValueError:
            return None
    n = stats.get("numRecords") if isinstance(stats, dict) else None
    if not isinstance(n, (int, float)) or isinstance(n, bool):
        return None
    return int(n) - int((dv or {}).get("cardinality") or 0)


def _partition_keys(schema: dict[str, Any], configuration: dict[str, str],
                    partition_columns: tuple[str, ...]) -> list[str]:
    """The ``partitionValues`` key of each partition column (its physical name under column mapping)."""
    physical = physical_schema(schema, configuration)
    names = dict(zip((f["name"] for f in schema["fields"]), (f["name"] for f in physical["fields"])))
    return [names.get(c, c) for c in partition_columns]


def _map(value: Any) -> dict[str, str | None]:
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    return {k: v for k, v in value}      # pyarrow map cells are lists of pairs


def from_manifest_document(doc: Any, where: str = "the manifest",
                           storage_options: dict[str, Any] | None = None) -> PinnedSnapshot:
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
    keys = _partition_keys(schema, configuration, partition_columns)
    files = []
    for i, f in enumerate(raw_files):
        if not isinstance(f, dict) or not (f.get("uri") or f.get("path")):
            raise InvalidArgumentError(f"{where}: file entry {i} has neither 'uri' nor 'path'")
        dv = f.get("deletion_vector") or None
        if dv is not None and not isinstance(dv, dict):
            raise InvalidArgumentError(f"{where}: file entry {i} has a deletion_vector that is not an object")
        values = _map(f.get("partition_values"))
        missing = [c for c, k in zip(partition_columns, keys) if k not in values]
        if missing:
            raise InvalidArgumentError(f"{where}: file entry {i} has no partition value for {missing}")
        files.append(PinnedFile(f.get("uri") or _file_uri(table_uri, f["path"]), values,
                                int(f.get("size") or 0), _num_records(f.get("stats"), dv), dv))
    ts = doc.get("timestamp")
    return PinnedSnapshot(table_uri, version, int(ts) if ts is not None else None, schema, partition_columns,
                          tuple(files), configuration, source=where, storage_options=dict(storage_options or {}))


def from_manifest(manifest_uri: str, storage_options: dict[str, Any] | None = None) -> PinnedSnapshot:
    """Read the manifest at ``manifest_uri`` (local path or any fsspec URL)."""
    if not isinstance(manifest_uri, str) or not manifest_uri.strip():
        raise InvalidArgumentError("manifest_uri must be a non-empty string")
    if manifest_uri.strip().lower() in ("none", "null"):      # a missing upstream manifest, rendered to text
        raise InvalidArgumentError(f"manifest_uri is {manifest_uri!r}: the snapshot task it comes from wrote no "
                                   "manifest; pass the table and version instead")
    import fsspec   # loaded on first use, as log.base.storage does
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
    return from_manifest_document(doc, where=f"snapshot manifest {manifest_uri}", storage_options=storage_options)


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
        dv = row.get("deletion_vector")
        files.append(PinnedFile(_file_uri(table.uri, row["path"]), _map(row.get("partition_values")),
                                int(row.get("size") or 0), _num_records(row.get("stats"), dv), dv))
    return PinnedSnapshot(table.uri, snap.version, snap.timestamp, schema, tuple(snap.partition_columns),
                          tuple(files), dict(snap.metadata.configuration), source=where,
                          storage_options=dict(table.storage.storage_options))
