"""Rewriting one OPTIMIZE bin into new data files, as a stream.

Memory is bounded by the target file size, never by the partition:

- compaction reads the bin's files one batch at a time (deleted rows dropped on the way)
  and appends them to one new file, a row group at a time; statistics are gathered per
  batch (:class:`~..base.stats.StatsCollector`);
- Z-order needs the rows of a whole partition in curve order: an external sort. A sample
  of the Z-order columns places the range boundaries and the cuts between output files;
  rows stream in with their Z-value and are sorted in runs of a quarter of the target size
  (at most 32 MB) of Arrow data, spilled to local Arrow files; the runs are merged, a batch
  of each in memory, and the merged stream is cut into files. Sizes in memory are Arrow
  bytes, not file bytes: data that compresses well (repeated strings) is many times larger
  in memory than on disk, which is why neither the number of output files nor any buffer
  is sized from the files' compressed sizes. It is the external sort Spark does with a
  range shuffle.

New files get ``dataChange=false`` and the bin's partition values and directory; their
paths are appended to ``written`` the moment they exist, so a failed OPTIMIZE can delete
them. Files are named as Spark names them (``part-<n>-<uuid>.c000.snappy.parquet``).
"""
from __future__ import annotations

import math
import os
import tempfile
import uuid
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.commit_actions import AddFile
from ..base.schema import schema_to_arrow
from ..base.stats import StatsCollector, column_path
from ..base.storage import Storage
from ..read.column_mapping import (as_stored, mapping_mode, partition_keys_of_schema, stored_field,
                                   stored_stats_configuration)
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
#: A column gets dictionary pages when its values look drawn from fewer than about this many distinct
#: ones: for unique-ish values (random floats, ids) the dictionary is built, overflows and is thrown
#: away, which made writing about 2.5 times slower for 3% smaller files. (It is where the former rule,
#: "under half of the first 64k rows distinct", flipped for values in random order.)
DICTIONARY_MAX_DISTINCT = 41_000
#: The rows of a new file's first row group whose distinct values are counted for that choice, spread
#: across the whole row group (the dictionary is per row group, and the first rows of data sorted by
#: another key, or cycling through a catalogue, show far more distinct values than the row group
#: holds), drawn by :func:`probe_positions`. Counting is cheap while the hash table fits the CPU's caches
#: and not beyond (about 1 ms on 8k rows, 12-24 ms on 64k): counting on 64k rows was a fifth of a
#: compaction's CPU.
DICTIONARY_PROBE_ROWS = 8192
#: The odd multipliers of :func:`probe_positions`'s bijection (SplitMix64's finaliser constants, and a
#: third round: with two, the draw of sorted data showed about one standard deviation more distinct values
#: than a random draw; with three, as many).
_MIX = (np.uint64(0xBF58476D1CE4E5B9), np.uint64(0x94D049BB133111EB), np.uint64(0xD6E8FEB86659FD93))
_KEY = "__zorder_key"
#: The most sorted runs merged at once (more are merged down first): memory is one batch per run.
MAX_FAN_IN = 16
#: The smallest in-memory sort (a tiny target size still sorts in sensible runs).
MIN_SORT_BUDGET = 1 << 20


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


class _OutputFile:
    """One new data file being written: buffered up to a row group, statistics per batch."""

    def __init__(self, snap: Readable, bin_: Bin, schema: pa.Schema, written: list[str],
                 max_buffer_bytes: int = ROW_GROUP_BYTES):
        self.snap = snap
        self.max_buffer_bytes = max_buffer_bytes
        self.bin = bin_
        self.schema = schema                      # logical: the rows handed to write()
        self.stored = stored_schema(snap)         # what the file holds (physical names under column mapping)
        directory = partition_dir(
            partition_keys_of_schema(snap.partition_columns, snap.schema, snap.configuration, snap.uri),
            bin_.partition_values)
        name = f"part-00000-{uuid.uuid4()}.c000.snappy.parquet"
        self.rel = f"{directory}/{name}" if directory else name
        if directory:
            snap.storage.makedirs(directory)
        self._stats = StatsCollector(stored_stats_configuration(
            data_fields(snap), snap.configuration, mapping_mode(snap.configuration, snap.uri)))
        self._pending: list[pa.Table] = []
        self._pending_rows = 0
        self._pending_bytes = 0
        written.append(self.rel)
        self._sink = snap.storage.open(self.rel, "wb")
        self._writer: pq.ParquetWriter | None = None

    def write(self, rows: pa.Table) -> None:
        if rows.schema != self.schema:
            rows = pa.Table.from_arrays([ak.cast(rows.column(f.name), f.type) for f in self.schema], schema=self.schema)
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
                       self._stats.result(), fresh=True)

    def abort(self) -> None:
        try:
            if self._writer is not None:
                self._writer.close()
        finally:
            self._sink.close()


