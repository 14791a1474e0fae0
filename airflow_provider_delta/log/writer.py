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
(version 0) commit.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import ict
from .actions import AddFile, Metadata
from .create import (check_can_add_data, check_writable, normalize_properties, protocol_for_new_table,
                     validate_partition_columns)
from .errors import DeltaError, InvalidArgumentError, TableNotFoundError, UnsupportedFeatureError
from .schema import arrow_to_delta_type, arrow_to_schema, schema_string, schema_to_arrow, serialize_partition_value
from .stats import collect_stats
from .transaction import Transaction

if TYPE_CHECKING:  # pragma: no cover
    from .table import DeltaTable

HIVE_NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"
MODES = ("append", "overwrite")

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


# ------------------------------------------------------------------ schema fit
def _shape(t: Any) -> Any:
    """A Delta type with nullability flags removed (compared separately)."""
    if isinstance(t, dict):
        kind = t.get("type")
        if kind == "struct":
            return {"struct": [(f["name"], _shape(f["type"])) for f in t["fields"]]}
        if kind == "array":
            return {"array": _shape(t["elementType"])}
        if kind == "map":
            return {"map": (_shape(t["keyType"]), _shape(t["valueType"]))}
    return t


_INT_ORDER = ["byte", "short", "integer", "long"]


def _widens(src: Any, dst: Any) -> bool:
    """Lossless primitive widenings accepted on append (byte->short->int->long, float->double)."""
    if isinstance(src, str) and isinstance(dst, str):
        if src in _INT_ORDER and dst in _INT_ORDER:
            return _INT_ORDER.index(src) <= _INT_ORDER.index(dst)
        return src == "float" and dst == "double"
    return False


def conform_to_schema(data: pa.Table, schema: pa.Schema) -> pa.Table:
    """``data`` with the table's columns, order and exact types, or InvalidArgumentError saying why not."""
    lower = {f.name.lower(): f.name for f in schema}
    table_names = set(schema.names)
    extra = [n for n in data.column_names if n not in table_names]
    if extra:
        hints = [f"{n!r} (did you mean {lower[n.lower()]!r}?)" if n.lower() in lower else repr(n) for n in extra]
        raise InvalidArgumentError(
            f"schema mismatch: column(s) {', '.join(hints)} are not in the table "
            f"(table columns: {', '.join(schema.names)})")
    if len(set(data.column_names)) != len(data.column_names):
        raise InvalidArgumentError("the data has duplicate column names")
    columns = []
    for field in schema:
        if field.name not in data.column_names:
            if not field.nullable:
                raise InvalidArgumentError(f"schema mismatch: non-nullable column {field.name!r} is missing")
            columns.append(pa.nulls(data.num_rows, field.type))
            continue
        col = data.column(field.name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(col.type.value_type)
        if pa.types.is_null(col.type):           # an all-null column of unknown type (e.g. [None])
            if not field.nullable and len(col):
                raise InvalidArgumentError(f"column {field.name!r} is not nullable but the data has nulls")
            columns.append(pa.nulls(data.num_rows, field.type))
            continue
        try:
            src = arrow_to_delta_type(col.type)
        except InvalidArgumentError as e:
            raise InvalidArgumentError(f"column {field.name!r}: {e}") from None
        dst = arrow_to_delta_type(field.type)
        if _shape(src) != _shape(dst) and not _widens(src, dst):
            raise InvalidArgumentError(
                f"schema mismatch: column {field.name!r} is {_describe(src)} in the data but "
                f"{_describe(dst)} in the table")
        if not field.nullable and col.null_count:
            raise InvalidArgumentError(
                f"column {field.name!r} is not nullable but the data has {col.null_count} null(s)")
        try:
            columns.append(col.cast(field.type) if col.type != field.type else col)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError) as e:
            raise InvalidArgumentError(f"column {field.name!r} cannot be stored as {field.type}: {e}") from None
    return pa.Table.from_arrays(columns, schema=schema)


def _describe(t: Any) -> str:
    return t if isinstance(t, str) else json.dumps(t, separators=(",", ":"))[:200]


# ------------------------------------------------------------------- file output
def _split_partitions(data: pa.Table, partition_by: tuple[str, ...]) -> list[tuple[dict[str, Any], pa.Table]]:
    """(partition key values, rows) per distinct partition, in first-seen order."""
    if not partition_by:
        return [({}, data)]
    if data.num_rows == 0:
        return []
    keys = data.select(list(partition_by)).group_by(list(partition_by), use_threads=False).aggregate([])
    out = []
    for key in keys.to_pylist():
        mask = None
        for col in partition_by:
            v = key[col]
            m = pc.is_null(data.column(col)) if v is None else pc.fill_null(
                pc.equal(data.column(col), pa.scalar(v, data.schema.field(col).type)), False)
            mask = m if mask is None else pc.and_(mask, m)
        out.append((key, data.filter(mask)))
    return out


