"""Writing (small) Arrow data into a table: parquet files plus one commit.

Big data is Spark's job; this writer exists for the small tables that DAGs keep
next to it (control tables, audit rows, test fixtures) and for interop tests. It
does what Delta Spark's writer does for a plain append or overwrite:

- validate first: mode, partitioning, schema (columns by name, same Delta types
  or a lossless widening, no nulls in non-nullable columns), table features;
  nothing is written to storage before all of that passed;
- write one parquet file per partition (split further by ``max_rows_per_file``)
  in Hive-style directories ``col=value/``, escaping characters the way Spark
  does (``%2F`` for ``/``, ``__HIVE_DEFAULT_PARTITION__`` for null), named
  ``part-<n>-<uuid>.c000.snappy.parquet``; partition columns are not stored in
  the files (their values live in ``add.partitionValues``);
- compute per-file statistics (:mod:`.stats`) from the data in memory;
- commit all files in one transaction (overwrite also removes every live file),
  and delete the files again if the commit fails, so a failed write leaves
  nothing behind.

A table that does not exist yet is created from the data's schema in the same
(version 0) commit; if an identical create wins that version first, the write goes on
against the created table (:class:`~.write_plan.PlannedWrite`).
"""
from __future__ import annotations

import time
import uuid
from typing import Any, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.commit_actions import AddFile
from ..base.errors import DeltaError, InvalidArgumentError, TableNotFoundError
from ..base.schema import serialize_partition_value
from ..base.schema_fit import conform_to_schema
from ..base.stats import collect_stats
from ..read.table_log import TableLog
from .transaction import Transaction
from .write_plan import PlannedWrite, WritePlan, check_mode, partition_arg, plan_write, write_transaction

HIVE_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

# Characters Hive/Spark escape in partition directory names (control characters too).
_ESCAPE = set('"#%\'*/:=?\\\x7f{[]^') | {chr(c) for c in range(1, 0x20)}


