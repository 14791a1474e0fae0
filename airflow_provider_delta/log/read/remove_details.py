"""A ``remove`` action's optional details, recovered from the ``add`` it removes.

PROTOCOL.md makes ``remove.partitionValues`` and ``remove.size`` optional (a writer
promises them only with ``extendedFileMetadata=true``). Whoever reads the rows of a
removed file -- the change data feed, for a commit without ``cdc`` files -- needs
its partition values, or the deleted rows come out with null partition columns.
The file's ``add`` in the snapshot just before the remove has them: the remove and
that add share the file's key (path plus deletion vector id, see
:func:`.replay.file_keys`), so the deletion vector is never taken from the add --
a remove carries the DV of the file it removes, and one that does not removes
another logical file.
"""
from __future__ import annotations

from typing import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ..base import arrow_build as ab
from ..base.errors import CorruptLogError
from .replay import file_keys


def lacking_partition_values(removes: pa.Table) -> pa.Array:
    """Which data-changing removes have no ``partitionValues`` object at all."""
    changes = pc.fill_null(removes.column("data_change").combine_chunks(), ab.scalar(True))
    return pc.and_(pc.is_null(removes.column("partition_values").combine_chunks()), changes)


def complete_removes(removes: pa.Table, previous_files: Callable[[], pa.Table], where: str) -> pa.Table:
    """``removes`` (normalized file actions) with missing partition values and sizes filled in.

    ``previous_files`` gives the live files (``Snapshot.files()``) of the version
    before the removes; it is called only when some data-changing remove lacks its
    partition values. A remove whose file is not among them is a CorruptLogError
    (``where`` names the table and version): its rows cannot be placed in a partition.
    """
    missing = lacking_partition_values(removes)
    if not pc.any(missing).as_py():
        return removes
    previous = previous_files()
    at = pc.index_in(file_keys(removes, True), value_set=file_keys(previous, True))
    lost = pc.and_(missing, pc.is_null(at))
    if pc.any(lost).as_py():
        paths = removes.column("path").filter(lost).to_pylist()
        raise CorruptLogError(
            f"{where}: remove of {paths[0]!r} has no partitionValues and its file (with that deletion vector) "
            f"is not live in the version before it, so its rows' partition is unknown"
            + (f" ({len(paths) - 1} more such removes)" if len(paths) > 1 else ""), path=paths[0])
    found = previous.take(at)     # a null index gives a null row
    pv = pc.if_else(missing, found.column("partition_values"), removes.column("partition_values"))
    size = pc.coalesce(removes.column("size"), found.column("size"))
    names = removes.column_names
    return (removes.set_column(names.index("partition_values"), "partition_values", pv)
            .set_column(names.index("size"), "size", size))
