"""A read-only commit source fixed to one catalog state of one table.

``SqlCatalog.snapshots([...])`` reads every table's catalog state in one database
transaction and reads each table through one of these, so a group ratified after that
state is invisible in all of its tables, never in some (a published file after the
pinned version is ignored: ``authoritative_latest``). The audit view of a staged group
(``snapshot(transaction=...)``) pins the version the participant read plus its staged
commit on top, as if the group were ratified.
"""
from __future__ import annotations

from dataclasses import replace

from ..catalog import CatalogCommits, StagedCommit
from ..features import CATALOG_MANAGED_FEATURES
from .answer import answer
from .records import TableView


class PinnedTableSource:
    """Serves the ratified commits of one :class:`TableView`; takes no commits."""

    served_reader_features = CATALOG_MANAGED_FEATURES
    served_writer_features: frozenset[str] = frozenset()
    authoritative_latest = True
    allows_maintenance = False

    def __init__(self, view: TableView):
        self.view = view

    @classmethod
    def with_staged(cls, view: TableView, staged: StagedCommit) -> "PinnedTableSource":
        """``view`` up to ``staged.version - 1`` with ``staged`` as the next ratified commit."""
        base = staged.version - 1
        kept = tuple(c for c in view.unpublished if c.version <= base)
        record = replace(view.record, latest_version=staged.version,
                         published_version=min(view.record.published_version, base))
        return cls(TableView(record, kept + (staged,)))

    @property
    def version(self) -> int:
        return self.view.record.latest_version

    def get_commits(self, table_id: str, start_version: int = 0, end_version: int | None = None) -> CatalogCommits:
        return answer(self.view, start_version, end_version)
