"""What a commit may write under the table's features: the actions a feature governs, and append-only.

A field or action that a table feature defines may only be written where the protocol
the commit writes supports that feature (PROTOCOL.md "Table Features": writers must not
use a feature the table does not declare; a commit may declare it itself through a
protocol upgrade, which :mod:`.features` computes from the properties). Each rule here
is Delta Spark's check of the same name or effect in ``OptimisticTransaction``:

- ``deletionVector`` on an ``add`` (``getAssertDeletionVectorWellFormedFunc``): the
  ``deletionVectors`` feature; a *new* DV (one that no live logical file of the read
  snapshot has) also needs ``delta.enableDeletionVectors=true`` and ``tightBounds:false``
  in its stats; every DV needs ``numRecords`` in its stats (PROTOCOL.md "Writer
  Requirement for Deletion Vectors").
- an ``add`` of a live path under another DV (a new one, another one, or none) must come with
  the ``remove`` of the live logical file (PROTOCOL.md "Action Reconciliation": a logical file is
  its path and its DV, and a path is live once).
- ``domainMetadata`` actions (``DomainMetadataUtils.validateDomainMetadataSupportedAndNoDuplicate``):
  the ``domainMetadata`` feature; a system domain (``delta.*``) only where this package
  implements the feature that owns it, and it implements none of them (``delta.rowTracking``
  belongs to ``rowTracking``, ``delta.clustering`` to ``clustering``), so none is written
  (PROTOCOL.md "Writer Requirements for Domain Metadata").
- ``baseRowId`` / ``defaultRowCommitVersion`` on an ``add``: the ``rowTracking`` feature,
  which this package does not write (PROTOCOL.md "Row Tracking").
- Append-only (``DeltaLog.assertRemovable``): a ``remove`` with ``dataChange=true`` is
  refused when the table *as read* has ``delta.appendOnly=true``. A concurrent commit
  that turns it on changes the metadata, which fails this commit's conflict check, so
  the latest table is covered too.
"""
from __future__ import annotations

import json
from typing import Iterable

from .actions import Metadata, Protocol
from .commit_actions import AddFile, DomainMetadata, RemoveFile
from .errors import InvalidArgumentError, UnsupportedFeatureError
from .features import (APPEND_ONLY_PROPERTY, DELETION_VECTORS_PROPERTY, FILE_REINSTATING_OPERATIONS, is_true,
                       supported_features)

#: System-controlled metadata domains and the writer feature that owns each.
SYSTEM_DOMAIN_FEATURES = {"delta.rowTracking": "rowTracking", "delta.clustering": "clustering"}
SYSTEM_DOMAIN_PREFIX = "delta."


def _supports(protocol: Protocol, feature: str) -> bool:
    reader, writer = supported_features(protocol)
    if protocol.min_reader_version >= 3 and feature == "deletionVectors":
        return feature in writer and feature in reader
    return feature in writer


def check_domains(protocol: Protocol, domains: Iterable[DomainMetadata]) -> None:
    """Refuse ``domainMetadata`` actions the protocol does not declare, and system domains."""
    names = sorted(d.domain for d in domains)
    if not names:
        return
    if not _supports(protocol, "domainMetadata"):
        raise UnsupportedFeatureError(
            f"metadata domain(s) {names} need the table feature 'domainMetadata', which the table's protocol "
            "does not support; add it in the same commit (table property delta.feature.domainMetadata="
            "'supported') or an earlier one", feature="domainMetadata")
    for name in names:
        if name.startswith(SYSTEM_DOMAIN_PREFIX):
            owner = SYSTEM_DOMAIN_FEATURES.get(name, "an unknown feature")
            raise UnsupportedFeatureError(
                f"metadata domain {name!r} is controlled by Delta itself ({owner}); this package does not "
                "implement that feature, so it does not write the domain", feature=SYSTEM_DOMAIN_FEATURES.get(name))


def check_row_tracking_fields(protocol: Protocol, adds: Iterable[AddFile]) -> None:
    """Refuse ``baseRowId``/``defaultRowCommitVersion`` without ``rowTracking`` (which we never write)."""
    for add in adds:
        if add.base_row_id is not None or add.default_row_commit_version is not None:
            where = "the table does not support it" if not _supports(protocol, "rowTracking") else \
                "this package does not assign row ids"
            raise UnsupportedFeatureError(
                f"file {add.path!r} carries baseRowId/defaultRowCommitVersion, fields of the table feature "
                f"'rowTracking'; {where}", feature="rowTracking")


def _stats(add: AddFile) -> dict:
    try:
        stats = json.loads(add.stats) if add.stats else None
    except ValueError:
        stats = None
    return stats if isinstance(stats, dict) else {}


#: Operations that re-add logical files of another version or table with their deletion vectors;
#: Delta Spark does not ask them for wide bounds (``checkAddFileWithDeletionVectorStatsAreNotTightBounds``).
DV_BOUNDS_EXEMPT_OPERATIONS = FILE_REINSTATING_OPERATIONS