def _dictionary_columns(rows: pa.Table, probe: int = DICTIONARY_PROBE_ROWS) -> list[str]:
    """The columns worth dictionary pages, judged on ``probe`` rows of ``rows`` drawn by
    :func:`probe_positions` (a pseudo-random draw: what :func:`_few_distinct` reasons about, whatever
    the rows' order)."""
    head = ak.take(rows, ab.from_numpy(probe_positions(rows.num_rows, probe))) if rows.num_rows > probe else rows
    out = []
    nested = [f.name for f in head.schema if pa.types.is_nested(f.type)]
    leaves = _leaf_paths(head.schema, nested) if nested else {}
    for f in head.schema:
        col = head.column(f.name)
        if pa.types.is_nested(f.type):
            out.extend(leaves[f.name])                        # pyarrow's default for them: dictionaries
            continue
        try:
            distinct = ak.count_distinct(col)
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            out.append(f.name)
            continue
        if _few_distinct(distinct, len(col)):
            out.append(f.name)
    return out


def probe_positions(rows: int, probe: int) -> np.ndarray:
    """``probe`` distinct row positions below ``rows``, sorted (``take`` reads them in order): a
    pseudo-random draw without replacement, the same for the same ``rows``.

    :func:`_few_distinct` reasons about a random draw, whatever the rows' order: an evenly spread probe
    (one row per equal slice) of data sorted by the column, or appended in batches with values of their
    own, sees a new value in almost every slice and took a column of 20k values for a unique one (files
    16-22% larger). The draw: the positions ``0, 1, 2, ...`` through a bijection of the ``bits``-bit
    integers (xor-shift and odd multiplier rounds, :data:`_MIX`), those below ``rows`` kept in that order
    until there are ``probe`` (at least half the domain is below ``rows``). Distinct because the map is
    one-to-one; deterministic (OPTIMIZE of the same bins writes the same files); numpy arithmetic only
    (``numpy.random`` is an import of about 30 ms in every task process). About 0.2-0.5 ms.
    """
    if rows <= probe:
        return np.arange(rows, dtype=np.int64)
    bits = max(int(rows - 1).bit_length(), 2)
    domain = 1 << bits
    mask, shift = np.uint64(domain - 1), np.uint64((bits + 1) // 2)
    drawn = min(domain, probe * domain // rows * 9 // 8 + 64)    # enough below ``rows`` nearly always
    while True:
        x = np.arange(drawn, dtype=np.uint64)
        for multiplier in _MIX:
            x ^= x >> shift
            x *= multiplier                                       # wraps modulo 2**64; masked to ``bits``
            x &= mask
        x ^= x >> shift
        x = x[x < np.uint64(rows)]
        if len(x) >= probe or drawn == domain:
            break
        drawn = min(domain, 2 * drawn)
    return np.sort(x[:probe]).astype(np.int64)


def _leaf_paths(schema: pa.Schema, names: list[str]) -> dict[str, list[str]]:
    """The Parquet leaf paths of each column of ``names`` as pyarrow's writer names them (``st.a``,
    ``l.list.element``): ``use_dictionary`` matches those, so a nested column listed by its own name
    got no dictionary on any leaf (a low-cardinality struct or list column 15 times larger). One
    conversion of the schema for all of them."""
    sink = pa.BufferOutputStream()
    pq.write_table(ab.empty_table(schema).select(names), sink)
    leaves = pq.read_metadata(pa.BufferReader(sink.getvalue())).schema
    paths = [leaves.column(i).path for i in range(len(leaves))]
    out: dict[str, list[str]] = {}
    i = 0
    for name in names:              # the leaves come in column order, each column's together
        n = _leaf_count(schema.field(name).type)
        out[name], i = paths[i:i + n], i + n
    return out


def _leaf_count(t: pa.DataType) -> int:
    """How many Parquet leaf columns a value of type ``t`` is stored in."""
    if pa.types.is_struct(t):
        return sum(_leaf_count(t.field(j).type) for j in range(t.num_fields))
    if pa.types.is_map(t):
        return _leaf_count(t.key_type) + _leaf_count(t.item_type)
    if pa.types.is_list(t) or pa.types.is_large_list(t) or pa.types.is_fixed_size_list(t):
        return _leaf_count(t.value_type)
    return 1


def _few_distinct(distinct: int, rows: int) -> bool:
    """Whether ``distinct`` values in ``rows`` rows mean fewer than :data:`DICTIONARY_MAX_DISTINCT` in all.

    ``n`` rows drawn at random from ``D`` distinct values show ``D * (1 - exp(-n / D))`` of them:
    the column counts as few-valued when it shows fewer than ``D = DICTIONARY_MAX_DISTINCT`` would.
    """
    return distinct < DICTIONARY_MAX_DISTINCT * -math.expm1(-rows / DICTIONARY_MAX_DISTINCT)


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


def _zorder_bin(snap: Readable, bin_: Bin, settings: OptimizeSettings, written: list[str]) -> list[AddFile]:
    """Z-order one bin as an external sort: memory is a few :func:`sort_budget` s, never the bin.

    1. a sample of the Z-order columns places the curve's ranges and the cuts between the
       ``bin.size // target_size`` output files;
    2. rows stream in with their Z-value and are sorted in runs of :func:`sort_budget` bytes of
       Arrow data, each spilled to a local Arrow file (a bin that fits one run is not spilled);
    3. the runs are merged (at most :data:`MAX_FAN_IN` at once, merging down first when there
       are more) and the merged stream is cut into output files at the cuts.
    """
    parts = max(1, bin_.size // settings.target_size)
    columns = settings.z_order_by
    budget = sort_budget(settings.target_size)
    # pass 1: a sample of the Z-order columns places the ranges and the cuts between files
    tops = {column_path(c)[0] for c in columns}
    zfields = [f for f in data_fields(snap) if f.name in tops]
    total = sum(num_records(f) or 0 for f in bin_.files) or 1   # unknown counts: sample all
    rng = np.random.default_rng(0x5EED)
    picked = [_sample(t, max(1, int(t.num_rows * min(1.0, SAMPLE_ROWS / total))), rng)
              for t in _bin_batches(snap, bin_, zfields)]
    if not picked:
        return []
    sample = pa.concat_tables(picked)
    del picked
    curve = ZOrderCurve.from_sample(sample, columns)
    cuts = cut_points(curve.keys(sample), parts)
    del sample
    with tempfile.TemporaryDirectory(prefix="delta-optimize-") as spill_dir:
        runs = SortedRuns(spill_dir, budget)
        # pass 2: sorted runs
        for rows in _bin_batches(snap, bin_):
            runs.add(rows.append_column(_KEY, ab.from_numpy(curve.keys(rows).astype(np.uint64, copy=False))))
        # pass 3: merged and cut into files
        return _write_cut(snap, bin_, runs.merged(), cuts, written, min(ROW_GROUP_BYTES, settings.target_size))


def sort_budget(target_size: int) -> int:
    """Bytes of Arrow data sorted in memory at once: a quarter of the smaller of the target size and
    :data:`ROW_GROUP_BYTES` (a sort holds the run, its concatenation and its reordered copy)."""
    return max(MIN_SORT_BUDGET, min(ROW_GROUP_BYTES, target_size) // 4)


def _write_cut(snap: Readable, bin_: Bin, ordered: Iterator[pa.Table], cuts: np.ndarray, written: list[str],
               buffer_bytes: int) -> list[AddFile]:
    """Write rows arriving in Z-value order, a new file at each cut; the key column is dropped."""
    adds: list[AddFile] = []
    out: _OutputFile | None = None
    current = -1
    try:
        for rows in ordered:
            which = part_of(ab.to_numpy(rows.column(_KEY)), cuts)
            rows = rows.drop_columns([_KEY])
            edges = np.flatnonzero(np.diff(which)) + 1          # sorted keys: parts never decrease
            for lo, hi in zip(np.concatenate(([0], edges)), np.concatenate((edges, [len(which)]))):
                if which[lo] != current:
                    if out is not None:
                        add, out = out.close(), None
                        if add is not None:
                            adds.append(add)
                    out = _OutputFile(snap, bin_, file_schema(snap), written, buffer_bytes)
                    current = int(which[lo])
                out.write(rows.slice(int(lo), int(hi - lo)))
    except BaseException:
        if out is not None:
            out.abort()
        raise
    if out is not None:
        add = out.close()
        if add is not None:
            adds.append(add)
    return adds


class SortedRuns:
    """Rows with a :data:`_KEY` column, sorted by it in runs of ``budget`` bytes spilled to ``directory``;
    :meth:`merged` streams all of them in key order."""

    def __init__(self, directory: str, budget: int, fan_in: int = MAX_FAN_IN):
        self.directory = directory
        self.budget = budget
        self.fan_in = max(2, fan_in)
        self.runs: list[str] = []
        self._spilled = 0                      # runs written so far (names are never reused)
        self._pending: list[pa.Table] = []
        self._pending_bytes = 0

    def add(self, rows: pa.Table) -> None:
        self._pending.append(rows)
        self._pending_bytes += rows.nbytes
        if self._pending_bytes >= self.budget:
            self._spill(self._sort_pending())

    def _sort_pending(self) -> pa.Table:
        rows = pa.concat_tables(self._pending)
        self._pending, self._pending_bytes = [], 0
        return ak.take(rows, ab.from_numpy(np.argsort(ab.to_numpy(rows.column(_KEY)), kind="stable")))

    def _spill(self, ordered: pa.Table | Iterator[pa.Table]) -> None:
        path = os.path.join(self.directory, f"run-{self._spilled}.arrow")
        self._spilled += 1
        pieces = [ordered] if isinstance(ordered, pa.Table) else ordered
        with pa.OSFile(path, "wb") as sink:
            writer = None
            for piece in pieces:
                if writer is None:
                    writer = pa.ipc.new_file(sink, piece.schema)
                rows = max(1, (self.budget // self.fan_in) * max(1, piece.num_rows) // max(1, piece.nbytes))
                writer.write_table(piece, max_chunksize=rows)
            if writer is not None:
                writer.close()
        self.runs.append(path)

    def merged(self) -> Iterator[pa.Table]:
        if not self.runs:                      # everything fit one run: sorted in memory, never spilled
            if self._pending:
                yield self._sort_pending()
            return
        if self._pending:
            self._spill(self._sort_pending())
        while len(self.runs) > self.fan_in:    # merge down: a new run per fan_in runs
            group, self.runs = self.runs[:self.fan_in], self.runs[self.fan_in:]
            self._spill(_merge(group))
            for path in group:
                os.unlink(path)
        yield from _merge(self.runs)


def _run_batches(path: str) -> Iterator[pa.Table]:
    with pa.OSFile(path, "rb") as source:
        reader = pa.ipc.open_file(source)
        for i in range(reader.num_record_batches):
            yield pa.Table.from_batches([reader.get_batch(i)])


def _merge(paths: list[str]) -> Iterator[pa.Table]:
    """The rows of several runs (each sorted by :data:`_KEY`) in key order, a batch of each run in memory.

    Each round emits every row up to the smallest last key among the runs' current batches: no row
    still unread can be smaller (each run is sorted), and the batch that held that key is used up.
    """
    sources = [_run_batches(p) for p in paths]
    current: list[pa.Table | None] = [next(src, None) for src in sources]
    while True:
        live = [i for i, c in enumerate(current) if c is not None]
        if not live:
            return
        keys = {i: ab.to_numpy(current[i].column(_KEY)) for i in live}
        bound = min(keys[i][-1] for i in live)
        taken = []
        for i in live:
            n = int(np.searchsorted(keys[i], bound, side="right"))
            if n:
                taken.append(current[i].slice(0, n))
            current[i] = current[i].slice(n) if n < len(keys[i]) else next(sources[i], None)
        rows = pa.concat_tables(taken) if len(taken) > 1 else taken[0]
        if len(taken) > 1:
            rows = ak.take(rows, ab.from_numpy(np.argsort(ab.to_numpy(rows.column(_KEY)), kind="stable")))
        yield rows


def _sample(rows: pa.Table, n: int, rng: np.random.Generator | None = None) -> pa.Table:
    """About ``n`` rows of ``rows``, picked uniformly (all of them when there are fewer)."""
    if rows.num_rows <= n:
        return rows
    rng = rng or np.random.default_rng(0x5EED)
    return ak.take(rows, ab.from_numpy(np.sort(rng.choice(rows.num_rows, n, replace=False))))
