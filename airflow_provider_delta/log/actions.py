"""Delta log actions as small immutable classes, with JSON conversion.

Replay of large logs never builds these objects per file: it works on Arrow
tables (see :mod:`.replay`). These classes exist for what is read once per
snapshot (protocol, metadata) and for what a writer puts into a commit.
Field names in ``to_json`` follow the protocol exactly; unknown fields in
input are ignored, as the protocol requires.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from .errors import CorruptLogError

#: Reader/writer versions and features this implementation understands.
MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

#: Reader features whose presence does not stop us from reading the log.
#: (Data reads of deletion vectors / column mapping are checked separately.)
SUPPORTED_READER_FEATURES = frozenset({
    "columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
    "typeWidening", "typeWidening-preview", "variantType", "variantType-preview",
    "variantShredding-preview", "domainMetadata",
})


def parse_schema_string(schema_string: str | bytes) -> Any:
    """The decoded JSON of a ``metaData.schemaString``; a string that is not JSON is a corrupt log.

    Every reader of the schema string (Arrow conversion, the feature gate) goes
    through here, so a garbage schema is refused the same way everywhere instead
    of escaping as ``json.JSONDecodeError`` from whichever code looked first.
    """
    try:
        return json.loads(schema_string)
    except (ValueError, RecursionError) as e:
        raise CorruptLogError(f"Delta schemaString is not valid JSON: {e}") from None


def _drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


@dataclass(frozen=True)
class Protocol:
    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None = None
    writer_features: tuple[str, ...] | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Protocol":
        rf, wf = d.get("readerFeatures"), d.get("writerFeatures")
        return cls(int(d.get("minReaderVersion", 1)), int(d.get("minWriterVersion", 2)),
                   tuple(rf) if rf is not None else None, tuple(wf) if wf is not None else None)

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"minReaderVersion": self.min_reader_version,
                             "minWriterVersion": self.min_writer_version}
        if self.reader_features is not None:
            d["readerFeatures"] = list(self.reader_features)
        if self.writer_features is not None:
            d["writerFeatures"] = list(self.writer_features)
        return d

    def has_writer_feature(self, name: str) -> bool:
        return self.writer_features is not None and name in self.writer_features

    def has_reader_feature(self, name: str) -> bool:
        return self.reader_features is not None and name in self.reader_features


@dataclass(frozen=True)
class Metadata:
    id: str
    schema_string: str
    partition_columns: tuple[str, ...] = ()
    configuration: dict[str, str] = field(default_factory=dict)
    name: str | None = None
    description: str | None = None
    format_provider: str = "parquet"
    format_options: dict[str, str] = field(default_factory=dict)
    created_time: int | None = None

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> "Metadata":
        fmt = d.get("format") or {}
        return cls(
            id=d.get("id", ""), schema_string=d.get("schemaString", '{"type":"struct","fields":[]}'),
            partition_columns=tuple(d.get("partitionColumns") or ()),
            configuration={k: str(v) for k, v in (d.get("configuration") or {}).items() if v is not None},
            name=d.get("name"), description=d.get("description"),
            format_provider=fmt.get("provider", "parquet"), format_options=dict(fmt.get("options") or {}),
            created_time=d.get("createdTime"))

    def to_json(self) -> dict[str, Any]:
        return _drop_none({
            "id": self.id, "name": self.name, "description": self.description,
            "format": {"provider": self.format_provider, "options": dict(self.format_options)},
            "schemaString": self.schema_string, "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration), "createdTime": self.created_time})

    def with_configuration(self, updates: dict[str, str | None]) -> "Metadata":
        """A copy with properties set (or removed where the value is None)."""
        conf = dict(self.configuration)
        for k, v in updates.items():
            if v is None:
                conf.pop(k, None)
            else:
                conf[k] = str(v)
        return Metadata(self.id, self.schema_string, self.partition_columns, conf, self.name,
                        self.description, self.format_provider, dict(self.format_options), self.created_time)


def encode_path(path: str) -> str:
    """URL-encode a relative data file path for the log, as Delta Spark does (keeps '/', '=')."""
    return quote(path, safe="/=:@$&+,;~-_.!*'()")


@dataclass(frozen=True)
class AddFile:
    path: str                                  # relative to the table root, NOT url-encoded
    size: int
    partition_values: dict[str, str | None] = field(default_factory=dict)
    modification_time: int = 0
    data_change: bool = True
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: dict[str, Any] | None = None
    base_row_id: int | None = None
    default_row_commit_version: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"add": _drop_none({
            "path": encode_path(self.path), "partitionValues": dict(self.partition_values),
            "size": self.size, "modificationTime": self.modification_time, "dataChange": self.data_change,
            "stats": self.stats, "tags": self.tags, "deletionVector": self.deletion_vector,
            "baseRowId": self.base_row_id, "defaultRowCommitVersion": self.default_row_commit_version})}

    def remove(self, deletion_timestamp: int, data_change: bool = True) -> "RemoveFile":
        return RemoveFile(self.path, deletion_timestamp, data_change, True, dict(self.partition_values),
                          self.size, self.stats, self.tags, self.deletion_vector)


@dataclass(frozen=True)
class RemoveFile:
    path: str
    deletion_timestamp: int | None = None
    data_change: bool = True
    extended_file_metadata: bool | None = True
    partition_values: dict[str, str | None] | None = None
    size: int | None = None
    stats: str | None = None
    tags: dict[str, str] | None = None
    deletion_vector: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"remove": _drop_none({
            "path": encode_path(self.path), "deletionTimestamp": self.deletion_timestamp,
            "dataChange": self.data_change, "extendedFileMetadata": self.extended_file_metadata,
            "partitionValues": self.partition_values, "size": self.size, "stats": self.stats,
            "tags": self.tags, "deletionVector": self.deletion_vector})}


@dataclass(frozen=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"txn": _drop_none({"appId": self.app_id, "version": self.version,
                                   "lastUpdated": self.last_updated})}


@dataclass(frozen=True)
class DomainMetadata:
    domain: str
    configuration: str
    removed: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"domainMetadata": {"domain": self.domain, "configuration": self.configuration,
                                   "removed": self.removed}}


def dumps_actions(actions: list[dict[str, Any]]) -> bytes:
    """Newline-delimited JSON for a commit file (one action per line)."""
    return ("\n".join(json.dumps(a, separators=(",", ":")) for a in actions) + "\n").encode()
