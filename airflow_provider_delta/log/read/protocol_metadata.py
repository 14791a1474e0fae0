"""The protocol and metadata of one version, without replaying the file actions.

Most questions about a table (may we read it? what is its schema, its
properties, its id?) need only these two actions. They come from the newest
commits of the segment that carry them (a regex over the raw bytes finds those
lines, so a commit without them costs a substring test; a commit that may spell
keys with escapes is parsed instead, see :mod:`.action_lines`) or else from the
checkpoint's two columns.
"""
from __future__ import annotations

import json
import re
from typing import Any

from ..base.actions import Metadata, Protocol
from .checkpoint_reader import read_checkpoint, read_checkpoint_protocol
from .commit_reader import CommitBlobs, read_blobs
from ..base.errors import CorruptLogError
from .action_lines import line_pattern, may_spell_keys_escaped, parsed_lines
from .segment import LogSegment
from ..base.storage import Storage

PROTOCOL_LINE = line_pattern("protocol")
METADATA_LINE = line_pattern("metaData")


def _key_of(pattern: re.Pattern) -> bytes:
    """The quoted action name a line pattern looks for (``b'"protocol"'``)."""
    return pattern.pattern[pattern.pattern.index(b'"'):pattern.pattern.rindex(b'"') + 1]


#: (line pattern, action name, the quoted name a substring test looks for)
_KINDS = [(p, kind, _key_of(p)) for p, kind in ((PROTOCOL_LINE, "protocol"), (METADATA_LINE, "metaData"))]


def last_line_match(pattern: re.Pattern, data: bytes) -> dict[str, Any] | None:
    """The last line matching ``pattern`` parsed as JSON; a plain substring test skips most files."""
    if data.rfind(_key_of(pattern)) < 0:
        return None
    return _last_line(pattern, data)


def _last_line(pattern: re.Pattern, data: bytes) -> dict[str, Any] | None:
    found = None
    for m in pattern.finditer(data):
        found = m.group(0)
    if found is None:
        return None
    try:
        return json.loads(found)
    except ValueError:
        return None


def newest_protocol_metadata(blobs: CommitBlobs | list[tuple[int, bytes, str]]) -> tuple[Any, Any]:
    """The raw ``protocol`` and ``metaData`` values of the newest blobs that carry them (None if none).

    A commit holds at most one of each (PROTOCOL.md); one with two is ambiguous (engines
    disagree on which wins), so it is refused as corrupt, as Delta Spark does.
    """
    blobs = CommitBlobs.of(blobs)
    protocol = metadata = None
    buf = blobs.buffer
    for i in reversed(range(len(blobs))):
        # one substring pass per kind over a commit that lacks both (most of them); searching
        # backwards is about twice as fast as ``in`` for these needles (CPython's reverse search)
        found = {}
        start, end = blobs.span(i)
        if may_spell_keys_escaped(buf, start, end):
            found = _parsed_protocol_metadata(*blobs[i])
        else:
            found = _matched_protocol_metadata(blobs, i, buf, start, end)
        if protocol is None and found.get("protocol"):
            protocol = found["protocol"]["protocol"]
        if metadata is None and found.get("metaData"):
            metadata = found["metaData"]["metaData"]
        if protocol is not None and metadata is not None:
            break
    return protocol, metadata


def _matched_protocol_metadata(blobs: CommitBlobs, i: int, buf: bytes, start: int, end: int) -> dict[str, Any]:
    """The protocol and metaData lines of commit ``i`` found by the line patterns (a substring test
    first, so a commit without them is never copied), refusing two of a kind."""
    found: dict[str, Any] = {}
    for pattern, kind, key in _KINDS:
        if buf.rfind(key, start, end) < 0:
            continue
        version, data, path = blobs[i]    # a copy of this one commit
        if data.count(key) > 1 and len(pattern.findall(data)) > 1:
            raise CorruptLogError(f"{path}: commit {version} holds more than one {kind} action", path=path)
        found[kind] = _last_line(pattern, data)
    return found


def _parsed_protocol_metadata(version: int, data: bytes, path: str) -> dict[str, Any]:
    """The protocol and metaData lines of a commit whose keys may be spelled with escapes, by
    parsing each line as JSON (as :func:`newest_protocol_metadata` returns them), refusing two."""
    found: dict[str, Any] = {}
    for action in parsed_lines(data):     # malformed lines: the replay reports them
        for kind in ("protocol", "metaData"):
            if kind in action:
                if kind in found:
                    raise CorruptLogError(f"{path}: commit {version} holds more than one {kind} action", path=path)
                found[kind] = action
    return found


def load_protocol_metadata(storage: Storage, segment: LogSegment,
                           blobs: CommitBlobs | list[tuple[int, bytes, str]] | None = None
                           ) -> tuple[Protocol, Metadata]:
    """Protocol and metadata of the segment's version: newest commit that has them, else checkpoint."""
    if blobs is None:
        blobs = read_blobs(storage, segment.commits)
    protocol, metadata = newest_protocol_metadata(blobs)
    if (protocol is None or metadata is None) and segment.checkpoint_files:
        cp = read_checkpoint(storage, segment.checkpoint_files, segment.checkpoint_version or 0,
                             with_files=False)
        protocol = protocol if protocol is not None else cp.protocol
        metadata = metadata if metadata is not None else cp.metadata
    return parse_protocol_metadata(protocol, metadata, f"{storage.uri} at version {segment.version}")


def load_protocol(storage: Storage, segment: LogSegment) -> Protocol:
    """The protocol alone of the segment's version: the newest commit carrying one, else only the
    checkpoint's ``protocol`` column (not ``metaData``). Cheaper than
    :func:`load_protocol_metadata` when the metadata is not needed (a listing's feature check)."""
    protocol, _ = newest_protocol_metadata(read_blobs(storage, segment.commits))
    if protocol is None and segment.checkpoint_files:
        protocol = read_checkpoint_protocol(storage, segment.checkpoint_files, segment.checkpoint_version or 0)
    where = f"{storage.uri} at version {segment.version}"
    if protocol is not None and not isinstance(protocol, dict):
        raise CorruptLogError(f"{where}: the protocol action is not a JSON object")
    if protocol is None:
        raise CorruptLogError(f"{where}: No protocol found in the log (the table is corrupt)")
    try:
        return Protocol.from_json(protocol)
    except (TypeError, ValueError, AttributeError) as e:
        raise CorruptLogError(f"{where}: malformed protocol action ({e})") from None


def parse_protocol_metadata(protocol: Any, metadata: Any, where: str) -> tuple[Protocol, Metadata]:
    """Typed protocol and metadata from their JSON values, or CorruptLogError saying what is wrong."""
    if protocol is not None and not isinstance(protocol, dict) or metadata is not None and not isinstance(metadata, dict):
        raise CorruptLogError(f"{where}: the protocol or metaData action is not a JSON object")
    if protocol is None:
        raise CorruptLogError(f"{where}: No protocol found in the log (the table is corrupt)")
    if metadata is None:
        raise CorruptLogError(f"{where}: No metadata found in the log (the table is corrupt)")
    try:
        return Protocol.from_json(protocol), Metadata.from_json(metadata)
    except (TypeError, ValueError, AttributeError) as e:
        raise CorruptLogError(f"{where}: malformed protocol or metaData action ({e})") from None
