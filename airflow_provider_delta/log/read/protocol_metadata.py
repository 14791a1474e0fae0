"""The protocol and metadata of one version, without replaying the file actions.

Most questions about a table (may we read it? what is its schema, its
properties, its id?) need only these two actions. They come from the newest
commits of the segment that carry them (found as :mod:`.action_lines` finds an
action: a commit without them costs a substring test) or else from the
checkpoint's two columns. A ``metaData`` without an id is not the table's (:func:`is_table_metadata`).
"""
from __future__ import annotations

from typing import Any

from ..base.actions import Metadata, Protocol
from .checkpoint_reader import read_checkpoint, read_checkpoint_protocol
from .commit_reader import CommitBlobs, read_blobs
from ..base.errors import CorruptLogError
from .action_lines import actions_by_kind
from .segment import LogSegment
from ..base.storage import Storage


def newest_protocol_metadata(blobs: CommitBlobs | list[tuple[int, bytes, str]]) -> tuple[Any, Any]:
    """The raw ``protocol`` and ``metaData`` values of the newest blobs that carry them (None if none).

    A commit holds at most one of each (PROTOCOL.md); one with two is ambiguous (engines
    disagree on which wins), so it is refused as corrupt, as Delta Spark does. The lines are
    found as :mod:`.action_lines` finds any action (a substring test skips a commit without them).
    """
    blobs = CommitBlobs.of(blobs)
    protocol = metadata = None
    buf = blobs.buffer
    for i in reversed(range(len(blobs))):
        start, end = blobs.span(i)
        found = actions_by_kind(buf, ("protocol", "metaData"), start, end)
        protocol = protocol if protocol is not None else _the_action(blobs, i, "protocol", found["protocol"])
        metadata = metadata if metadata is not None else _the_action(blobs, i, "metaData", found["metaData"])
        if protocol is not None and metadata is not None:
            break
    return protocol, metadata


def is_table_metadata(value: Any) -> bool:
    """Whether a ``metaData`` action's value counts as the table's metadata: Delta Spark's protocol and
    metadata reconstruction keeps only rows with ``metaData.id is not null``
    (``Snapshot.protocolMetadataAndICTReconstruction``), so one whose id is absent or null is skipped and
    the older metadata stays in effect. A value that is no object counts (it is refused as malformed)."""
    return not isinstance(value, dict) or value.get("id") is not None


def _the_action(blobs: CommitBlobs, i: int, kind: str, found: list[dict[str, Any]]) -> Any:
    """The value of commit ``i``'s one action ``kind`` (None: it has none), refusing two."""
    if kind == "metaData":
        found = [a for a in found if is_table_metadata(a[kind])]
    if len(found) > 1:
        version, path = blobs.versions[i], blobs.paths[i]
        raise CorruptLogError(f"{path}: commit {version} holds more than one {kind} action", path=path)
    return found[0][kind] if found else None


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
        metadata = metadata if metadata is not None or not is_table_metadata(cp.metadata) else cp.metadata
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
