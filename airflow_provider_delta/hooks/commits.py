"""Watching a table for new commits, incrementally: the logic shared by sensor and trigger.

A :class:`CommitWatch` remembers the newest version it has examined. Each
:meth:`CommitWatch.poll` lists the log once (``latest_version``: a directory listing,
no file read) and reads only the commits after that version, so a sensor polling a
table with a long history costs one listing plus the new commits.

What counts, and when the wait is over:

* the *range* is every commit after ``after_version`` (exclusive); without it, from
  ``target_version`` on; with neither, after the version the table had when the watch
  started (``baseline``; -1 when the table did not exist yet, so version 0 counts);
* a commit *matches* when it passes the ``operation`` filter (commitInfo.operation,
  one name or a list) and the ``app_id`` filter (a ``txn`` action with that appId, or
  a per-run appId derived from it: :func:`~.run_identity.app_id_matches`);
* the wait is over when a matching commit has a version ``>= target_version`` (if
  given) and ``> after_version`` (if given).

Operation names match without regard to case (``"write"`` matches ``WRITE``), as
Delta Spark's own names are upper case but users type them either way.

Matching commits are counted, and the newest :data:`~.payloads.MAX_LISTED` are kept,
oldest first, as JSON-ready summaries (:func:`summarize_commit`), their long values
clipped and fewer of them when they would pass :data:`~.payloads.MAX_LISTED_BYTES`:
what the sensor returns and the trigger carries stays small however long the range and
however big one commit's parameters (each matching commit is logged whole as it is found). State round-trips through :meth:`CommitWatch.to_dict`
for the trigger's kwargs.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Iterable

from ..log import InvalidArgumentError, TableNotFoundError
from .payloads import MAX_LISTED, clipped, newest
from .run_identity import app_id_matches

log = logging.getLogger(__name__)

if TYPE_CHECKING:  # pragma: no cover
    from ..log import DeltaTable


def summarize_commit(version: int, actions: list[dict[str, Any]], timestamp: int | None) -> dict[str, Any]:
    """The part of a commit a DAG cares about: version, timestamp, operation and metrics.

    ``operationParameters`` and ``operationMetrics`` come from commitInfo; ``appId`` and
    ``txnVersion`` are added when the commit holds a ``txn`` action (all of them under
    ``txns`` when there are several), and ``job`` when the writer recorded one.
    """
    info: dict[str, Any] = {}
    txns: list[dict[str, Any]] = []
    for a in actions:
        if "commitInfo" in a and isinstance(a["commitInfo"], dict):
            info = a["commitInfo"]
        elif "txn" in a and isinstance(a["txn"], dict):
            txns.append({"appId": a["txn"].get("appId"), "version": a["txn"].get("version")})
    if timestamp is None:
        ts = info.get("inCommitTimestamp", info.get("timestamp"))
        timestamp = int(ts) if isinstance(ts, (int, float)) else None
    out: dict[str, Any] = {
        "version": int(version),
        "timestamp": timestamp,
        "operation": info.get("operation"),
        "operationParameters": info.get("operationParameters") or {},
        "operationMetrics": info.get("operationMetrics") or {},
    }
    if txns:
        out["appId"] = txns[0]["appId"]
        out["txnVersion"] = txns[0]["version"]
        if len(txns) > 1:
            out["txns"] = txns
    if info.get("job"):
        out["job"] = info["job"]
    return out


def as_names(value: str | Iterable[str] | None) -> tuple[str, ...] | None:
    """Operation names to match, upper-cased (a name, a list, or None for any operation).

    A text with commas is a list (``"WRITE,MERGE"``, as a Jinja ``join(',')`` renders one): Delta's
    operation names hold no comma, so read as one name it could never match and the wait would
    only end at its timeout. ``partition_by`` and ``z_order_by`` read such texts the same way.
    """
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, str):
        names = tuple(value.split(","))
    elif isinstance(value, (list, tuple, set, frozenset)):
        names = tuple(value)
    else:
        raise InvalidArgumentError(f"operation must be a name or a list of names, got {value!r}")
    out = tuple(str(v).strip().upper() for v in names)
    if not all(out):
        raise InvalidArgumentError(f"operation names must not be empty, got {value!r}")
    # a list param rendered as text ("['WRITE', 'MERGE']") would be one name that never matches
    if any(n[0] in "[(" for n in out):
        raise InvalidArgumentError(f"operation {value!r} looks like a rendered list, not an operation name: pass "
                                   "a list, or render with render_template_as_native_obj=True")
    return out


def as_version(value: Any, name: str) -> int | None:
    """Versions may arrive as rendered template strings ('12', 'None', '')."""
    if value is None or (isinstance(value, str) and value.strip().lower() in ("", "none", "null")):
        return None
    if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
        raise InvalidArgumentError(f"{name} must be a table version (an integer), got {value!r}")
    try:
        v = int(str(value).strip()) if isinstance(value, str) else int(value)
    except (TypeError, ValueError):
        raise InvalidArgumentError(f"{name} must be a table version (an integer), got {value!r}") from None
    if v < 0 and not (name == "after_version" and v == -1):
        raise InvalidArgumentError(f"{name} must not be negative, got {v}")
    return v


@dataclass
class CommitWatch:
    """Incremental state of one wait for commits (see the module docstring for the rules)."""

    target_version: int | None = None
    after_version: int | None = None
    operation: tuple[str, ...] | None = None
    app_id: str | None = None
    last_seen: int | None = None
    commits: list[dict[str, Any]] = field(default_factory=list)
    latest: int | None = None
    #: matching commits so far (``commits`` keeps only the newest ``keep`` of them)
    count: int | None = None
    first_version: int | None = None
    #: how many summaries to keep (None: all; the commit-event trigger splits them into events itself)
    keep: int | None = MAX_LISTED
    #: operations of the commits the ``operation`` filter left out (a hint when nothing matches)
    skipped_operations: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.target_version = as_version(self.target_version, "target_version")
        self.after_version = as_version(self.after_version, "after_version")
        self.operation = as_names(self.operation)
        self.app_id = (str(self.app_id) if self.app_id not in (None, "") else None)
        if self.count is None:
            self.count = len(self.commits)
        if self.first_version is None and self.commits:
            self.first_version = self.commits[0]["version"]
        self.last_seen = as_version(self.last_seen, "after_version") if self.last_seen is not None else None
        if self.last_seen is None:
            if self.after_version is not None:
                self.last_seen = self.after_version
            elif self.target_version is not None:
                self.last_seen = self.target_version - 1

    # -------------------------------------------------------------- baseline
    @property
    def started(self) -> bool:
        """True once the range is fixed (explicit bounds, or a baseline was taken)."""
        return self.last_seen is not None

    def start(self, table: "DeltaTable", baseline: int | None = None) -> None:
        """Fix the range for a watch with neither bound: commits after ``baseline``,
        by default the table's current version (-1 if there is no table yet)."""
        if self.started:
            return
        if baseline is None:
            try:
                baseline = table.latest_version()
            except TableNotFoundError:
                baseline = -1
        self.after_version = int(baseline)
        self.last_seen = int(baseline)

    # ------------------------------------------------------------------ rules
    @property
    def threshold(self) -> int:
        """The lowest version that can end the wait."""
        lows = [0]
        if self.target_version is not None:
            lows.append(self.target_version)
        if self.after_version is not None:
            lows.append(self.after_version + 1)
        return max(lows)

    def matches(self, summary: dict[str, Any]) -> bool:
        if self.operation is not None and str(summary.get("operation") or "").upper() not in self.operation:
            return False
        if self.app_id is not None:
            ids = [t["appId"] for t in summary.get("txns", [])] or [summary.get("appId")]
            if not any(app_id_matches(self.app_id, i) for i in ids):
                return False
        return True

    @property
    def done(self) -> bool:
        # commits are oldest first and the newest is always kept
        return bool(self.commits) and self.commits[-1]["version"] >= self.threshold

    # ------------------------------------------------------------------- poll
    def poll(self, table: "DeltaTable") -> bool:
        """Read the commits added since the last poll; True when the wait is over.

        A missing table is not an error here (the sensor waits for it to appear). A
        commit file removed by metadata cleanup before it was read is skipped.
        """
        if not self.started:
            self.start(table)
        assert self.last_seen is not None
        new = table.commits_since(self.last_seen)  # one listing; no file read when nothing is new
        if new.latest is None:  # no table (yet)
            return self.done
        self.latest = new.latest
        if new.latest <= self.last_seen:
            return self.done
        for c in new.commits:
            summary = summarize_commit(c.version, c.actions, c.timestamp)
            if self.matches(summary):
                self._keep(summary)
            elif self.operation is not None and summary.get("operation") not in self.skipped_operations:
                self.skipped_operations = newest(self.skipped_operations + [summary.get("operation")])
        self.last_seen = new.latest
        return self.done

    def _keep(self, summary: dict[str, Any]) -> None:
        log.info("Matching commit: %s", summary)   # the full detail, in the task log
        self.count = (self.count or 0) + 1
        if self.first_version is None:
            self.first_version = summary["version"]
        self.commits.append(clipped(summary))        # long predicates cut: payloads are bounded in bytes
        if self.keep is not None:
            self.commits = newest(self.commits, self.keep)

    # --------------------------------------------------------- serialization
    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-able kwargs (for a trigger) that rebuild this exact state."""
        return {
            "target_version": self.target_version,
            "after_version": self.after_version,
            "operation": list(self.operation) if self.operation else None,
            "app_id": self.app_id,
            "last_seen": self.last_seen,
            "commits": list(self.commits),
            "latest": self.latest,
            "count": self.count,
            "first_version": self.first_version,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> "CommitWatch":
        return cls(target_version=d.get("target_version"), after_version=d.get("after_version"),
                   operation=d.get("operation"), app_id=d.get("app_id"),
                   last_seen=d.get("last_seen"), commits=list(d.get("commits") or []),
                   latest=d.get("latest"), count=d.get("count"), first_version=d.get("first_version"))

    def result(self) -> dict[str, Any]:
        """What the sensor returns and puts in its asset events (bounded, see :mod:`.payloads`).

        ``version``: the newest table version seen; ``count``: matching commits in the range;
        ``first_version`` / ``last_version``: the oldest and newest of them; ``commits``: the
        newest summaries, oldest first; ``truncated``: whether older ones were left out.
        """
        version = self.latest if self.latest is not None else (
            self.commits[-1]["version"] if self.commits else None)
        count = self.count or 0
        return {"version": version, "count": count, "first_version": self.first_version,
                "last_version": self.commits[-1]["version"] if self.commits else None,
                "commits": list(self.commits), "truncated": count > len(self.commits)}
