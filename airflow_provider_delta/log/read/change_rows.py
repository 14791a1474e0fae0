"""The changed rows of one commit, by the protocol's "Change Data Files" rules.

A commit that holds ``cdc`` actions says what changed in those files alone: each
row carries its ``_change_type`` (``insert``, ``delete``, ``update_preimage``,
``update_postimage``). A commit without them (an append, or a delete of whole
files) changed exactly the rows of its ``add`` and ``remove`` actions with
``dataChange=true``: added rows are inserts, removed rows deletes.

Deletion vectors make "the rows of a file" depend on the DV that goes with it:

* a removed file's deleted rows are the rows that were live before the remove,
  i.e. the file read with the *remove's own* DV applied;
* a commit that removes a file and adds the same path back with another DV (a
  DELETE or UPDATE that marks rows instead of rewriting files) deleted the rows
  in the new DV but not in the old one, and re-inserted those in the old DV but
  not in the new one (RESTORE). Rows are picked by index from the file read with
  the DV live at that side, so no row is read or compared by value.

Every file is read by :func:`.reader.read_files`, the same path ``to_pyarrow``
uses, so a change row and a table row of the same file always agree.
"""
from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..base import arrow_build as ab
from ..base.action_schemas import FILE_COLUMNS
from .deletion_vectors import read_deletion_vector
from ..base.errors import DeletionVectorError
from .reader import Readable, read_files
from ..base.storage import Storage

CHANGE_TYPE = "_change_type"
INSERT, DELETE = "insert", "delete"


class _WithSchema:
    """A :class:`Readable` seen with another schema (the table's plus ``_change_type`` for cdc files)."""

    def __init__(self, base: Readable, schema: pa.Schema):
        self._base = base
        self.schema = schema

    def __getattr__(self, name: str) -> Any:
        return getattr(self._base, name)


def cdc_rows(snap: Readable, cdc_files: pa.Table) -> pa.Table:
    """The rows of ``cdc`` files (shaped like ``files()``): data columns and ``_change_type`` as written."""
    schema = snap.schema
    if schema.get_field_index(CHANGE_TYPE) < 0:
        schema = schema.append(pa.field(CHANGE_TYPE, pa.string()))
    return read_files(_WithSchema(snap, schema), cdc_files)  # type: ignore[arg-type]


def with_change_type(rows: pa.Table, change_type: str) -> pa.Table:
    return rows.append_column(CHANGE_TYPE, pa.repeat(ab.scalar(change_type, pa.string()), rows.num_rows))


def _has_dv(row: dict[str, Any]) -> bool:
    return row.get("deletion_vector") is not None


def _dv_indexes(storage: Storage, dv: dict[str, Any] | None) -> np.ndarray:
    """Sorted row indexes a DV marks deleted (empty for no DV)."""
    if dv is None:
        return np.empty(0, dtype=np.int64)
    return np.asarray(read_deletion_vector(storage, dv), dtype=np.int64)


def _rows_by_index(snap: Readable, file_row: pa.Table, live_dv: np.ndarray, indexes: np.ndarray) -> pa.Table:
    """Rows ``indexes`` (physical row numbers) of the one file in ``file_row``, read with its DV.

    With DV ``live_dv`` applied, physical row r (not in the DV) lands at position
    ``r - (number of DV entries below r)``.
    """
    live = read_files(snap, file_row)
    physical = live.num_rows + len(live_dv)
    if len(indexes) and int(indexes[-1]) >= physical:
        path = file_row.column("path")[0].as_py()
        raise DeletionVectorError(f"{snap.uri}: a deletion vector of data file {path} marks row {int(indexes[-1])}, "
                                  f"but the file has {physical} rows", path=path)
    return live.take(ab.from_numpy((indexes - np.searchsorted(live_dv, indexes)).astype(np.int64)))


def file_action_rows(snap: Readable, adds: pa.Table, removes: pa.Table) -> pa.Table:
    """Change rows of a commit without ``cdc`` files, from its data-changing adds and removes."""
    adds = adds.filter(pc.fill_null(adds.column("data_change"), ab.scalar(True)))
    removes = removes.filter(pc.fill_null(removes.column("data_change"), ab.scalar(True)))
    add_rows = {r["path"]: (i, r) for i, r in enumerate(adds.select(["path", "deletion_vector"]).to_pylist())}
    rm_rows = {r["path"]: (i, r) for i, r in enumerate(removes.select(["path", "deletion_vector"]).to_pylist())}
    # the same file removed and added back with another DV: the change is the DV difference
    paired = sorted(p for p in add_rows.keys() & rm_rows.keys()
                    if _has_dv(add_rows[p][1]) or _has_dv(rm_rows[p][1]))
    pset = ab.array(paired, pa.string())
    pieces = [
        with_change_type(read_files(snap, removes.filter(pc.invert(pc.is_in(removes.column("path"), pset)))
                                    .select(FILE_COLUMNS)), DELETE),
        with_change_type(read_files(snap, adds.filter(pc.invert(pc.is_in(adds.column("path"), pset)))
                                    .select(FILE_COLUMNS)), INSERT),
    ]
    storage = snap.storage
    for path in paired:
        (ai, a), (ri, r) = add_rows[path], rm_rows[path]
        old = _dv_indexes(storage, r["deletion_vector"])
        new = _dv_indexes(storage, a["deletion_vector"])
        deleted, restored = np.setdiff1d(new, old), np.setdiff1d(old, new)
        if len(deleted):
            pieces.append(with_change_type(
                _rows_by_index(snap, removes.slice(ri, 1).select(FILE_COLUMNS), old, deleted), DELETE))
        if len(restored):
            pieces.append(with_change_type(
                _rows_by_index(snap, adds.slice(ai, 1).select(FILE_COLUMNS), new, restored), INSERT))
    return pa.concat_tables(pieces)
