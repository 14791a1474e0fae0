"""Reading a snapshot's rows into Arrow (small and medium tables; Spark reads big ones).

Partition columns are typed from the table schema, data files are read with
pyarrow, and each file's columns are cast to the table schema (a column missing
from an older file reads as nulls, as after schema evolution).

Filters: a list of ``(column, op, value)`` tuples (AND), a list of such lists
(OR of ANDs), or a ``pyarrow.compute.Expression``; tuple filters mean what
:mod:`.filters` says (SQL's three-valued logic). Files whose partition values
cannot match are skipped before any data is read; the filter is then applied to
the rows.

Deletion vectors (:mod:`.deletion_vectors`) drop a file's deleted rows by index
right after the file is read, and column mapping (:mod:`.column_mapping`) finds
each column under its physical name or field id; filters and ``columns`` always
use logical names.
"""
from __future__ import annotations

from typing import Any, Iterator, Protocol

import numpy as np
import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from .column_mapping import file_column, mapping_mode, partition_keys_of_schema, stored_name
from .data_paths import open_path
from .filters import dnf_mask, normalize
from .deletion_vectors import deleted_mask, read_deletion_vector
from ..base.errors import CorruptLogError, DataFileNotFoundError, InvalidArgumentError
from ..base.parquet_file import ParquetFile
from ..base.schema import partition_values_to_arrow
from ..base.storage import Storage


class Readable(Protocol):
    """What reading rows needs of a snapshot (a :class:`~.snapshot.Snapshot` is one)."""

    storage: Storage
    uri: str
    version: int
    schema: pa.Schema
    partition_columns: tuple[str, ...]
    configuration: dict[str, str]

    def files(self) -> pa.Table: ...

def partition_table(snap: Readable, files: pa.Table) -> pa.Table:
    """The typed partition values of ``files``, one column per partition column."""
    schema = snap.schema
    keys = partition_keys_of_schema(snap.partition_columns, schema, snap.configuration, snap.uri)
    cols, names = [], []
    for c, key in zip(snap.partition_columns, keys):  # under column mapping, the key is the physical name
        raw = ak.map_lookup(files.column("partition_values"), ab.scalar(key, pa.string()))
        cols.append(partition_values_to_arrow(raw, schema.field(c).type))
        names.append(c)
    return pa.table(cols, names=names) if cols else pa.table({"__n": pa.nulls(files.num_rows)}).drop(["__n"])


def prune_by_partition(snap: Readable, files: pa.Table, filter: Any) -> pa.Table:
    """The rows of ``files`` whose partition values may satisfy ``filter`` (atoms on other columns
    count as true here: they are applied to the rows later)."""
    if filter is None or not snap.partition_columns or files.num_rows == 0:
        return files
    parts = partition_table(snap, files)
    pset = set(snap.partition_columns)
    dnf = normalize(filter)
    if dnf is None:  # an Expression: usable for pruning only if it names partition columns alone
        try:
            keep = pa.table({**{c: parts.column(c) for c in parts.column_names},
                             "__i": ab.from_numpy(np.arange(files.num_rows))}).filter(filter).column("__i")
        except (pa.ArrowInvalid, pa.ArrowTypeError, KeyError, pa.ArrowNotImplementedError):
            return files
        return ak.take(files, keep)
    return ak.filter(files, dnf_mask(dnf, parts, pset))


def read_rows(snap: Readable, columns: list[str] | None = None, filter: Any = None) -> pa.Table:
    """The rows of ``snap``: prune files by partition, read them, then apply ``filter``."""
    schema = snap.schema
    if columns is not None:
        missing = [c for c in columns if schema.get_field_index(c) < 0]
        if missing:
            raise InvalidArgumentError(f"columns {missing} are not in the table schema {schema.names}")
    files = prune_by_partition(snap, snap.files(), filter)
    result = read_files(snap, files)
    if isinstance(filter, ak.Expression):
        result = result.filter(filter)
    elif filter is not None:
        result = ak.filter(result, dnf_mask(normalize(filter), result))
    if columns is not None:
        result = result.select(columns)
    return result


