"""Rewriting one OPTIMIZE bin into new data files, as a stream.

Memory is bounded by the target file size, never by the partition:

- compaction reads the bin's files one batch at a time (deleted rows dropped on the way)
  and appends them to one new file, a row group at a time; statistics are gathered per
  batch (:class:`~..base.stats.StatsCollector`);
- Z-order needs the rows of a whole partition in curve order. A partition that makes one
  output file is read, sorted and written (it is at most about twice the target size).
  A larger one takes three passes: a sample of the Z-order columns places the range
  boundaries and the cuts between output files; every batch is then split by output
  file into local Arrow spill files; finally each spill file (about one target size) is
  sorted by Z-value and written. It is the external sort Spark does with a range shuffle.

New files get ``dataChange=false`` and the bin's partition values and directory; their
paths are appended to ``written`` the moment they exist, so a failed OPTIMIZE can delete
them. Files are named as Spark names them (``part-<n>-<uuid>.c000.snappy.parquet``).
"""
from __future__ import annotations

import os
import tempfile
import uuid
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from ..base.commit_actions import AddFile
from ..base.schema import schema_to_arrow
from ..base.stats import StatsCollector
from ..base.storage import Storage
from ..read.column_mapping import as_stored, mapping_mode, stored_field, stored_name
from ..read.reader import Readable, data_fields, file_batches
from .optimize_plan import Bin, OptimizeSettings, num_records
from .writer import partition_dir
from .zorder import SAMPLE_ROWS, ZOrderCurve, cut_points, part_of

#: Rows per row group of the files OPTIMIZE writes (and the most it buffers per output file).
ROW_GROUP_ROWS = 1 << 20
#: A row group is also cut at this many bytes of Arrow data, or at the target size when smaller:
#: data that compresses well holds many times its file size in memory, and a row count alone
#: does not bound that (repeated strings: 1M rows of 1 KB values are 1 GB).
ROW_GROUP_BYTES = 128 << 20
#: A column gets dictionary pages when its first rows repeat values (fewer distinct than this share):
#: for unique-ish values (random floats, ids) the dictionary is built, overflows and is thrown away,
#: which made writing about 2.5 times slower for 3% smaller files.
DICTIONARY_DISTINCT_SHARE = 0.5
_KEY = "__zorder_key"


class RewriteSource:
    """The table as :func:`rewrite_bin` reads it, without the log: for workers in other processes.

    A :class:`~..read.snapshot.Snapshot` carries its replayed file list and the log machinery;
    a Spark executor only needs where the table lives, its schema, partitioning and properties,
    so this small value (picklable) stands in for it there. It has no file list: a rewrite
    reads only the files of its bin.
    """

    def __init__(self, uri: str, storage_options: dict[str, Any] | None, version: int, schema_string: str,
                 partition_columns: tuple[str, ...], configuration: dict[str, str]):
        self.uri = uri
        self.storage_options = dict(storage_options or {})
        self.version = version
        self.schema_string = schema_string
        self.partition_columns = tuple(partition_columns)
        self.configuration = dict(configuration)
        self._storage: Storage | None = None

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_storage": None}

    @property
    def storage(self) -> Storage:
        if self._storage is None:
            self._storage = Storage(self.uri, self.storage_options)
        return self._storage

    @property
    def schema(self) -> pa.Schema:
        return schema_to_arrow(self.schema_string)


def file_schema(snap: Readable) -> pa.Schema:
    """The table's columns without the partition columns, logical names: the rows being rewritten."""
    return pa.schema([pa.field(f.name, f.type, f.nullable) for f in data_fields(snap)])


def stored_schema(snap: Readable) -> pa.Schema:
    """The Arrow schema new data files are written with: under column mapping, physical names and
    Parquet field ids (as Delta Spark writes them); otherwise :func:`file_schema`."""
    mode = mapping_mode(snap.configuration, snap.uri)
    if mode == "none":
        return file_schema(snap)
    return pa.schema([stored_field(f, mode) for f in data_fields(snap)])


