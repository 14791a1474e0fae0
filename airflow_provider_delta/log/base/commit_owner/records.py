"""The plain records a commit owner keeps and hands out.

Kept apart from the owner classes so that readers (the log segment) and the SQL
schema can use them without importing any owner implementation.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..names import COMMITS_DIR

#: Owner-side table states. A table is ``proposed`` between the owner agreeing to
#: own it and the ownership commit landing in ``_delta_log``; ``active`` while the
#: owner ratifies commits; ``closed`` once it stopped accepting (conversion back to
#: a filesystem table).
PROPOSED = "proposed"
ACTIVE = "active"
CLOSED = "closed"


@dataclass(frozen=True)
class Commit:
    """One ratified commit the owner still tracks because it is not backfilled yet."""

    version: int
    #: name inside ``_delta_log/_commits/``: ``<20-digit version>.<uuid>.json``
    file_name: str
    file_size: int
    #: modification time of the ``_commits`` file, epoch ms
    modification_time: int
    #: the commit's in-commit timestamp, epoch ms
    commit_timestamp: int

    @property
    def rel_path(self) -> str:
        """Path of the commit file relative to the table root."""
        return f"{COMMITS_DIR}/{self.file_name}"


@dataclass(frozen=True)
class GetCommitsResponse:
    """The owner's answer to "which commits from version x on are not backfilled?".

    ``commits`` are contiguous and ascending; ``latest_table_version`` is the newest
    version the owner ratified (or the version it took the table over at), -1 if it
    never ratified one. A reader whose ``_delta_log`` listing plus ``commits`` does not
    reach ``latest_table_version`` listed before a backfill finished and must list again.
    """

    commits: list[Commit]
    latest_table_version: int


@dataclass(frozen=True)
class TableState:
    """What the owner records per table.

    ``latest_version`` is the newest ratified version (for ``proposed`` tables: the
    proposed ownership commit's version); every version up to ``backfilled_version``
    is known to be in ``_delta_log`` and no longer tracked.
    """

    table_id: str
    table_uri: str
    state: str
    latest_version: int
    backfilled_version: int

    @property
    def pending(self) -> int:
        """How many ratified commits are still waiting for backfill."""
        return max(0, self.latest_version - self.backfilled_version)
