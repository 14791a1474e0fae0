"""Managed commits at the table level: backfill, and the ownership changes.

The rules a managed-commit table's state must follow live in :mod:`.managed_state`;
the commit owner itself lives in :mod:`.commit_owner`. This module asks the owner
to backfill and performs the RFC's two conversions:

* filesystem -> managed: the owner agrees (a *proposal*), then the ownership commit
  is written with put-if-absent straight into ``_delta_log``; that write is the
  commit point. If it loses the race, the owner forgets the proposal.
* managed -> filesystem: the owner stops accepting commits, everything is
  backfilled, and the commit removing the owner is written straight into
  ``_delta_log``, so the table is never left depending on an un-backfilled file.
"""
from __future__ import annotations

import json
from typing import Any, Callable

from ..base import ict
from ..base.actions import Metadata, Protocol
from ..base.commit_actions import dumps_actions
from .commit_info import engine_info
from ..base.commit_owner.base import CommitOwner
from ..base.commit_owner.conf import check_owner_conf, dumps_owner_conf
from ..base.errors import CommitFailedError, CorruptLogError, InvalidArgumentError, InvalidTableStateError
from ..base.features import (MANAGED_COMMIT_FEATURE, MANAGED_OWNER_CONF_PROPERTY, MANAGED_OWNER_PROPERTY, Operation,
                       protocol_with_features, require)
from .commit_route import require_owner
from .commit_successor import check_commit_follows_log
from ..read.managed_state import validate_managed_state
from ..base.names import commit_path
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog


# --------------------------------------------------------------------- backfill
def backfill(table: TableLog, version: int | None = None) -> dict[str, Any]:
    """Ask the owner to copy ratified commits up to ``version`` (default: all) into ``_delta_log``.

    Returns ``{"managed", "from", "to", "backfilled", "backfilled_version", "latest_version"}``;
    ``backfilled`` lists the versions this call copied (empty when there was nothing to do,
    and always for a filesystem table, whose commits are all in ``_delta_log`` already).
    """
    if version is not None and (isinstance(version, bool) or not isinstance(version, int) or version < 0):
        raise InvalidArgumentError(f"version must be a non-negative integer, got {version!r}")
    snap = table.snapshot()
    table.require(snap, Operation.BACKFILL)
    owner = require_owner(table.uri, table.commit_owner, snap.protocol, snap.metadata)
    if owner is None:
        return {"managed": False, "from": None, "to": None, "backfilled": [],
                "backfilled_version": snap.version, "latest_version": snap.version,
                "message": f"{table.uri} is not a managed-commit table: every commit is in _delta_log"}
    table_id = snap.metadata.id
    done = owner.backfill_commits(table.storage, table_id, version)
    state = owner.describe_table(table_id)
    return {"managed": True, "from": done[0] if done else None, "to": done[-1] if done else None,
            "backfilled": done,
            "backfilled_version": state.backfilled_version if state else None,
            "latest_version": state.latest_version if state else None}


# ---------------------------------------------------------------- conversions
def enable_managed_commits(table: TableLog, owner: CommitOwner,
                           clock: Callable[[], int] | None = None) -> int:
    """Convert a filesystem table into one owned by ``owner``; returns the ownership commit's version.

    The ownership commit upgrades the protocol (writer 7 with ``managedCommit`` and
    ``inCommitTimestamp``), sets the owner properties and, if needed, turns on in-commit
    timestamps. If another commit takes its version first, the owner forgets the
    proposal and CommitFailedError(retryable=True, conflict=True) is raised.
    """
    if not isinstance(owner, CommitOwner):
        raise InvalidArgumentError(f"not a commit owner: {owner!r}")
    owner_conf = check_owner_conf(owner.owner_conf())
    snap = table.snapshot()
    snap.check_commits()
    if validate_managed_state(snap.protocol, snap.metadata):
        raise InvalidTableStateError(
            f"{table.uri} already uses managed commits (owner "
            f"'{snap.metadata.configuration[MANAGED_OWNER_PROPERTY]}'); disable them first to change the owner")
    require(snap.protocol, Operation.COMMIT, f"{table.uri} at version {snap.version}")
    version = snap.version + 1
    now, timestamp = _timestamps(clock, snap)
    protocol = protocol_with_features(snap.protocol, [MANAGED_COMMIT_FEATURE, ict.ICT_FEATURE], min_writer=7)
    updates = {MANAGED_OWNER_PROPERTY: owner.name, MANAGED_OWNER_CONF_PROPERTY: dumps_owner_conf(owner_conf) if owner_conf else None}
    metadata = snap.metadata.with_configuration(updates)
    if not ict.is_enabled(snap.protocol, snap.metadata):
        metadata = ict.with_enablement(metadata.with_configuration({ict.ENABLE_PROPERTY: "true"}),
                                       version, timestamp)
    changed = {k: v for k, v in metadata.configuration.items() if snap.metadata.configuration.get(k) != v}
    data = _commit_bytes(now, timestamp, snap.version, "SET TBLPROPERTIES",
                         {"properties": json.dumps(changed, sort_keys=True)}, protocol, metadata)
    table_id = snap.metadata.id
    storage = table.storage
    check_commit_follows_log(storage, version)
    owner.propose_ownership(table_id, table.uri, version)
    try:
        landed = storage.put_if_absent(commit_path(version), data)
    except BaseException:
        owner.forget_proposal(storage, table_id, version)
        raise
    if not landed:
        owner.forget_proposal(storage, table_id, version)
        raise CommitFailedError(
            f"could not enable managed commits on {table.uri}: version {version} was committed "
            "concurrently; re-read the table and try again", retryable=True, conflict=True, version=version)
    owner.register_table(table_id, table.uri, version)
    table.commit_owner = owner
    return version