def check_deletion_vectors(protocol: Protocol, metadata: Metadata, adds: Iterable[AddFile],
                           live: set[tuple[str, str | None]], operation: str = "WRITE") -> None:
    """Refuse adds with deletion vectors the protocol, the table's properties or their stats do not allow.

    ``live``: the read snapshot's logical files (path, DV unique id); re-committing one of them
    (an in-place metadata update) is not adding a new DV. ``operation``: restores and clones
    re-add files as they were, so their bounds are not checked.
    """
    with_dv = [a for a in adds if a.deletion_vector]
    if not with_dv:
        return
    if not _supports(protocol, "deletionVectors"):
        raise UnsupportedFeatureError(
            f"file {with_dv[0].path!r} has a deletion vector, but the table does not support the feature "
            "'deletionVectors' (enable it with delta.enableDeletionVectors=true first)", feature="deletionVectors")
    enabled = is_true(metadata.configuration, DELETION_VECTORS_PROPERTY)
    for add in with_dv:
        stats = _stats(add)
        if not isinstance(stats.get("numRecords"), int) or isinstance(stats.get("numRecords"), bool):
            raise InvalidArgumentError(
                f"file {add.path!r} has a deletion vector but its stats lack numRecords (the protocol requires it)")
        if (add.path, dv_unique_id(add.deletion_vector)) in live:
            continue
        if not enabled:
            raise UnsupportedFeatureError(
                f"file {add.path!r} adds a new deletion vector, but {DELETION_VECTORS_PROPERTY} is not true "
                "(Delta Spark refuses new deletion vectors then too)", feature="deletionVectors")
        if stats.get("tightBounds") is not False and operation.upper() not in DV_BOUNDS_EXEMPT_OPERATIONS:
            raise InvalidArgumentError(
                f"file {add.path!r} adds a new deletion vector, so its stats must say tightBounds=false "
                "(the bounds still count the deleted rows), as Delta Spark requires")


def check_live_file_replaced(adds: Iterable[AddFile], removes: Iterable[RemoveFile],
                             live: set[tuple[str, str | None]], spelled_otherwise: dict[str, str] | None = None) -> None:
    """Refuse an add of a live path under another deletion vector (a new one, another one, or none)
    unless the commit removes that live logical file.

    A logical file is its path plus its DV's unique id (PROTOCOL.md "Add File and Remove File",
    "Action Reconciliation": the reconciled ``add`` collection has *unique path keys*). Giving a
    live data file a new DV, or taking its DV away, makes a new logical file, so the commit must
    also tombstone the old ``(path, dvId)`` - as Delta Spark's DELETE/UPDATE/MERGE do with
    ``removeWithTimestamp`` beside the add. Without the remove, replay keeps two logical files of
    one path: with a DV added, vacuum and append-only checks never see rows disappear; with a DV
    dropped, the deleted rows come back and every other row is read twice. Delta Spark refuses two
    actions of one path within a commit (``checkNoDuplicateActions``, ``DELTA_DUPLICATE_ACTIONS_FOUND``)
    and leaves this case to its commands; we check the commit against the read snapshot. ``live``:
    the read snapshot's logical files among the adds' paths that may collide (:func:`check_deletion_vectors`
    takes the same).

    ``spelled_otherwise`` maps an add's path to the live path it names in another spelling (an absolute
    ``/t/p`` or ``file:///t/p`` for the live ``p``: one data file, two logical files for replay, ours and
    Delta Spark's, which keys ``p`` and ``file:/t/p`` apart and reads the rows twice). Such an add comes
    with the remove of every live logical file of that path, whatever its DV.
    """
    removed = {(r.path, dv_unique_id(r.deletion_vector)) for r in removes}
    live_ids: dict[str, set[str | None]] = {}
    for path, dv_id in live:
        live_ids.setdefault(path, set()).add(dv_id)
    for add in adds:
        live_path = (spelled_otherwise or {}).get(add.path)
        for other in sorted(live_ids.get(live_path, set()) if live_path is not None else (), key=str):
            if (live_path, other) not in removed:
                raise InvalidArgumentError(
                    f"file {add.path!r} is the live file {live_path!r} spelled otherwise, and the commit does not "
                    f"remove the live logical file ({live_path!r}, DV {other!r}): readers would read its rows twice. "
                    f"Add it as {live_path!r}, or remove the live file in the same commit (nothing was committed)")
        own = dv_unique_id(add.deletion_vector)
        for other in sorted(live_ids.get(add.path, set()) - {own}, key=str):
            if (add.path, other) not in removed:
                raise InvalidArgumentError(
                    f"file {add.path!r} is added with deletion vector {own!r}, but the commit does not remove the "
                    f"live logical file ({add.path!r}, DV {other!r}): a path is live once, so remove it in the same "
                    "commit (a logical file is its path and its deletion vector; nothing was committed)")


def dv_unique_id(dv: dict | None) -> str | None:
    """A deletion vector's unique id (storage type, path or inline data, and ``@offset``): part of
    a logical file's key (PROTOCOL.md "Deletion Vector Descriptor Schema", derived fields)."""
    if not dv:
        return None
    base = f"{dv.get('storageType')}{dv.get('pathOrInlineDv')}"
    return base if dv.get("offset") is None else f"{base}@{dv['offset']}"


def check_append_only(read_metadata: Metadata | None, removes: Iterable[RemoveFile]) -> None:
    """Refuse removing data from a table that, as read, is append-only."""
    if read_metadata is None or not is_true(read_metadata.configuration, APPEND_ONLY_PROPERTY):
        return
    changing = [r.path for r in removes if r.data_change]
    if changing:
        raise InvalidArgumentError(
            f"this table is append-only ({APPEND_ONLY_PROPERTY}=true): file {changing[0]!r} cannot be removed "
            "with dataChange=true; unset the property in an earlier commit if you really mean to delete data")
