"""The protocol and metadata actions as small immutable classes, with JSON conversion.

Every snapshot reads these two. The actions only a writer builds (add, remove, txn,
domain metadata) are in :mod:`.commit_actions`, which a read never imports; replay of
large logs never builds objects per file either: it works on Arrow tables (see
:mod:`.replay`).
Field names in ``to_json`` follow the protocol exactly; unknown fields in
input are ignored, as the protocol requires.
"""
from __future__ import annotations

import json
from typing import Any

from .errors import CorruptLogError
from .records import Record

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


def drop_none(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None}


class Protocol(Record):
    __slots__ = ("min_reader_version", "min_writer_version", "reader_features", "writer_features")
    _defaults = {"reader_features": None, "writer_features": None}
    _frozen = True

    min_reader_version: int
    min_writer_version: int
    reader_features: tuple[str, ...] | None
    writer_features: tuple[str, ...] | None

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


class Metadata(Record):
    __slots__ = ("id", "schema_string", "partition_columns", "configuration", "name", "description",
                 "format_provider", "format_options", "created_time")
    _defaults = {"partition_columns": (), "name": None, "description": None, "format_provider": "parquet",
                 "created_time": None}
    _factories = {"configuration": dict, "format_options": dict}
    _frozen = True

    id: str
    schema_string: str
    partition_columns: tuple[str, ...]
    configuration: dict[str, str]
    name: str | None
    description: str | None
    format_provider: str
    format_options: dict[str, str]
    created_time: int | None

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
        return drop_none({
            "id": self.id, "name": self.name, "description": self.description,
            "format": {"provider": self.format_provider, "options": dict(self.format_options)},
            "schemaString": self.schema_string, "partitionColumns": list(self.partition_columns),
            "configuration": dict(self.configuration), "createdTime": self.created_time})

    def with_schema(self, schema: dict[str, Any]) -> "Metadata":
        """A copy with the schema replaced by ``schema`` (a Delta schema as a dict), serialized compactly."""
        return Metadata(self.id, json.dumps(schema, separators=(",", ":")), self.partition_columns,
                        dict(self.configuration), self.name, self.description, self.format_provider,
                        dict(self.format_options), self.created_time)

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
