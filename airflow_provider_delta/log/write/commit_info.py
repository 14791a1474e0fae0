"""``commitInfo``: the provenance every commit carries, written as Delta Spark writes it.

Operation, parameters (values JSON-encoded strings, as Delta Spark stores them),
read version, isolation level, blind-append flag, metrics (strings), engine and a
``txnId``; with in-commit timestamps the ``inCommitTimestamp`` comes first, and
``commitInfo`` is the first action of the commit. ``job`` records which Airflow
task wrote the commit (dag, task, run, try), so ``history()`` answers "who wrote this?".
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ... import __version__
from ..base.commit_actions import AddFile, RemoveFile
from .isolation import SERIALIZABLE

ENGINE_NAME = "airflow-provider-delta"


def engine_info() -> str:
    return f"{ENGINE_NAME}/{__version__}"


def param_value(value: Any) -> str | bool | int | float | None:
    """Delta Spark writes each operation parameter as its JSON encoding: strings as strings,
    booleans and numbers as JSON booleans and numbers (``"auto":false`` of OPTIMIZE, ``"version":1``
    of RESTORE); structured values it encodes to JSON text first (``"zOrderBy":"[\"x\"]"``), as we do."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return value
    return json.dumps(value, separators=(",", ":"), default=str)


def stats_records(stats: str | None) -> int | None:
    """``numRecords`` of a file's JSON stats (None when unknown)."""
    if not stats:
        return None
    try:
        n = json.loads(stats).get("numRecords")
        return int(n) if n is not None else None
    except (ValueError, AttributeError, TypeError):
        return None


@dataclass(frozen=True)
class CommitProvenance:
    """What the caller says about a commit: the operation and who ran it."""

    operation: str
    operation_parameters: dict[str, Any] = field(default_factory=dict)
    user_metadata: str | None = None
    job: dict[str, Any] | None = None
    operation_metrics: dict[str, Any] = field(default_factory=dict)
    txn_id: str = ""
    #: ``commitInfo.tags`` (string map), e.g. the multi-table transaction id of a group's commit
    tags: dict[str, str] = field(default_factory=dict)
    #: ``commitInfo`` as Delta Spark's ``commitLarge`` writes it (RESTORE, CLONE): ``readVersion``
    #: always (-1 for a new table) and ``isolationLevel`` ``Serializable``
    large_commit: bool = False

    def recorded_isolation_level(self, checked_at: str, contended: bool) -> str:
        """The isolation level ``commitInfo`` names for a commit checked at ``checked_at``.

        A large commit records ``Serializable`` as Delta Spark's does (it allows no concurrent
        commit at all); ours may land after concurrent commits its checks let through, and then
        records the level it was checked at. A commit no other commit came between is
        serializable whatever level it was checked at.
        """
        if contended or not self.large_commit:
            return checked_at
        return SERIALIZABLE


#: Operations whose metrics are exactly the caller's: Delta Spark records only its own set for them
#: (``DeltaOperationMetrics.OPTIMIZE``, ``RESTORE``, ``CLONE``), not the write metrics every data commit gets.
OWN_METRICS_OPERATIONS = frozenset({"OPTIMIZE", "REORG", "RESTORE", "CLONE"})


def operation_metrics(adds: list[AddFile], removes: list[RemoveFile], extra: dict[str, Any],
                      operation: str = "WRITE") -> dict[str, str]:
    """Delta Spark's write metrics (as strings), plus the caller's."""
    m: dict[str, Any] = {}
    if operation in OWN_METRICS_OPERATIONS:
        return {k: str(v) for k, v in extra.items()}
    if adds:
        m["numFiles"] = len(adds)
        m["numOutputBytes"] = sum(a.size for a in adds)
        rows = [stats_records(a.stats) for a in adds]
        if all(r is not None for r in rows):
            m["numOutputRows"] = sum(rows)  # type: ignore[arg-type]
    if removes:
        m["numRemovedFiles"] = len(removes)
        sizes = [r.size for r in removes]
        if all(s is not None for s in sizes):
            m["numRemovedBytes"] = sum(sizes)  # type: ignore[arg-type]
    m.update(extra)
    return {k: str(v) for k, v in m.items()}


def build_commit_info(provenance: CommitProvenance, commit_ts: int, in_commit_timestamp: bool,
                      read_version: int, isolation_level: str, blind_append: bool,
                      metrics: dict[str, str]) -> dict[str, Any]:
    """The ``commitInfo`` of one commit attempt (its timestamp changes per attempt)."""
    info: dict[str, Any] = {}
    if in_commit_timestamp:
        info["inCommitTimestamp"] = commit_ts
    info["timestamp"] = commit_ts
    info["operation"] = provenance.operation
    info["operationParameters"] = {k: param_value(v) for k, v in provenance.operation_parameters.items()}
    if read_version >= 0 or provenance.large_commit:
        info["readVersion"] = read_version
    info["isolationLevel"] = isolation_level
    info["isBlindAppend"] = blind_append
    info["operationMetrics"] = metrics
    if provenance.user_metadata is not None:
        info["userMetadata"] = provenance.user_metadata
    if provenance.job:
        info["job"] = provenance.job
    info["engineInfo"] = engine_info()
    info["txnId"] = provenance.txn_id
    if provenance.tags:
        info["tags"] = dict(provenance.tags)
    return info


def is_own_commit(actions: list[dict[str, Any]], txn_id: str) -> bool:
    """Whether a commit's actions are those of the transaction ``txn_id`` (its ``commitInfo.txnId``).

    How a writer recognises its own commit when the store reported the write as failed.
    """
    if not txn_id:
        return False
    for a in actions:
        info = a.get("commitInfo") if isinstance(a, dict) else None
        if isinstance(info, dict):
            return info.get("txnId") == txn_id
    return False
