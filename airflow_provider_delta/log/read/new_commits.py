"""The commits after a version: what a sensor or trigger polls for.

One listing (plus the commit source's tail) finds the newest version; only the
commits after the caller's last seen version are read, each once, with its
timestamp taken from what was read. A commit that cleanup removed between the
listing and the read is skipped, not an error: a poll must not fail on a table
that is being maintained.
"""
from __future__ import annotations

from typing import Any

from .commit_reader import read_listed_commit
from .commit_timestamps import timestamp_from_actions
from ..base.errors import VersionNotFoundError
from .listing import LogListing
from ..base.records import Record
from ..base.storage import Storage


class CommitRecord(Record):
    """One commit: its version, timestamp (epoch ms, ICT-aware) and parsed actions."""

    __slots__ = ("version", "timestamp", "actions")
    _frozen = True

    version: int
    timestamp: int | None
    actions: list[dict[str, Any]]


class CommitsSince(Record):
    """The answer to "what was committed after version v?"."""

    __slots__ = ("latest", "commits")
    _factories = {"commits": list}
    _frozen = True

    #: the newest version of the table; None when there is no table (yet)
    latest: int | None
    #: the commits after v up to ``latest``, oldest first (cleaned-up ones left out)
    commits: list[CommitRecord]


def read_commits_since(storage: Storage, listing: LogListing, version: int) -> CommitsSince:
    """The commits of ``listing`` after ``version`` (exclusive): the unbroken run of commit files
    that ends at the latest one. A commit file below a gap is no version of the table (a commit
    refused after it landed below a newer checkpoint, :mod:`..write.commit_successor`): no reader
    replays it, so none is handed out."""
    latest = listing.latest
    if latest is None:
        return CommitsSince(None)
    out: list[CommitRecord] = []
    run = []
    v = latest
    while v > version and v in listing.commits:     # the files that exist, never a range
        run.append(v)
        v -= 1
    for v in reversed(run):
        try:
            actions = read_listed_commit(storage, listing, v)
        except VersionNotFoundError:
            continue
        out.append(CommitRecord(v, timestamp_from_actions(v, actions, listing), actions))
    return CommitsSince(latest, out)