def read_files(snap: Readable, files: pa.Table) -> pa.Table:
    """The rows of the data files listed in ``files`` (rows shaped like ``snapshot.files()``).

    Each file is read, its deleted rows (deletion vector) dropped, its columns
    found by physical name or field id under column mapping and conformed to the
    logical table schema of ``snap``, and its partition values added; the change
    data feed reads added and removed files through this same path so both agree
    on what a file's rows are.
    """
    mode = mapping_mode(snap.configuration, snap.uri)
    schema = snap.schema
    pset = set(snap.partition_columns)
    parts = partition_table(snap, files) if pset else None
    out_schema = pa.schema([f for f in schema])
    dv_cache: dict[str, bytes] = {}
    pieces = []
    paths = files.column("path").to_pylist()
    dvs = files.column("deletion_vector").to_pylist() if files.num_rows else []
    for i, path in enumerate(paths):
        t = open_data_file(snap, path).read()
        if dvs[i] is not None:
            deleted = read_deletion_vector(snap.storage, dvs[i], dv_cache)
            t = ak.filter(t, ab.from_numpy(deleted_mask(t.num_rows, deleted, f"{snap.uri}: data file {path}")))
        n = t.num_rows
        arrays = []
        for f in out_schema:
            if f.name in pset:
                arrays.append(ak.cast(pa.repeat(parts.column(f.name)[i], n), f.type))
            else:
                arrays.append(file_column(t, f, mode))
        pieces.append(pa.Table.from_arrays(arrays, names=out_schema.names))
    if pieces:
        return pa.concat_tables(pieces, promote_options="permissive")
    return ab.empty_table(out_schema)


def open_data_file(snap: Readable, path: str) -> ParquetFile:
    """The data file ``path`` of ``snap`` opened for reading; a typed error when it is gone."""
    try:
        # not pq.read_table: that one goes through pyarrow.dataset, which imports pandas
        return ParquetFile(open_path(snap.storage, path), coerce_int96_timestamp_unit="us")
    except FileNotFoundError:
        if "\ufffd" in path:   # what percent-decoding leaves of bytes that are not UTF-8
            raise CorruptLogError(
                f"{snap.uri} version {snap.version}: data file path {path!r} is not valid UTF-8 once "
                "percent-decoded (Delta paths are UTF-8 URIs); the log is corrupt", path=path) from None
        raise DataFileNotFoundError(
            f"{snap.uri} version {snap.version} references data file {path!r}, which does not "
            "exist (deleted by hand, or vacuumed with too short a retention?)", path=path) from None


def data_fields(snap: Readable) -> list[pa.Field]:
    """The table's columns stored in data files (partition columns live in the log), logical names."""
    pset = set(snap.partition_columns)
    return [f for f in snap.schema if f.name not in pset]


def file_batches(snap: Readable, path: str, deletion_vector: dict[str, Any] | None,
                 fields: list[pa.Field] | None = None) -> Iterator[pa.Table]:
    """The live rows of one data file, a row group at a time (memory: about one row group).

    The same rules as :func:`read_files` without the partition columns: deleted rows
    (deletion vector) dropped, each of ``fields`` (default: :func:`data_fields`) found by
    physical name or field id and conformed to its logical type, nulls when the file
    predates the column. For rewriting files (optimize) without holding a whole file.
    """
    mode = mapping_mode(snap.configuration, snap.uri)
    fields = data_fields(snap) if fields is None else fields
    names = [f.name for f in fields]
    source = open_data_file(snap, path)
    keep = None
    if deletion_vector is not None:
        deleted = read_deletion_vector(snap.storage, deletion_vector)
        keep = deleted_mask(source.num_rows, deleted, f"{snap.uri}: data file {path}")
    stored = [stored_name(f, mode) for f in fields] if mode != "id" else None   # ids: found in the whole file
    start = 0
    for t in source.iter_row_groups(stored):
        n = t.num_rows
        if keep is not None:
            t = ak.filter(t, ab.from_numpy(keep[start:start + n]))
        start += n
        if t.num_rows:
            yield pa.Table.from_arrays([file_column(t, f, mode) for f in fields], names=names)