def partition_keys_of_snapshot(snap: Readable) -> list[str]:
    """The partition columns as ``partitionValues`` keys them (physical names under column mapping)."""
    mode = mapping_mode(snap.configuration, snap.uri)
    by_name = {f.name: f for f in snap.schema}
    return [stored_name(by_name[c], mode) if c in by_name else c for c in snap.partition_columns]


class _OutputFile:
    """One new data file being written: buffered up to a row group, statistics per batch."""

    def __init__(self, snap: Readable, bin_: Bin, schema: pa.Schema, written: list[str],
                 max_buffer_bytes: int = ROW_GROUP_BYTES):
        self.snap = snap
        self.max_buffer_bytes = max_buffer_bytes
        self.bin = bin_
        self.schema = schema                      # logical: the rows handed to write()
        self.stored = stored_schema(snap)         # what the file holds (physical names under column mapping)
        directory = partition_dir(partition_keys_of_snapshot(snap), bin_.partition_values)
        name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        self.rel = f"{directory}/{name}" if directory else name
        if directory:
            snap.storage.makedirs(directory)
        self._stats = StatsCollector(snap.configuration)
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        written.append(self.rel)
        self._sink = snap.storage.open(self.rel, "wb")
        self._writer: pq.ParquetWriter | None = None

    def write(self, rows: pa.Table) -> None:
        rows = rows.select(self.schema.names).cast(self.schema) if rows.schema != self.schema else rows
        rows = as_stored(rows, self.stored)       # statistics are keyed by the stored names, as Delta Spark's
        self._stats.add(rows)
        self._pending.append(rows)
        self._pending_rows += rows.num_rows
        self._pending_bytes += rows.nbytes
        if self._pending_rows >= ROW_GROUP_ROWS or self._pending_bytes >= self.max_buffer_bytes:
            self._flush()

    def _flush(self) -> None:
        if self._pending:
            rows = pa.concat_tables(self._pending)
            if self._writer is None:
                self._writer = pq.ParquetWriter(self._sink, self.stored, compression="snappy",
                                                use_dictionary=_dictionary_columns(rows))
            self._writer.write_table(rows, row_group_size=ROW_GROUP_ROWS)
            self._pending, self._pending_rows, self._pending_bytes = [], 0, 0

    def close(self) -> AddFile | None:
        """The new file's add action (None, and the file deleted, when no row was written)."""
        self._flush()
        if self._writer is not None:
            self._writer.close()
        self._sink.close()
        if self._stats.num_records == 0:
            self.snap.storage.delete(self.rel)
            return None
        info = self.snap.storage.file_info(self.rel)
        assert info is not None, self.rel
        return AddFile(self.rel, info.size, dict(self.bin.partition_values), info.mtime_ms, False,
                       self._stats.result())

    def abort(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self._sink.close()


def _dictionary_columns(rows: pa.Table, probe: int = 65_536) -> list[str]:
    """The columns worth dictionary pages, judged on the first ``probe`` rows (leaf-level for structs:
    nested columns keep pyarrow's default)."""
    head = rows.slice(0, probe)
    out = []
    for f in head.schema:
        col = head.column(f.name)
        if pa.types.is_nested(f.type):
            out.append(f.name)
            continue
        try:
            distinct = pc.count_distinct(col).as_py()
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            out.append(f.name)
            continue
        if distinct < DICTIONARY_DISTINCT_SHARE * max(1, len(col)):
            out.append(f.name)
    return out


def _bin_batches(snap: Readable, bin_: Bin, fields: list[pa.Field] | None = None) -> Iterator[pa.Table]:
    for f in bin_.files:
        yield from file_batches(snap, f["path"], f.get("deletion_vector"), fields)


def rewrite_bin(snap: Readable, bin_: Bin, settings: OptimizeSettings, written: list[str]) -> list[AddFile]:
    """Write the new files of one bin; returns their add actions (``dataChange=false``)."""
    if settings.z_order_by:
        return _zorder_bin(snap, bin_, settings, written)
    out = _OutputFile(snap, bin_, file_schema(snap), written, min(ROW_GROUP_BYTES, settings.target_size))
    try:
        for rows in _bin_batches(snap, bin_):
            out.write(rows)
    except BaseException:
        out.abort()
        raise
    add = out.close()
    return [add] if add is not None else []


def _write_sorted(snap: Readable, bin_: Bin, rows: pa.Table, keys: np.ndarray, written: list[str]) -> AddFile | None:
    out = _OutputFile(snap, bin_, file_schema(snap), written)
    try:
        order = np.argsort(keys, kind="stable")
        ordered = rows.take(pa.array(order))
        for start in range(0, ordered.num_rows, ROW_GROUP_ROWS):
            out.write(ordered.slice(start, ROW_GROUP_ROWS))
    except BaseException:
        out.abort()
        raise
    return out.close()


def _zorder_bin(snap: Readable, bin_: Bin, settings: OptimizeSettings, written: list[str]) -> list[AddFile]:
    parts = max(1, bin_.size // settings.target_size)
    columns = settings.z_order_by
    if parts == 1:
        pieces = list(_bin_batches(snap, bin_))
        if not pieces:
            return []
        rows = pa.concat_tables(pieces)
        del pieces
        curve = ZOrderCurve.from_sample(_sample(rows, SAMPLE_ROWS), columns)
        add = _write_sorted(snap, bin_, rows, curve.keys(rows), written)
        return [add] if add is not None else []
    # pass 1: a sample of the Z-order columns places the ranges and the cuts between files
    zfields = [f for f in data_fields(snap) if f.name in columns]
    total = sum(num_records(f) or 0 for f in bin_.files) or 1   # unknown counts: sample all
    rng = np.random.default_rng(0x5EED)
    picked = [_sample(t, max(1, int(t.num_rows * min(1.0, SAMPLE_ROWS / total))), rng)
              for t in _bin_batches(snap, bin_, zfields)]
    if not picked:
        return []
    sample = pa.concat_tables(picked)
    curve = ZOrderCurve.from_sample(sample, columns)
    cuts = cut_points(curve.keys(sample), parts)
    # pass 2: every batch split by output file into local spill files
    schema = file_schema(snap)
    spill_schema = schema.append(pa.field(_KEY, pa.uint64(), False))
    adds: list[AddFile] = []
    with tempfile.TemporaryDirectory(prefix="delta-optimize-") as spill_dir:
        spills: dict[int, Any] = {}
        sinks: dict[int, Any] = {}
        try:
            for rows in _bin_batches(snap, bin_):
                keys = curve.keys(rows)
                which = part_of(keys, cuts)
                order = np.argsort(which, kind="stable")
                counts = np.bincount(which, minlength=len(cuts) + 1)
                grouped = rows.take(pa.array(order)).append_column(_KEY, pa.array(keys[order]))
                start = 0
                for part, n in enumerate(counts):
                    if n:
                        if part not in spills:
                            sinks[part] = pa.OSFile(os.path.join(spill_dir, f"{part}.arrow"), "wb")
                            spills[part] = pa.ipc.new_file(sinks[part], spill_schema)
                        spills[part].write_table(grouped.slice(start, int(n)).cast(spill_schema))
                        start += int(n)
        finally:
            for part in spills:
                spills[part].close()
                sinks[part].close()
        # pass 3: each spill (about one target size) sorted by Z-value and written
        for part in sorted(spills):
            path = os.path.join(spill_dir, f"{part}.arrow")
            with pa.memory_map(path) as source:
                rows = pa.ipc.open_file(source).read_all()
                keys = rows.column(_KEY).to_numpy()
                add = _write_sorted(snap, bin_, rows.drop_columns([_KEY]), keys, written)
                del rows
            os.unlink(path)
            if add is not None:
                adds.append(add)
    return adds


def _sample(rows: pa.Table, n: int, rng: np.random.Generator | None = None) -> pa.Table:
    """About ``n`` rows of ``rows``, picked uniformly (all of them when there are fewer)."""
    if rows.num_rows <= n:
        return rows
    rng = rng or np.random.default_rng(0x5EED)
    return rows.take(pa.array(np.sort(rng.choice(rows.num_rows, n, replace=False))))
