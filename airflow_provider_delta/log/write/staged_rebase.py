"""Moving a staged commit of a multi-table transaction to a newer version.

Group ratification fails when another commit took a participant's proposed version
(the RFC: "the writer must re-stage the failed participant(s) at fresh versions and
retry group ratification, or abort"). Re-staging is what a single-table commit does
after losing a race: every winner is checked for logical conflicts with the staged
commit (:mod:`.conflicts`, Delta Spark's rules) and, if none, the same actions go to the
next free version with a new in-commit timestamp (``max(now, winner's + 1 ms)``).

The check works from the staged commit alone, so a group reopened in another process
(``catalog.group(id)``) can rebase too. What the commit read is not in the file, so it
is taken conservatively: a commit that is not a blind append counts as having read the
whole table.
"""
from __future__ import annotations

from typing import Any, Callable

from ..base import ict
from ..base.errors import VersionNotFoundError
from ..base.features import check_writable
from ..read.action_lines import action_kind
from ..read.table_log import TableLog
from .conflicts import ReadSet, WinningCommit, check_conflicts


def read_set_of(actions: list[dict[str, Any]]) -> ReadSet:
    """What a staged commit may have depended on, judged from its actions only (conservatively)."""
    info = next((a["commitInfo"] for a in actions if a.get("commitInfo") is not None), {})
    rs = ReadSet()
    rs.isolation_level = info.get("isolationLevel") or rs.isolation_level
    rs.blind_append = info.get("isBlindAppend") is True
    rs.read_all = not rs.blind_append
    for a in actions:
        kind = action_kind(a)         # one action a line, Delta Spark's SingleAction.unwrap order
        if kind == "remove":
            rs.removed_paths.add(a["remove"]["path"])
        elif kind == "add":
            rs.added_paths.add(a["add"]["path"])
        elif kind == "txn":
            rs.read_app_ids.add(a["txn"]["appId"])
        elif kind == "domainMetadata":
            rs.domains.add(a["domainMetadata"]["domain"])
        elif kind == "metaData":
            rs.changes_metadata = True
        elif kind == "protocol":
            rs.changes_protocol = True
    return rs


def catch_up_staged(table: TableLog, actions: list[dict[str, Any]], version: int) -> tuple[int, int | None]:
    """Check every commit from ``version`` on against the staged ``actions`` (raises
    ConcurrentModificationError on a conflict); returns the next free version and the
    newest winner's in-commit timestamp (None when nothing landed)."""
    read_set = read_set_of(actions)
    floor = None
    w = version
    while True:
        try:
            winner = table.read_commit(w)
        except VersionNotFoundError:
            return w, floor
        check_conflicts(read_set, WinningCommit.from_actions(w, winner), can_write=check_writable)
        floor = ict.timestamp_of(winner)
        w += 1


def restamp(actions: list[dict[str, Any]], clock: Callable[[], int], floor: int | None,
            replace: dict[str, dict[str, Any]]) -> tuple[list[dict[str, Any]], int]:
    """The actions with a new in-commit timestamp (after ``floor``) and the actions named in
    ``replace`` (e.g. ``transactionGroup``) swapped in; returns them and the timestamp."""
    ts = ict.next_timestamp(clock, floor)
    out = []
    for a in actions:
        if a.get("commitInfo") is not None:
            info = dict(a["commitInfo"])
            if "inCommitTimestamp" in info:
                info["inCommitTimestamp"] = ts
            info["timestamp"] = ts
            a = {"commitInfo": info}
        else:
            key = next(iter(a))
            if key in replace:
                a = {key: replace[key]}
        out.append(a)
    return out, ts