def escape_partition_name(text: str) -> str:
    """Escape a partition column name or value for a directory name, as Spark does (``%XX``)."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPE else c for c in text)


def partition_dir(columns: Iterable[str], values: dict[str, str | None]) -> str:
    """``a=1/b=__HIVE_DEFAULT_PARTITION__`` for the serialized partition values of one file."""
    parts = []
    for col in columns:
        v = values.get(col)
        parts.append(f"{escape_partition_name(col)}="
                     f"{HIVE_NULL_PARTITION if v is None or v == '' else escape_partition_name(v)}")
    return "/".join(parts)


# ------------------------------------------------------------------- file output
def _split_partitions(data: pa.Table, partition_by: tuple[str, ...]) -> list[tuple[dict[str, Any], pa.Table]]:
    """(partition key values, rows) per distinct partition, in first-seen order."""
    if not partition_by:
        return [({}, data)]
    if data.num_rows == 0:
        return []
    # one code per row for its combination of values (nulls get their own code); a group_by
    # would do, but it loads pyarrow.dataset, which imports pandas
    combo = np.zeros(data.num_rows, dtype=np.int64)
    dictionaries, codes = [], []
    for col in partition_by:
        encoded = ak.dictionary_encode(data.column(col).combine_chunks(), null_encoding="encode")
        dictionaries.append(encoded.dictionary)
        codes.append(ab.to_numpy(encoded.indices))
        # renumbered densely after each column, so the codes stay below the row count
        combo = np.unique(combo * len(encoded.dictionary) + codes[-1], return_inverse=True)[1]
    _, first_rows = np.unique(combo, return_index=True)
    out = []
    for row in np.sort(first_rows):
        key = {col: d[int(c[row])].as_py() for col, d, c in zip(partition_by, dictionaries, codes)}
        out.append((key, ak.filter(data, ab.from_numpy(combo == combo[row]))))
    return out


def _write_files(table: TableLog, data: pa.Table, schema: pa.Schema, partition_by: tuple[str, ...],
                 configuration: dict[str, str], max_rows_per_file: int | None,
                 written: list[str]) -> list[AddFile]:
    """Write the parquet files; append each relative path to ``written`` as soon as it exists."""
    storage = table.storage
    types = {c: schema.field(c).type for c in partition_by}
    data_cols = [n for n in schema.names if n not in partition_by]
    adds: list[AddFile] = []
    made: set[str] = set()
    n = 0
    for key, rows in _split_partitions(data, partition_by):
        values = {c: serialize_partition_value(key[c], types[c]) for c in partition_by}
        directory = partition_dir(partition_by, values)
        file_rows = rows.select(data_cols)
        step = max_rows_per_file or max(file_rows.num_rows, 1)
        for start in range(0, file_rows.num_rows, step):
            chunk = file_rows.slice(start, step)
            name = f"part-{n:05d}-{uuid.uuid4()}.c000.snappy.parquet"
            n += 1
            rel = f"{directory}/{name}" if directory else name
            sink = pa.BufferOutputStream()
            pq.write_table(chunk, sink, compression="snappy")
            payload = sink.getvalue().to_pybytes()
            if directory not in made:
                storage.makedirs(directory)   # "" is the table root, which may not exist yet
                made.add(directory)
            written.append(rel)
            storage.write_bytes(rel, payload)
            try:
                mtime = storage.mtime_ms(rel)
            except (OSError, FileNotFoundError):
                mtime = time.time_ns() // 1_000_000
            adds.append(AddFile(rel, len(payload), values, mtime, True, collect_stats(chunk, configuration),
                                fresh=True))
    return adds


# ----------------------------------------------------------------------- public
def write_table(table: TableLog, data: Any, mode: str = "append", partition_by: Iterable[str] | None = None,
                job: dict[str, Any] | None = None, *, properties: dict[str, Any] | None = None,
                overwrite_schema: bool = False, max_rows_per_file: int | None = None,
                name: str | None = None, description: str | None = None, **txn_kwargs: Any) -> int:
    """Write ``data`` (a pyarrow Table or RecordBatch) and commit it; returns the new version.

    ``mode="append"`` adds the rows; ``"overwrite"`` replaces all rows (with
    ``overwrite_schema=True`` also the schema and partitioning). If the table does not
    exist it is created from the data's schema with ``partition_by``, ``properties``,
    ``name`` and ``description`` (a write that loses that create to an identical one goes on:
    :class:`~.write_plan.PlannedWrite`). ``txn_kwargs`` go to the :class:`Transaction`
    (``user_metadata``, ``clock``, ``max_retries``, ``isolation_level``...).
    """
    plan, data = _plan_data(table, data, mode, partition_by, properties, overwrite_schema, max_rows_per_file,
                            name, description, txn_kwargs.get("clock"))
    write = PlannedWrite(table, plan, job=job, **txn_kwargs)
    written: list[str] = []
    try:
        return write.commit(_write_files(table, data, plan.schema, plan.partition_columns, plan.configuration,
                                         max_rows_per_file, written))
    except BaseException:
        if write.txn.surely_not_committed():      # the log decides: a landed commit keeps its files
            delete_quietly(table, written)
        raise


def prepare_write(table: TableLog, data: Any, mode: str = "append", partition_by: Iterable[str] | None = None,
                  job: dict[str, Any] | None = None, *, properties: dict[str, Any] | None = None,
                  overwrite_schema: bool = False, max_rows_per_file: int | None = None,
                  name: str | None = None, description: str | None = None,
                  **txn_kwargs: Any) -> tuple[Transaction, list[str]]:
    """Everything :func:`write_table` does before committing: validate, write the data files,
    and return the transaction holding them with the files' paths (delete those if the
    transaction is never committed). A multi-table transaction commits it with its group."""
    plan, data = _plan_data(table, data, mode, partition_by, properties, overwrite_schema, max_rows_per_file,
                            name, description, txn_kwargs.get("clock"))
    txn = write_transaction(table, plan, job=job, **txn_kwargs)
    written: list[str] = []
    try:
        txn.add_files(_write_files(table, data, plan.schema, plan.partition_columns, plan.configuration,
                                   max_rows_per_file, written))
    except BaseException:
        delete_quietly(table, written)
        raise
    return txn, written


def _plan_data(table: TableLog, data: Any, mode: str, partition_by: Iterable[str] | None,
               properties: dict[str, Any] | None, overwrite_schema: bool, max_rows_per_file: int | None,
               name: str | None, description: str | None, clock: Any) -> tuple[WritePlan, pa.Table]:
    """The checked arguments' write plan, and the data conformed to its schema."""
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise InvalidArgumentError(f"data must be a pyarrow.Table or RecordBatch, got {type(data).__name__}")
    check_mode(mode)
    if max_rows_per_file is not None and (isinstance(max_rows_per_file, bool) or not isinstance(
            max_rows_per_file, int) or max_rows_per_file < 1):
        raise InvalidArgumentError("max_rows_per_file must be a positive integer")
    try:
        snap = table.snapshot()
    except TableNotFoundError:
        snap = None
    plan = plan_write(table.uri, snap, data.schema, mode, partition_arg(partition_by), properties,
                      overwrite_schema, name, description, clock)
    return plan, conform_to_schema(data, plan.schema)


def delete_quietly(table: TableLog, paths: Iterable[str]) -> None:
    """Delete data files no commit references (after a failed commit); a delete that fails only
    leaves work for vacuum."""
    for rel in paths:
        try:
            table.storage.delete(rel)
        except (OSError, DeltaError):
            pass
