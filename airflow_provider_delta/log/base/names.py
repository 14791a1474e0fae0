"""Names of files in ``_delta_log`` and what they mean.

The protocol encodes everything in file names: ``<v>.json`` commits,
``<v>.checkpoint.parquet`` classic checkpoints, ``<v>.checkpoint.<i>.<n>.parquet``
multi-part parts, ``<v>.checkpoint.<uuid>.(json|parquet)`` v2 checkpoints,
``<x>.<y>.compacted.json`` log compactions, ``_commits/<v>.<uuid>.json``
un-backfilled commits (managed commits) and ``_staged_commits/...`` (catalog-managed).
Anything else (``.crc``, temporary files, ``_last_checkpoint``) is not a log entry.
"""
from __future__ import annotations

import re
from typing import NamedTuple

LOG_DIR = "_delta_log"
COMMITS_DIR = "_delta_log/_commits"
STAGED_COMMITS_DIR = "_delta_log/_staged_commits"
SIDECARS_DIR = "_delta_log/_sidecars"
LAST_CHECKPOINT = "_delta_log/_last_checkpoint"

_COMMIT = re.compile(r"^(\d{20})\.json$")
_UUID_COMMIT = re.compile(r"^(\d{20})\.([0-9a-fA-F-]{36})\.json$")
_CLASSIC_CP = re.compile(r"^(\d{20})\.checkpoint\.parquet$")
_MULTI_CP = re.compile(r"^(\d{20})\.checkpoint\.(\d{10})\.(\d{10})\.parquet$")
_V2_CP = re.compile(r"^(\d{20})\.checkpoint\.([0-9a-fA-F-]{36})\.(json|parquet)$")
_COMPACTED = re.compile(r"^(\d{20})\.(\d{20})\.compacted\.json$")


class LogFile(NamedTuple):
    """One parsed log file. ``kind`` is commit, checkpoint or compaction.

    For checkpoints ``part``/``num_parts`` are set for multi-part ones and
    ``uuid`` for v2 (UUID-named) ones; ``end_version`` is set for compactions.
    ``path`` is the storage path of the file (absolute, protocol-less). A named tuple,
    like :class:`~.file_info.FileInfo`: one is made per file of every listing.
    """

    kind: str
    version: int
    path: str
    size: int = 0
    mtime_ms: int = 0
    part: int | None = None
    num_parts: int | None = None
    uuid: str | None = None
    end_version: int | None = None
    fmt: str = "json"

    @property
    def name(self) -> str:
        return self.path.rstrip("/").rsplit("/", 1)[-1]


def commit_name(version: int) -> str:
    return f"{version:020d}.json"


def commit_path(version: int) -> str:
    """Relative path of the backfilled commit of ``version``."""
    return f"{LOG_DIR}/{version:020d}.json"


def uuid_commit_name(version: int, uuid: str) -> str:
    return f"{version:020d}.{uuid}.json"


def classic_checkpoint_path(version: int) -> str:
    return f"{LOG_DIR}/{version:020d}.checkpoint.parquet"


def multipart_checkpoint_path(version: int, part: int, num_parts: int) -> str:
    return f"{LOG_DIR}/{version:020d}.checkpoint.{part:010d}.{num_parts:010d}.parquet"


def v2_checkpoint_path(version: int, uuid: str, fmt: str) -> str:
    """``_delta_log/<v>.checkpoint.<uuid>.<json|parquet>``: a UUID-named (V2 spec) checkpoint."""
    return f"{LOG_DIR}/{version:020d}.checkpoint.{uuid}.{fmt}"


def sidecar_path(name: str) -> str:
    return f"{SIDECARS_DIR}/{name}"


def compaction_path(start: int, end: int) -> str:
    return f"{LOG_DIR}/{start:020d}.{end:020d}.compacted.json"


def parse_log_name(name: str, path: str, size: int = 0, mtime_ms: int = 0) -> LogFile | None:
    """Parse a file name found directly in ``_delta_log``; None for non-log files."""
    m = _COMMIT.match(name)
    if m:
        return LogFile("commit", int(m.group(1)), path, size, mtime_ms)
    m = _CLASSIC_CP.match(name)
    if m:
        return LogFile("checkpoint", int(m.group(1)), path, size, mtime_ms, fmt="parquet")
    m = _MULTI_CP.match(name)
    if m:
        return LogFile("checkpoint", int(m.group(1)), path, size, mtime_ms,
                       part=int(m.group(2)), num_parts=int(m.group(3)), fmt="parquet")
    m = _V2_CP.match(name)
    if m:
        return LogFile("checkpoint", int(m.group(1)), path, size, mtime_ms, uuid=m.group(2), fmt=m.group(3))
    m = _COMPACTED.match(name)
    if m:
        return LogFile("compaction", int(m.group(1)), path, size, mtime_ms, end_version=int(m.group(2)))
    return None


def parse_uuid_commit_name(name: str) -> tuple[int, str] | None:
    """(version, uuid) of an un-backfilled ``<v>.<uuid>.json`` commit file name."""
    m = _UUID_COMMIT.match(name)
    return (int(m.group(1)), m.group(2)) if m else None
