"""A reader's question to the catalog answered from one :class:`~.records.TableView`."""
from __future__ import annotations

from ..catalog import CatalogCommits
from .records import TableView


def answer(view: TableView | None, start: int, end: int | None) -> CatalogCommits:
    """Ratified, unpublished commits with start <= version <= end, and the latest ratified version."""
    if view is None:
        return CatalogCommits([], -1)
    latest = view.record.latest_version
    hi = latest if end is None else min(end, latest)
    return CatalogCommits([c for c in view.unpublished if start <= c.version <= hi], latest)
