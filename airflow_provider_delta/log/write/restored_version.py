"""The RESTORE exemption: an earlier version's metadata brought back together with exactly that version's files.

A commit that changes the schema, partitioning, column mapping or CHECK constraints over existing
files must obey the rules for doing so (layout: :mod:`.schema_evolution` via the commit plan, new
columns' mapping: :mod:`.column_mapping_ids`, constraints: :mod:`.check_constraints`). A RESTORE
(Delta Spark's ``RestoreTableCommand``) is exempt: it brings back version ``v``'s metadata *and*
``v``'s files, and every file it leaves live was written under that metadata. The exemption is
only as good as both halves of that claim, so both are checked here, in one place:

- :func:`check_restored_metadata`: the metadata is ``v``'s own (schema apart from identity high
  water marks, partitioning, CHECK constraints);
- :func:`check_restored_files`: the commit leaves exactly ``v``'s logical files live - ``(path, DV
  unique id)``, PROTOCOL.md "Action Reconciliation" - no file of another version stays or comes in.
  Without it ``v``'s metadata set over another version's files (version 1's ``id string`` over
  version 2's ``id long`` files) skipped the layout rule and every reader misread the files.

Both refuse with :class:`InvalidArgumentError` before anything is written. Cost: the restored
version's file list is the one :func:`~.restore.restore_table` already loaded (it hands its
:class:`Snapshot` over), and the read snapshot's is the one the commit plan loads anyway to resolve
the restore's removes and spell its adds; the check itself is set arithmetic on the two key lists.
"""
from __future__ import annotations

import json
from typing import Any, Iterable

import pyarrow as pa

from ..base import arrow_kernels as ak
from ..base import arrow_build as ab
from ..base.actions import Metadata
from ..base.commit_actions import AddFile, RemoveFile
from ..base.errors import InvalidArgumentError
from ..base.feature_actions import dv_unique_id
from ..base.features import CHECK_CONSTRAINT_PREFIX
from ..read.snapshot import Snapshot
from .column_expressions import IDENTITY_HIGH_WATER_MARK


def check_restored_metadata(metadata: Metadata, restored: Snapshot) -> None:
    """Refuse metadata claimed to be ``restored``'s that is not: the rules it skips would be bypassed."""
    old = restored.metadata

    def constraints(m: Metadata) -> dict[str, str]:
        return {k: v for k, v in m.configuration.items() if k.lower().startswith(CHECK_CONSTRAINT_PREFIX)}
    if (_without_high_water_marks(json.loads(metadata.schema_string))
            != _without_high_water_marks(json.loads(old.schema_string))
            or list(metadata.partition_columns) != list(old.partition_columns)
            or constraints(metadata) != constraints(old)):
        raise InvalidArgumentError(f"the metadata given as version {restored.version}'s differs from it in schema, "
                                   "partitioning or CHECK constraints; nothing was committed")


def check_restored_files(read: Snapshot, restored: Snapshot, adds: Iterable[AddFile],
                         removes: Iterable[RemoveFile]) -> None:
    """Refuse a commit claiming to restore ``restored`` whose live files afterwards are not its files.

    ``read``: the snapshot the commit is based on; ``adds`` / ``removes``: the commit's file
    actions (removes resolved against ``read``). The live files afterwards are ``read``'s minus the
    removed logical files plus the added ones.
    """
    removed = {(r.path, dv_unique_id(r.deletion_vector)) for r in removes}
    after = {k for k in logical_files(read.files()) if k not in removed}
    after |= {(a.path, dv_unique_id(a.deletion_vector)) for a in adds}
    then = logical_files(restored.files())
    if after != then:
        extra, missing = sorted(after - then, key=str), sorted(then - after, key=str)
        raise InvalidArgumentError(
            f"the metadata is given as version {restored.version}'s (a restore), but the commit does not leave "
            f"exactly that version's files live: {len(extra)} other file(s) would stay or come in "
            f"{[p for p, _ in extra[:3]]}, {len(missing)} of its files would be missing "
            f"{[p for p, _ in missing[:3]]}. A restore removes every other file and re-adds that version's; "
            "nothing was committed")


def logical_files(files: pa.Table, path_column: str = "path") -> set[tuple[str, str | None]]:
    """A file list's (a snapshot's ``files()``) logical files, (path, DV unique id), from two columns (no row
    dicts are built): the unique id is PROTOCOL.md's ``<storageType><pathOrInlineDv>[@<offset>]``.
    ``path_column``: the decoded ``path`` or the log's spelling."""
    paths = files.column(path_column).to_pylist()
    dv = files.column("deletion_vector").combine_chunks()
    if dv.null_count == len(dv):
        return {(p, None) for p in paths}
    base = ak.join_element_wise(dv.field("storageType"), dv.field("pathOrInlineDv"),
                                separator=ab.scalar("", pa.string()))          # null where no DV
    ids = ak.fill_null(ak.join_element_wise(base, ak.cast(dv.field("offset"), pa.string()),
                                            separator=ab.scalar("@", pa.string())), base)
    ids = ak.if_else(ak.is_null(dv), ab.scalar(None, pa.string()), ids)   # a struct's children ignore its nulls
    return set(zip(paths, ids.to_pylist()))


def _without_high_water_marks(value: Any) -> Any:
    """A parsed schema without identity high-water marks (a restore keeps today's: values handed out
    after the restored version stay used), for comparing a restored schema with the version's own."""
    if isinstance(value, dict):
        return {k: _without_high_water_marks(v) for k, v in value.items() if k != IDENTITY_HIGH_WATER_MARK}
    if isinstance(value, list):
        return [_without_high_water_marks(v) for v in value]
    return value
