"""The managed-commits rules about a table's state: is it managed, is it valid, who owns it.

A managed-commit table carries the writer feature ``managedCommit``, the property
``delta.managedCommit.commitOwner`` naming its owner, optionally the owner's conf,
and active in-commit timestamps (backfilled files get new mtimes, so commit times
must come from inside the commits). Readers check these rules on every snapshot;
which owner a writer commits through is :mod:`.commit_route`'s question. The
conversions between filesystem and managed tables live in :mod:`.managed`.
"""
from __future__ import annotations

from ..base import ict
from ..base.actions import Metadata, Protocol
from ..base.commit_owner.conf import parse_owner_conf
from ..base.errors import InvalidTableStateError
from ..base.features import MANAGED_COMMIT_FEATURE, MANAGED_OWNER_CONF_PROPERTY, MANAGED_OWNER_PROPERTY


def validate_managed_state(protocol: Protocol, metadata: Metadata) -> bool:
    """True if the table uses managed commits; InvalidTableStateError if it is half-configured.

    The RFC calls a table invalid when the owner property and the ``managedCommit``
    writer feature do not come together; managed commits also need writer version 7
    and active in-commit timestamps, and the owner conf must be a JSON string map
    without secrets.
    """
    conf = metadata.configuration
    owner = conf.get(MANAGED_OWNER_PROPERTY)
    has_feature = protocol.has_writer_feature(MANAGED_COMMIT_FEATURE)
    if owner is None and not has_feature:
        return False
    if owner is None:
        raise InvalidTableStateError(
            f"invalid table state: the protocol lists writer feature '{MANAGED_COMMIT_FEATURE}' but the "
            f"metadata has no {MANAGED_OWNER_PROPERTY} property naming the commit owner")
    if not has_feature:
        raise InvalidTableStateError(
            f"invalid table state: property {MANAGED_OWNER_PROPERTY}={owner!r} is set but the protocol does not "
            f"list writer feature '{MANAGED_COMMIT_FEATURE}'")
    if not owner.strip():
        raise InvalidTableStateError(f"invalid table state: {MANAGED_OWNER_PROPERTY} is empty")
    if protocol.min_writer_version < 7:
        raise InvalidTableStateError(
            f"invalid table state: managed commits need writer version 7, the table has "
            f"{protocol.min_writer_version}")
    if not ict.is_enabled(protocol, metadata):
        raise InvalidTableStateError(
            "invalid table state: managed commits need in-commit timestamps (writer feature "
            f"'{ict.ICT_FEATURE}' and {ict.ENABLE_PROPERTY}=true)")
    parse_owner_conf(conf.get(MANAGED_OWNER_CONF_PROPERTY))
    return True


def owner_of(metadata: Metadata) -> tuple[str, dict[str, str]] | None:
    """(owner name, owner conf) a table's metadata names, or None for a filesystem table."""
    name = metadata.configuration.get(MANAGED_OWNER_PROPERTY)
    if name is None:
        return None
    return name, parse_owner_conf(metadata.configuration.get(MANAGED_OWNER_CONF_PROPERTY))