def disable_managed_commits(table: TableLog, clock: Callable[[], int] | None = None) -> int:
    """Convert a managed-commit table back to filesystem commits; returns the converting version.

    The owner stops accepting commits, backfills everything, and the commit removing the
    owner properties and the ``managedCommit`` feature is written straight into
    ``_delta_log`` with put-if-absent. If anything fails before that commit lands, the
    owner accepts commits again. In-commit timestamps stay enabled.
    """
    snap = table.snapshot()
    table.require(snap, Operation.COMMIT)
    owner = require_owner(table.uri, table.commit_owner, snap.protocol, snap.metadata)
    if owner is None:
        raise InvalidTableStateError(f"{table.uri} does not use managed commits")
    table_id = snap.metadata.id
    storage = table.storage
    latest = owner.stop_accepting(table_id, storage)
    try:
        owner.backfill_to_version(storage, table_id, latest)
        snap = table.snapshot()
        if snap.version != latest:
            raise CorruptLogError(
                f"{table.uri}: after backfilling, the log ends at version {snap.version} but the commit "
                f"owner ratified up to {latest}")
        version = latest + 1
        now, timestamp = _timestamps(clock, snap)
        writer = tuple(f for f in (snap.protocol.writer_features or ()) if f != MANAGED_COMMIT_FEATURE)
        protocol = Protocol(snap.protocol.min_reader_version, snap.protocol.min_writer_version,
                            snap.protocol.reader_features, writer)
        metadata = snap.metadata.with_configuration({MANAGED_OWNER_PROPERTY: None, MANAGED_OWNER_CONF_PROPERTY: None})
        removed = [k for k in (MANAGED_OWNER_PROPERTY, MANAGED_OWNER_CONF_PROPERTY) if k in snap.metadata.configuration]
        data = _commit_bytes(now, timestamp, snap.version, "UNSET TBLPROPERTIES",
                             {"properties": json.dumps(removed), "ifExists": "true"}, protocol, metadata)
        check_commit_follows_log(storage, version)
        landed = storage.put_if_absent(commit_path(version), data)
    except BaseException:
        owner.resume_accepting(table_id)
        raise
    if not landed:
        # Someone wrote this version without the owner (or another disable won). The owner
        # stays closed: re-opening it could ratify commits the log can no longer take.
        raise CommitFailedError(
            f"could not disable managed commits on {table.uri}: version {version} was written by "
            "another client; inspect the table, then run disable_managed_commits again or call "
            "owner.resume_accepting(table_id)", conflict=True, version=version)
    return version


# --------------------------------------------------------------------- helpers
def _timestamps(clock: Callable[[], int] | None, snap: Snapshot) -> tuple[int, int]:
    """(wall-clock now, in-commit timestamp strictly after the previous commit)."""
    now = int((clock or ict.system_clock)())
    return now, ict.next_timestamp(lambda: now, snap.timestamp)


def _commit_bytes(now: int, timestamp: int, read_version: int, operation: str,
                  parameters: dict[str, Any], protocol: Protocol, metadata: Metadata) -> bytes:
    info = {"timestamp": now, "inCommitTimestamp": timestamp, "operation": operation,
            "operationParameters": parameters, "readVersion": read_version,
            "isolationLevel": "Serializable", "isBlindAppend": False, "engineInfo": engine_info()}
    return dumps_actions([{"commitInfo": info}, {"protocol": protocol.to_json()},
                          {"metaData": metadata.to_json()}])
