"""Reading one commit file: bytes from storage, then newline-delimited JSON actions.

A line that is not JSON, or JSON that is not an object, is a :class:`CorruptLogError`
naming the file and the line; a commit file that vanished between listing and
reading (cleanup or backfill ran concurrently) is a :class:`VersionNotFoundError`.
"""
from __future__ import annotations

import json
from typing import Any, Iterable, Iterator

from ..base.errors import CorruptLogError, VersionNotFoundError
from .listing import LogListing
from ..base.names import LogFile
from ..base.storage import Storage


def read_commit_file(storage: Storage, lf: LogFile) -> bytes:
    try:
        return storage.read_bytes(lf.path)
    except FileNotFoundError:
        raise _vanished(storage, lf) from None


def _vanished(storage: Storage, lf: LogFile) -> VersionNotFoundError:
    return VersionNotFoundError(f"commit file {lf.path} disappeared while reading {storage.uri} "
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


class CommitBlobs:
    """The bytes of consecutive commits, in log order, in one buffer; each commit that has
    any bytes ends with a newline.

    Replay hands a snapshot's commits to Arrow's JSON reader as one buffer, and a table
    without a recent checkpoint has hundreds of them. Local commit files are read straight
    into their place in that buffer: one copy of the log, where a bytes object per file
    and then their join cost three passes over the memory (page faults included, a tenth
    of a cold read of a 1,000-commit log). Scans that look for a few lines (protocol,
    metaData) search the buffer between ``span(i)`` bounds. Iterating or indexing gives
    ``(version, bytes, path)`` with a copy of one commit, for callers that want that.
    """

    __slots__ = ("buffer", "bounds", "versions", "paths")

    def __init__(self, buffer: bytes | bytearray, bounds: list[int], versions: list[int], paths: list[str]):
        self.buffer = buffer
        self.bounds = bounds          # commit i is buffer[bounds[i]:bounds[i + 1]]
        self.versions = versions
        self.paths = paths

    @classmethod
    def join(cls, blobs: Iterable[tuple[int, bytes, str]]) -> "CommitBlobs":
        """From separate ``(version, bytes, path)`` (object stores, tests, re-parses)."""
        parts, bounds, versions, paths = [], [0], [], []
        for version, data, path in blobs:
            if data and not data.endswith(b"\n"):
                data += b"\n"
            parts.append(data)
            bounds.append(bounds[-1] + len(data))
            versions.append(version)
            paths.append(path)
        return cls(b"".join(parts), bounds, versions, paths)

    @classmethod
    def of(cls, blobs: "CommitBlobs | Iterable[tuple[int, bytes, str]]") -> "CommitBlobs":
        """``blobs`` as they are if already one buffer, else joined into one."""
        return blobs if isinstance(blobs, CommitBlobs) else cls.join(blobs)

    def __len__(self) -> int:
        return len(self.versions)

    def span(self, i: int) -> tuple[int, int]:
        return self.bounds[i], self.bounds[i + 1]

    def __getitem__(self, i: int) -> tuple[int, bytes, str]:
        i = range(len(self))[i]
        start, end = self.span(i)
        return self.versions[i], bytes(self.buffer[start:end]), self.paths[i]

    def __iter__(self) -> Iterator[tuple[int, bytes, str]]:
        return (self[i] for i in range(len(self)))

    def since(self, version: int) -> "CommitBlobs":
        """The commits after ``version`` (sharing this buffer)."""
        i = next((k for k, v in enumerate(self.versions) if v > version), len(self))
        return CommitBlobs(self.buffer, self.bounds[i:], self.versions[i:], self.paths[i:])

    def __add__(self, other: "CommitBlobs") -> "CommitBlobs":
        return CommitBlobs.join([*self, *other])


def read_blobs(storage: Storage, commits: list[LogFile]) -> CommitBlobs:
    """The bytes of each commit; local files read into one buffer, object stores asked in one request."""
    if storage.is_local:
        return _read_local(storage, commits)
    if len(commits) > 1:
        try:
            data = storage.fs.cat([c.path for c in commits])
            return CommitBlobs.join((c.version, data[c.path], c.path) for c in commits)
        except (KeyError, FileNotFoundError):
            pass
    return CommitBlobs.join((c.version, read_commit_file(storage, c), c.path) for c in commits)


def _read_local(storage: Storage, commits: list[LogFile]) -> CommitBlobs:
    # each commit gets its listed size plus a byte: room for a final newline, and a file that
    # grew since it was listed shows as not fitting (then every file is read on its own)
    buffer = bytearray(sum(c.size for c in commits) + len(commits))
    bounds = [0]
    with memoryview(buffer) as view:
        for c in commits:
            start = bounds[-1]
            try:
                n = storage.read_into(c.path, view[start:start + c.size + 1])
            except FileNotFoundError:
                raise _vanished(storage, c) from None
            if n is None or n > c.size:
                break
            if n and buffer[start + n - 1] != 0x0A:
                buffer[start + n] = 0x0A
                n += 1
            bounds.append(start + n)
    if len(bounds) <= len(commits):
        return CommitBlobs.join((c.version, read_commit_file(storage, c), c.path) for c in commits)
    del buffer[bounds[-1]:]
    return CommitBlobs(buffer, bounds, [c.version for c in commits], [c.path for c in commits])
