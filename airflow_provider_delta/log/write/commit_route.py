"""Which way a commit goes: into ``_delta_log`` for a filesystem table, through the
commit owner the table names for a managed-commit one.

A writer of a managed-commit table must not write ``_delta_log/<v>.json`` itself, so
a table opened without its owner (or with another one, or with a read-only commit
source) is refused before anything is written.
"""
from __future__ import annotations

from ..base.actions import Metadata, Protocol
from ..base.commit_owner.base import CommitOwner
from ..base.errors import InvalidArgumentError
from ..base.features import MANAGED_OWNER_CONF_PROPERTY, MANAGED_OWNER_PROPERTY
from ..read.managed_state import validate_managed_state


def require_owner(uri: str, opened_with: object, protocol: Protocol, metadata: Metadata) -> CommitOwner | None:
    """The owner to commit through: None for a filesystem table, else ``opened_with``
    (a missing or differently named owner is an error, not a fallback)."""
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
