"""``CommitSource``: who serves a table's newest commits when ``_delta_log`` does not hold them yet.

On a filesystem table every commit is a file in ``_delta_log``. On a managed-commit
table the commit owner ratifies commits that are not backfilled yet (files in
``_delta_log/_commits/``); on a catalog-managed table the catalog names the
ratified ``_delta_log/_staged_commits/`` files. The read engine asks both the same
question through this protocol, so listing and segment selection need neither a
``DeltaTable`` nor ``hasattr`` probes: a :class:`~.commit_owner.CommitOwner` and a
:class:`~.catalog.StagedCommitsCatalog` both implement it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Protocol, Sequence, runtime_checkable

from .features import CATALOG_MANAGED_FEATURES, Operation, require

if TYPE_CHECKING:
    from .actions import Protocol as DeltaProtocol


class RatifiedCommit(Protocol):
    """One ratified commit that is not (or not yet known to be) in ``_delta_log``."""

    version: int
    file_size: int
    #: epoch ms of the commit file (0: unknown, ask the storage)
    modification_time: int
    #: the commit's in-commit timestamp when the source recorded it, else None (read the file)
    commit_timestamp: int | None

    @property
    def rel_path(self) -> str:
        """Where the commit file is, relative to the table root."""


class CommitsAnswer(Protocol):
    """Ratified commits from some version on, and the newest version the source ratified."""

    commits: Sequence[RatifiedCommit]
    latest_table_version: int


@runtime_checkable
class CommitSource(Protocol):
    """Serves a table's ratified commits that a ``_delta_log`` listing may not show."""

    #: reader features the table may list because this source serves what they require
    #: (e.g. ``catalogManaged`` when the catalog supplies the staged commits)
    served_reader_features: frozenset[str]
    #: whether this client may run metadata cleanup and vacuum (a catalog may forbid them)
    allows_maintenance: bool
    #: writer features a commit through this source honours (e.g. ``catalogManaged`` when the
    #: source is a catalog that ratifies commits; empty for a read-only source)
    served_writer_features: frozenset[str]
    #: whether the source's newest version is authoritative: PROTOCOL.md (catalog-managed) has
    #: readers ignore published files after the version the catalog names as its latest
    authoritative_latest: bool

    def get_commits(self, table_id: str, start_version: int = 0,
                    end_version: int | None = None) -> CommitsAnswer:
        """Ratified commits with ``start_version <= version <= end_version``, ascending."""


@runtime_checkable
class CommitCoordinator(CommitSource, Protocol):
    """A commit source that also takes commits: a commit owner, or a catalog bound to one table.

    ``commit`` writes, ratifies and publishes ``actions`` as ``version``; it raises
    ``CommitFailedError(conflict=True)`` when another commit took the version.
    """

    def commit(self, storage: Any, table_id: str, version: int, actions: bytes,
               commit_timestamp: int) -> Any:
        """Commit ``actions`` as ``version`` of the table."""


def serves_catalog(source: CommitSource | None) -> bool:
    """Whether ``source`` is a catalog of catalog-managed tables (it serves every
    ``catalogManaged`` reader feature), not merely a commit owner or nothing."""
    return source is not None and CATALOG_MANAGED_FEATURES <= source.served_reader_features


def require_through(source: CommitSource | None, protocol: "DeltaProtocol", operation: Operation,
                    where: str) -> None:
    """The feature gate (:func:`.features.require`) for a table read or written through ``source``:
    what the source serves (``catalogManaged`` through a catalog) counts as supported."""
    if source is None:
        require(protocol, operation, where)
    else:
        require(protocol, operation, where, source.served_reader_features, source.allows_maintenance,
                source.served_writer_features)
