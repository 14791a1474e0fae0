"""The actions a writer puts into a commit besides protocol and metadata: add, remove,
txn and domain metadata, with their JSON form and the commit file's line format.

Kept apart from :mod:`.actions` so that opening a snapshot, which builds none of them,
does not pay for defining them (each class costs its share of a cold task's start).
Field names in ``to_json`` follow the protocol exactly.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .actions import drop_none
from .path_spelling import log_spelling


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
    #: the path as the log spells it, for an add of a file the log already names (a restore,
    #: a DV update); None for a new file (then ``path`` is encoded): see :mod:`.path_spelling`
    log_path: str | None = None
    #: written by this writer under a new unique name (uuid4) for this commit, so no log can have named it
    #: before: the hole check after the put takes a checkpoint naming it as built on the commit. Never
    #: written to the log; an add without it is new only if the read snapshot names no file of its path
    fresh: bool = field(default=False, compare=False)

    def to_json(self) -> dict[str, Any]:
        return {"add": drop_none({
            "path": log_spelling(self.path, self.log_path), "partitionValues": dict(self.partition_values),
            "size": self.size, "modificationTime": self.modification_time, "dataChange": self.data_change,
            "stats": self.stats, "tags": self.tags, "deletionVector": self.deletion_vector,
            "baseRowId": self.base_row_id, "defaultRowCommitVersion": self.default_row_commit_version})}

    def remove(self, deletion_timestamp: int, data_change: bool = True) -> "RemoveFile":
        return RemoveFile(self.path, deletion_timestamp, data_change, True, dict(self.partition_values),
                          self.size, self.stats, self.tags, self.deletion_vector, self.log_path)


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
    #: the path as the live add spells it in the log (a remove must match it to the letter);
    #: None: filled in from the snapshot when the transaction commits (:mod:`.path_spelling`)
    log_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"remove": drop_none({
            "path": log_spelling(self.path, self.log_path), "deletionTimestamp": self.deletion_timestamp,
            "dataChange": self.data_change, "extendedFileMetadata": self.extended_file_metadata,
            "partitionValues": self.partition_values, "size": self.size, "stats": self.stats,
            "tags": self.tags, "deletionVector": self.deletion_vector})}


@dataclass(frozen=True)
class Txn:
    app_id: str
    version: int
    last_updated: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {"txn": drop_none({"appId": self.app_id, "version": self.version,
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
