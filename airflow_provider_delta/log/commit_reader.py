"""Reading one commit file: bytes from storage, then newline-delimited JSON actions.

A line that is not JSON, or JSON that is not an object, is a :class:`CorruptLogError`
naming the file and the line; a commit file that vanished between listing and
reading (cleanup or backfill ran concurrently) is a :class:`VersionNotFoundError`.
"""
from __future__ import annotations

import json
from typing import Any

from .errors import CorruptLogError, VersionNotFoundError
from .listing import LogListing
from .names import LogFile
from .storage import Storage


def read_commit_file(storage: Storage, lf: LogFile) -> bytes:
    try:
        return storage.read_bytes(lf.path)
    except FileNotFoundError:
        raise VersionNotFoundError(f"commit file {lf.path} disappeared while reading {storage.uri} "
                                   "(metadata cleanup or backfill ran concurrently?)", version=lf.version)


def parse_json_lines(data: bytes, path: str) -> list[dict[str, Any]]:
    """Parse one newline-delimited JSON log file; a bad line is a CorruptLogError naming file and line."""
    out: list[dict[str, Any]] = []
    for i, line in enumerate(data.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:    # also invalid UTF-8 (UnicodeDecodeError is a ValueError)
            raise CorruptLogError(f"{path}, line {i}: not valid JSON ({e})", path=path, line=i) from None
        except RecursionError:
            raise CorruptLogError(f"{path}, line {i}: JSON nested too deeply for a Delta action",
                                  path=path, line=i) from None
        if not isinstance(obj, dict):
            raise CorruptLogError(f"{path}, line {i}: an action must be a JSON object", path=path, line=i)
        out.append(obj)
    return out


def read_listed_commit(storage: Storage, listing: LogListing, version: int) -> list[dict[str, Any]]:
    """The actions of commit ``version`` as found by ``listing`` (backfilled or the commit source's),
    for callers that already listed the log and should not list it again per commit."""
    lf = listing.commits.get(version)
    if lf is None:
        earliest, latest = listing.earliest_recreatable(), listing.latest
        raise VersionNotFoundError(
            f"commit {version} not found in {storage.uri} (available: {earliest} to {latest})",
            version=version, earliest=earliest, latest=latest)
    return parse_json_lines(read_commit_file(storage, lf), lf.path)


def read_blobs(storage: Storage, commits: list[LogFile]) -> list[tuple[int, bytes, str]]:
    """``(version, bytes, path)`` of each commit, fetched in one request on object stores."""
    if not storage.is_local and len(commits) > 1:
        try:
            data = storage.fs.cat([c.path for c in commits])
            return [(c.version, data[c.path], c.path) for c in commits]
        except (KeyError, FileNotFoundError):
            pass
    return [(c.version, read_commit_file(storage, c), c.path) for c in commits]
