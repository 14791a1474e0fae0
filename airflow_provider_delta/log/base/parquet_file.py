"""Reading one Parquet file (a checkpoint, a sidecar, a data file) with column projection.

``pyarrow.parquet.ParquetFile`` is a Python layer over the compiled reader in
``pyarrow._parquet``; importing it also imports ``pyarrow.fs`` and ``ssl`` (together
about 20 ms, on every cold snapshot with a checkpoint) to resolve paths we never give
it. This is the part of that layer we use, over the same compiled reader: open a local
file memory-mapped or any file object, name columns by dotted prefix (``"add.path"``
selects the leaves under it, as ``ParquetFile.read`` does), read them.
"""
from __future__ import annotations

from typing import IO, Iterable, Iterator

import pyarrow as pa
from pyarrow._parquet import ParquetReader


class ParquetFile:
    """One open Parquet file. ``source``: a local path (memory-mapped) or a binary file object."""

    def __init__(self, source: str | IO[bytes], coerce_int96_timestamp_unit: str | None = None) -> None:
        self._reader = ParquetReader()
        local = isinstance(source, str)
        # ParquetFile's defaults (extension types such as UUID read as such), except that a
        # memory-mapped file is not pre-buffered: coalescing reads of mapped memory saves nothing
        # and starts pyarrow's I/O thread pool, a cost every cold read of a checkpoint paid
        self._reader.open(source, use_memory_map=local, pre_buffer=not local,
                          coerce_int96_timestamp_unit=coerce_int96_timestamp_unit, arrow_extensions_enabled=True)
        self._leaves_by_prefix: dict[str, list[int]] | None = None

    @property
    def schema_arrow(self) -> pa.Schema:
        return self._reader.schema_arrow

    @property
    def num_rows(self) -> int:
        return self._reader.metadata.num_rows

    def read(self, columns: Iterable[str] | None = None, use_threads: bool = True,
             row_groups: list[int] | None = None) -> pa.Table:
        """The named columns (top-level names or dotted paths into nested ones), or all; from
        the given row groups only, or all."""
        indices = None if columns is None else [i for name in columns for i in self._leaves().get(name, ())]
        if row_groups is not None:
            return self._reader.read_row_groups(row_groups, column_indices=indices, use_threads=use_threads)
        return self._reader.read_all(column_indices=indices, use_threads=use_threads)

    def iter_row_groups(self, columns: Iterable[str] | None = None,
                        use_threads: bool = True) -> Iterator[pa.Table]:
        """The rows one row group at a time: memory is about a row group, whatever the file's size
        (columns of a group are decoded in parallel, which batch-wise reading would not do)."""
        indices = None if columns is None else [i for name in columns for i in self._leaves().get(name, ())]
        for g in range(self._reader.metadata.num_row_groups):
            yield self._reader.read_row_group(g, column_indices=indices, use_threads=use_threads)

    def row_groups_with_values(self, columns: Iterable[str]) -> list[int]:
        """The row groups where a leaf of ``columns`` may hold a value, by the null counts in
        the file's statistics (a group without them counts as holding values).

        A checkpoint has a row per file and a handful of protocol, metaData and txn rows;
        where a writer put those in their own row group (ours does), reading them skips the
        million null rows of the others."""
        metadata = self._reader.metadata
        leaves = [i for name in columns for i in self._leaves().get(name, ())]
        out = []
        for g in range(metadata.num_row_groups):
            group = metadata.row_group(g)
            for i in leaves:
                stats = group.column(i).statistics
                if stats is None or not stats.has_null_count or stats.null_count < group.num_rows:
                    out.append(g)
                    break
        return out

    def _leaves(self) -> dict[str, list[int]]:
        """Leaf column indices under every dotted prefix of every leaf's path."""
        if self._leaves_by_prefix is None:
            by_prefix: dict[str, list[int]] = {}
            for i, path in enumerate(self._reader.column_paths):
                for depth in range(1, len(path) + 1):
                    by_prefix.setdefault(".".join(path[:depth]), []).append(i)
            self._leaves_by_prefix = by_prefix
        return self._leaves_by_prefix
