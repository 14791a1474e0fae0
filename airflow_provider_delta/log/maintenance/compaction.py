"""Log compaction files: ``<x>.<y>.compacted.json``, the reconciled actions of commits x..y.

A reader may use the file instead of the commits it covers, so its content must
be exactly what replaying those commits gives: the last add or remove per file
(path plus deletion-vector id), the latest txn per app id, the latest domain
metadata per domain, and the latest protocol and metaData of the range. commitInfo
is left out. Removes stay (a later reader still needs them to cancel older adds).

Only backfilled commits are compacted: on a managed-commit table a file in
``_delta_log`` that names versions still held by the commit owner would look like
a corrupt log to readers without the owner (managed-commits RFC).

This is maintenance over a handful of commits, not a hot path, so it works on
parsed JSON objects and keeps each winning action exactly as it was written.
"""
from __future__ import annotations

from typing import Any

from ..base.commit_actions import dumps_actions
from ..base.errors import InvalidArgumentError, InvalidTableStateError
from ..base.features import Operation
from ..base.names import LOG_DIR, commit_path, compaction_path
from ..read.action_lines import action_kind
from ..read.commit_reader import parse_json_lines
from ..read.listing import list_backfilled
from ..read.protocol_metadata import is_table_metadata
from ..read.replay import without_pathless_file_actions
from ..read.segment import describe_range, first_gap
from ..read.table_log import TableLog



def _file_key(action: dict[str, Any]) -> tuple[str, str]:
    """The logical file an action names: its path as spelled (:mod:`..base.path_spelling`;
    decoding it would let a remove spelled unlike its add cancel it, which replay does not)."""
    dv = action.get("deletionVector") or {}
    dv_id = f"{dv.get('storageType', '')}{dv.get('pathOrInlineDv', '')}@{dv.get('offset', '')}" if dv else ""
    return action["path"], dv_id


def compacted_actions(commits: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """The reconciled actions of consecutive commits (each a list of action objects, in order)."""
    files: dict[tuple[str, str], dict[str, Any]] = {}
    txns: dict[str, dict[str, Any]] = {}
    domains: dict[str, dict[str, Any]] = {}
    protocol = metadata = None
    for actions in commits:
        for a in actions:
            a = without_pathless_file_actions(a)   # read as replay reads the line
            kind = action_kind(a)
            if kind in ("add", "remove"):
                a = {kind: a[kind]}    # another writer's null keys beside it dropped
                key = _file_key(a[kind])
                files.pop(key, None)   # re-insert so the output keeps the order of the winning actions
                files[key] = a
            elif kind == "txn":
                txns[a["txn"]["appId"]] = {kind: a[kind]}
            elif kind == "domainMetadata":
                domains[a["domainMetadata"]["domain"]] = {kind: a[kind]}
            elif kind == "protocol":
                protocol = {kind: a[kind]}
            elif kind == "metaData" and is_table_metadata(a[kind]):
                metadata = {kind: a[kind]}
    out: list[dict[str, Any]] = [x for x in (protocol, metadata) if x is not None]
    out += [a for a in files.values() if "add" in a] + [a for a in files.values() if "remove" in a]
    out += list(txns.values()) + list(domains.values())
    return out


def write_log_compaction(table: TableLog, start: int, end: int) -> str:
    """Write ``<start>.<end>.compacted.json`` from the backfilled commits start..end; returns its path.

    Idempotent: an existing compaction file for the range is left as it is.
    """
    for name, v in (("start", start), ("end", end)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise InvalidArgumentError(f"{name} must be a non-negative integer, got {v!r}")
    if end <= start:
        raise InvalidArgumentError(f"a log compaction covers at least two commits: end ({end}) must be "
                                   f"greater than start ({start})")
    table.require(table.snapshot(), Operation.COMPACT_LOG)
    listing = list_backfilled(table.storage)
    latest = table.latest_version()
    if end > latest:
        raise InvalidArgumentError(f"cannot compact {start}..{end} of {table.uri}: the latest version is {latest}")
    gap = first_gap(sorted(v for v in listing.commits if start <= v <= end), start, end)
    if gap is not None:
        if table.commit_owner is not None:
            raise InvalidTableStateError(
                f"commits {describe_range(*gap)} of {table.uri} are not backfilled yet; log compaction only "
                f"covers commits in {LOG_DIR}: run table.backfill() first")
        raise InvalidArgumentError(f"cannot compact {start}..{end} of {table.uri}: commit files "
                                   f"{describe_range(*gap)} are not in {LOG_DIR} (latest version {latest})")
    commits = []
    for v in range(start, end + 1):
        rel = commit_path(v)
        commits.append(parse_json_lines(table.storage.read_bytes(rel), table.storage.path(rel)))
    rel = compaction_path(start, end)
    table.storage.put_if_absent(rel, dumps_actions(compacted_actions(commits)))
    return table.storage.path(rel)
