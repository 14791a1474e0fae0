"""Which way a commit goes: into ``_delta_log`` for a filesystem table, through the
commit owner the table names for a managed-commit one, through the catalog for a
catalog-managed one.

A writer of a managed-commit or catalog-managed table must not write
``_delta_log/<v>.json`` itself (PROTOCOL.md: catalog-managed writers "must not perform
ordinary filesystem-based commits"), so a table opened without its owner or catalog
(or with a read-only commit source) is refused before anything is written.
"""
from __future__ import annotations

from ..base.actions import Metadata, Protocol
from ..base.catalog_store.table_source import CatalogTableSource
from ..base.commit_owner.base import CommitOwner
from ..base.commit_source import CommitCoordinator
from ..base.errors import InvalidArgumentError
from ..base.features import CATALOG_MANAGED_FEATURES, MANAGED_OWNER_CONF_PROPERTY, MANAGED_OWNER_PROPERTY
from ..read.managed_state import validate_managed_state


def is_catalog_managed(protocol: Protocol) -> bool:
    """PROTOCOL.md: ``catalogManaged`` in both reader and writer features (reader 3, writer 7)."""
    return bool(set(protocol.reader_features or ()) & CATALOG_MANAGED_FEATURES) and \
        bool(set(protocol.writer_features or ()) & CATALOG_MANAGED_FEATURES)


def require_owner(uri: str, opened_with: object, protocol: Protocol, metadata: Metadata) -> CommitCoordinator | None:
    """The coordinator to commit through: None for a filesystem table, else ``opened_with``
    (a missing or different owner or catalog is an error, not a fallback)."""
    if is_catalog_managed(protocol):
        if not isinstance(opened_with, CatalogTableSource):
            raise InvalidArgumentError(
                f"{uri} is a catalog-managed table: commits go through its catalog; open it with "
                "DeltaTable(uri, catalog=SqlCatalog(...)) to write it")
        return opened_with
    if not validate_managed_state(protocol, metadata):
        return None
    name = metadata.configuration[MANAGED_OWNER_PROPERTY]
    if opened_with is None:
        raise InvalidArgumentError(
            f"{uri} is a managed-commit table owned by commit owner '{name}' (conf "
            f"{metadata.configuration.get(MANAGED_OWNER_CONF_PROPERTY, '{}')}); open it with "
            "DeltaTable(uri, commit_owner=...) to write or backfill it")
    if not isinstance(opened_with, CommitOwner) or opened_with.name != name:
        raise InvalidArgumentError(
            f"{uri} is owned by commit owner '{name}', but the table was opened with "
            f"'{getattr(opened_with, 'name', opened_with)}'")
    return opened_with
