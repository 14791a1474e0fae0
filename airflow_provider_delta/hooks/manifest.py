"""Snapshot manifests: one table version pinned in a JSON file a PySpark job can read.

Why: a DAG resolves "the table as of ``data_interval_end``" once, in Airflow, and hands
every downstream job the same answer, even if the table moves on meanwhile and even if
the job runs elsewhere. The manifest lists the exact files of that version, so the job
needs no Delta library and does not re-resolve anything.

Format (JSON object, UTF-8; ``format_version`` 1)::

    {
      "format": "delta-snapshot-manifest",
      "format_version": 1,
      "table_uri": "file:///data/orders",        # table root, as a URI
      "table_id": "<metaData.id>",
      "version": 12,                             # the pinned table version
      "timestamp": 1763632800000,                # its commit timestamp, epoch ms (ICT when enabled)
      "timestamp_iso": "2025-11-20T10:00:00.000Z",
      "in_commit_timestamps": true,
      "requested": {"version": null, "timestamp": "2025-11-20T10:00:00+00:00"},
      "protocol": {"minReaderVersion": 1, "minWriterVersion": 2, ...},
      "schema": {"type": "struct", "fields": [...]},   # Delta schema JSON (metaData.schemaString)
      "partition_columns": ["day"],
      "configuration": {"delta.appendOnly": "false", ...},
      "num_files": 2,
      "size_bytes": 12345,
      "num_records": 1000,                       # sum of stats.numRecords (null if any file lacks it)
      "files": [
        {"path": "day=2025-11-20/part-0.parquet",           # as in the log (decoded, relative)
         "uri": "file:///data/orders/day=2025-11-20/part-0.parquet",   # absolute, ready to read
         "partition_values": {"day": "2025-11-20"},         # strings, as the log stores them
         "size": 6172, "modification_time": 1763632790000,
         "stats": {"numRecords": 500, "minValues": {...}, "maxValues": {...}, "nullCount": {...}},
         "deletion_vector": null}                           # descriptor when rows are deleted
      ],
      "job": {"dag_id": ..., "task_id": ..., "run_id": ..., "try_number": ...},
      "created_at": "2025-11-20T10:05:00.000Z"
    }

Files are in log order of ``Snapshot.files()``. A reader must honour ``deletion_vector``
when it is not null (those rows are deleted) and map column names through the schema's
``delta.columnMapping`` metadata when the table uses column mapping.
"""
from __future__ import annotations

import json
import os
import re
import time
import uuid
from typing import TYPE_CHECKING, Any

from ..log import InvalidArgumentError, StorageError
from ..log import file_uri, format_ms
from .arguments import input_manifest
from .config import is_absolute_uri, join_uri, uri_protocol

if TYPE_CHECKING:  # pragma: no cover
    from ..log import Snapshot

MANIFEST_FORMAT = "delta-snapshot-manifest"
MANIFEST_FORMAT_VERSION = 1
#: Where manifests go by default: inside the table root, but under a folder whose name
#: starts with "_", which vacuum never deletes and readers of the table ignore.
MANIFEST_DIR = "_delta_manifests"

_UNSAFE = re.compile(r"[^A-Za-z0-9._=-]+")


def safe_segment(value: Any) -> str:
    """A path segment from a dag/run id: unusual characters become '_' (run ids hold ':' and '+')."""
    s = _UNSAFE.sub("_", str(value)).strip("._") or "_"
    return s[:200]


def default_manifest_uri(table_root: str, version: int, dag_id: str | None, run_id: str | None) -> str:
    """``<table_root>/_delta_manifests/<dag_id>/<run_id>/v<version>.json``."""
    parts = [MANIFEST_DIR]
    if dag_id:
        parts.append(safe_segment(dag_id))
    if run_id:
        parts.append(safe_segment(run_id))
    parts.append(f"v{int(version)}.json")
    return join_uri(table_root, "/".join(parts))


def resolve_manifest_uri(manifest_uri: str, table_root: str) -> str:
    """An explicit manifest location: absolute as given, relative below the table root."""
    manifest_uri = str(manifest_uri).strip()
    if is_absolute_uri(manifest_uri):
        return os.path.expanduser(manifest_uri) if manifest_uri.startswith("~") else manifest_uri
    return join_uri(table_root, manifest_uri)


def _file_uri(table_root: str, path: str) -> str:
    """The file's absolute URI, by the log's one rule (:func:`~..log.file_uri`)."""
    return file_uri(table_root, path)


def _map(value: Any) -> dict[str, Any]:
    """pyarrow map cells arrive as lists of (key, value) tuples."""
    if value is None:
        return {}
    if isinstance(value, dict):
        return dict(value)
    return {k: v for k, v in value}


