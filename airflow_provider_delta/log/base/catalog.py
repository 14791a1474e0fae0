"""Reading catalog-managed tables (Delta 4.x ``catalogManaged``, ratified ``_staged_commits``).

Delta Spark shipped the managed-commits idea as ``catalogManaged``: the newest
commits live in ``_delta_log/_staged_commits/<v>.<uuid>.json`` until they are
published, and the catalog says which staged file is version v. This module is
the read side of that layout behind the same interface as a commit owner
(``get_commits``), so the log segment treats both alike.

The catalog's answer is passed in: ``{version: staged file name}`` plus the
newest ratified version (what a catalog API such as Unity Catalog returns).
Writing such tables is not supported: their writer protocol belongs to the catalog.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from .errors import InvalidArgumentError
from .features import CATALOG_MANAGED_FEATURES
from .names import STAGED_COMMITS_DIR, parse_uuid_commit_name


@dataclass(frozen=True)
class StagedCommit:
    version: int
    file_name: str
    file_size: int = 0
    modification_time: int = 0
    commit_timestamp: int | None = None  # read from the file's commitInfo when needed

    @property
    def rel_path(self) -> str:
        return f"{STAGED_COMMITS_DIR}/{self.file_name}"


@dataclass(frozen=True)
class CatalogCommits:
    commits: list[StagedCommit]
    latest_table_version: int


class StagedCommitsCatalog:
    """The catalog's view of a catalog-managed table: ratified staged commits by version."""

    #: lets the reader accept the ``catalogManaged`` reader feature when this serves the table's commits
    served_reader_features = CATALOG_MANAGED_FEATURES
    #: read-only: this view of a catalog cannot ratify commits
    served_writer_features: frozenset[str] = frozenset()
    #: PROTOCOL.md: published files after the catalog's latest version are ignored
    authoritative_latest = True

    def __init__(self, ratified: Mapping[int, str], max_ratified_version: int | None = None,
                 allows_maintenance: bool = False):
        for v, name in ratified.items():
            parsed = parse_uuid_commit_name(name)
            if parsed is None or parsed[0] != int(v):
                raise InvalidArgumentError(
                    f"staged commit for version {v} must be named '<20-digit {v}>.<uuid>.json', got {name!r}")
        self.ratified = {int(v): n for v, n in ratified.items()}
        #: PROTOCOL.md: cleanup and vacuum of a catalog-managed table need the catalog's permission
        self.allows_maintenance = bool(allows_maintenance)
        self.max_ratified_version = (max(self.ratified) if self.ratified else -1) \
            if max_ratified_version is None else int(max_ratified_version)

    def get_commits(self, table_id: str, start_version: int = 0, end_version: int | None = None) -> CatalogCommits:
        end = self.max_ratified_version if end_version is None else min(end_version, self.max_ratified_version)
        commits = [StagedCommit(v, self.ratified[v]) for v in sorted(self.ratified) if start_version <= v <= end]
        return CatalogCommits(commits, self.max_ratified_version)
