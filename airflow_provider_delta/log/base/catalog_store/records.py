"""The plain records the SQL catalog keeps and hands out (no SQLAlchemy here)."""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass

from ..catalog import StagedCommit

#: Group states: ``open`` (begun, nothing staged yet), ``staged`` (every member's staged commit
#: written and recorded), ``ratified`` (all members ratified at once), ``aborted`` (never ratified).
OPEN, STAGED, RATIFIED, ABORTED = "open", "staged", "ratified", "aborted"


def now_ms() -> int:
    return int(time.time() * 1000)


@dataclass(frozen=True)
class TableRecord:
    table_id: str
    table_uri: str
    #: newest ratified version
    latest_version: int
    #: every version up to this one is known to be in ``_delta_log``
    published_version: int


@dataclass(frozen=True)
class GroupMember:
    """One participant of a multi-table transaction: its staged commit."""

    table_id: str
    table_uri: str
    version: int
    file_name: str
    file_size: int
    commit_timestamp: int
    #: who staged it (a try-independent key such as ``<dag_id>:<task_id>``, or None): a retry of that
    #: writer finds this member instead of staging the table a second time
    writer: str | None = None

    def staged(self) -> StagedCommit:
        return StagedCommit(self.version, self.file_name, self.file_size, 0, self.commit_timestamp)


@dataclass(frozen=True)
class GroupRecord:
    group_id: str
    state: str
    members: tuple[GroupMember, ...]
    created_ms: int


def dumps_members(members: tuple[GroupMember, ...] | list[GroupMember]) -> str:
    return json.dumps([asdict(m) for m in members], sort_keys=True)


def loads_members(text: str) -> tuple[GroupMember, ...]:
    return tuple(GroupMember(**d) for d in json.loads(text or "[]"))


@dataclass(frozen=True)
class TableView:
    """A table as the catalog saw it at one moment: what a consistent multi-table read pins."""

    record: TableRecord
    #: ratified commits after ``record.published_version``, ascending
    unpublished: tuple[StagedCommit, ...]
    #: when the oldest of them was ratified (epoch ms; None when all are published)
    pending_since_ms: int | None = None