def build_manifest(snapshot: "Snapshot", table_uri: str, requested: dict[str, Any] | None = None,
                   job: dict[str, Any] | None = None) -> dict[str, Any]:
    """The manifest of ``snapshot`` as a JSON-ready dict (see the module docstring)."""
    files_tbl = snapshot.files()
    cols = set(files_tbl.column_names)
    wanted = [c for c in ("path", "partition_values", "size", "modification_time", "stats",
                          "deletion_vector") if c in cols]
    rows = files_tbl.select(wanted).to_pylist()
    files: list[dict[str, Any]] = []
    total = 0
    records: int | None = 0
    for r in rows:
        stats = None
        if r.get("stats"):
            try:
                stats = json.loads(r["stats"])
            except ValueError:
                stats = None
        n = stats.get("numRecords") if isinstance(stats, dict) else None
        records = (records + int(n)) if (records is not None and isinstance(n, (int, float))) else None
        size = int(r.get("size") or 0)
        total += size
        files.append({
            "path": r["path"],
            "uri": _file_uri(table_uri, r["path"]),
            "partition_values": _map(r.get("partition_values")),
            "size": size,
            "modification_time": r.get("modification_time"),
            "stats": stats,
            "deletion_vector": r.get("deletion_vector"),
        })
    md = snapshot.metadata
    try:
        schema = json.loads(md.schema_string)
    except (TypeError, ValueError):
        schema = md.schema_string
    ts = int(snapshot.timestamp) if snapshot.timestamp is not None else None
    return {
        "format": MANIFEST_FORMAT,
        "format_version": MANIFEST_FORMAT_VERSION,
        "table_uri": table_uri,
        "table_id": md.id,
        "version": int(snapshot.version),
        "timestamp": ts,
        "timestamp_iso": format_ms(ts) if ts is not None else None,
        "in_commit_timestamps": bool(getattr(snapshot, "in_commit_timestamps_enabled", False)),
        "requested": dict(requested or {}),
        "protocol": snapshot.protocol.to_json(),
        "schema": schema,
        "partition_columns": list(snapshot.partition_columns),
        "configuration": dict(md.configuration or {}),
        "num_files": len(files),
        "size_bytes": total,
        "num_records": records if files else 0,
        "files": files,
        "job": dict(job) if job else None,
        "created_at": format_ms(int(time.time() * 1000)),
    }


def write_json(uri: str, document: dict[str, Any], storage_options: dict[str, Any] | None = None) -> str:
    """Write ``document`` at ``uri`` (any fsspec URL or local path) so readers never see half a file.

    Locally through a temporary file and ``os.replace``; on object stores a single PUT is
    already atomic. Returns the URI written. Re-running the same task overwrites the same
    manifest with the same content (modulo ``created_at``), which keeps retries idempotent.
    """
    data = json.dumps(document, indent=None, separators=(",", ":"), default=str).encode("utf-8")
    proto = uri_protocol(uri)
    try:
        if proto == "file":
            path = uri[len("file://"):] if uri.startswith("file://") else uri
            path = os.path.abspath(os.path.expanduser(path))
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex}.tmp")
            with open(tmp, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, path)
            return "file://" + path
        import fsspec   # loaded only for manifests off the local disk (as log.base.storage does)
        fs, path = fsspec.core.url_to_fs(uri, **(storage_options or {}))
        parent = path.rsplit("/", 1)[0]
        try:
            fs.makedirs(parent, exist_ok=True)
        except (OSError, NotImplementedError):
            pass  # object stores have no directories
        fs.pipe_file(path, data)
        return uri
    except (OSError, ValueError) as e:
        raise StorageError(f"cannot write the snapshot manifest to {uri}: {e}") from e


def read_manifest(uri: str, storage_options: dict[str, Any] | None = None) -> dict[str, Any]:
    """Read a manifest back (used by tests and by jobs without Spark).

    ``"None"`` or ``""`` (a snapshot task's ``manifest_uri`` when it wrote none, rendered) is
    refused with :func:`~.arguments.input_manifest`'s error instead of reading a file of that name.
    """
    input_manifest(uri, given=True, name="manifest uri")
    import fsspec   # loaded on first use, as log.base.storage does
    with fsspec.open(uri, "rb", **(storage_options or {})) as f:
        doc = json.loads(f.read().decode("utf-8"))
    if not isinstance(doc, dict) or doc.get("format") != MANIFEST_FORMAT:
        raise InvalidArgumentError(f"{uri} is not a Delta snapshot manifest")
    return doc