def _write_files(table: "DeltaTable", data: pa.Table, schema: pa.Schema, partition_by: tuple[str, ...],
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
            storage.fs.pipe_file(storage.path(rel), payload)
            try:
                mtime = storage.mtime_ms(rel)
            except (OSError, FileNotFoundError):
                mtime = time.time_ns() // 1_000_000
            adds.append(AddFile(rel, len(payload), values, mtime, True, collect_stats(chunk, configuration)))
    return adds


# ----------------------------------------------------------------------- public
def write_table(table: "DeltaTable", data: Any, mode: str = "append", partition_by: Iterable[str] | None = None,
                job: dict[str, Any] | None = None, *, properties: dict[str, Any] | None = None,
                overwrite_schema: bool = False, max_rows_per_file: int | None = None,
                name: str | None = None, description: str | None = None, **txn_kwargs: Any) -> int:
    """Write ``data`` (a pyarrow Table or RecordBatch) and commit it; returns the new version.

    ``mode="append"`` adds the rows; ``"overwrite"`` replaces all rows (with
    ``overwrite_schema=True`` also the schema and partitioning). If the table does not
    exist it is created from the data's schema with ``partition_by``, ``properties``,
    ``name`` and ``description``. ``txn_kwargs`` go to the :class:`Transaction`
    (``user_metadata``, ``clock``, ``max_retries``, ``isolation_level``...).
    """
    if isinstance(data, pa.RecordBatch):
        data = pa.Table.from_batches([data])
    if not isinstance(data, pa.Table):
        raise InvalidArgumentError(f"data must be a pyarrow.Table or RecordBatch, got {type(data).__name__}")
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, got {mode!r}")
    if max_rows_per_file is not None and (isinstance(max_rows_per_file, bool) or not isinstance(
            max_rows_per_file, int) or max_rows_per_file < 1):
        raise InvalidArgumentError("max_rows_per_file must be a positive integer")
    if partition_by is not None:
        partition_by = (partition_by,) if isinstance(partition_by, str) else tuple(partition_by)

    try:
        snap = table.snapshot()
    except TableNotFoundError:
        snap = None

    clock = txn_kwargs.get("clock") or ict.system_clock
    if snap is None or (mode == "overwrite" and overwrite_schema):
        # the data defines the schema (new table, or an overwrite that replaces it)
        schema = schema_to_arrow(schema_string(data.schema))     # canonical Delta types
        keep = snap.partition_columns if snap is not None and partition_by is None else ()
        cols = validate_partition_columns(schema, partition_by if partition_by is not None else keep)
        data = conform_to_schema(data, schema)
        if snap is None:
            props = normalize_properties(properties)
            protocol, stored = protocol_for_new_table(arrow_to_schema(schema), props)
            metadata = Metadata(str(uuid.uuid4()), schema_string(schema), cols, stored, name, description,
                                created_time=int(clock()))
        else:
            if properties:
                raise InvalidArgumentError("properties can only be given when the table is created")
            old = snap.metadata
            protocol = None
            metadata = Metadata(old.id, schema_string(schema), cols, dict(old.configuration), old.name,
                                old.description, old.format_provider, dict(old.format_options), old.created_time)
    else:
        if properties:
            raise InvalidArgumentError("properties can only be given when the table is created; use "
                                       "a transaction's set_properties to change them")
        if overwrite_schema:
            raise InvalidArgumentError("overwrite_schema=True needs mode='overwrite'")
        cols = snap.partition_columns
        if partition_by is not None and tuple(partition_by) != tuple(cols):
            raise InvalidArgumentError(
                f"the table is partitioned by {list(cols)}, not {list(partition_by)}; "
                "use mode='overwrite' with overwrite_schema=True to change partitioning")
        check_writable(snap.protocol)
        check_can_add_data(snap.protocol, snap.metadata)
        schema = snap.schema
        data = conform_to_schema(data, schema)
        protocol, metadata = None, None
    conf = (metadata or snap.metadata).configuration  # type: ignore[union-attr]
    if str(conf.get("delta.columnMapping.mode", "none")).lower() != "none":
        raise UnsupportedFeatureError("this table uses column mapping; writing its data files needs physical "
                                      "column names, which this writer does not produce", feature="columnMapping")

    txn = Transaction(table, operation=txn_kwargs.pop("operation", "WRITE"),
                      operation_parameters={"mode": mode.capitalize(), "partitionBy": list(cols),
                                            **(txn_kwargs.pop("operation_parameters", None) or {})},
                      job=job, read_version=-1 if snap is None else snap.version, **txn_kwargs)
    if protocol is not None:
        txn.set_protocol(protocol)
    if metadata is not None:
        txn.set_metadata(metadata)
    if snap is not None and mode == "overwrite":
        txn.remove_files(txn.read_files().column("path").to_pylist())
    txn.validate()      # everything but the new files, before any file is written
    written: list[str] = []
    try:
        txn.add_files(_write_files(table, data, schema, tuple(cols), conf, max_rows_per_file, written))
        return txn.commit()
    except BaseException:
        if not txn.outcome_unknown:
            _delete_quietly(table, written)
        raise


def _delete_quietly(table: "DeltaTable", paths: list[str]) -> None:
    for rel in paths:
        try:
            table.storage.delete(rel)
        except (OSError, DeltaError):
            pass
