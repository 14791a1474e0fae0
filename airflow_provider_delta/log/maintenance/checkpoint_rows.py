"""What goes into a checkpoint: its parquet layout and its rows, as Arrow batches.

The layout follows what Delta Spark writes (PROTOCOL.md "Checkpoint Schema", Delta
Spark ``Checkpoints.scala``), so every engine reads our checkpoints:

* top-level struct columns ``txn, add, remove, metaData, protocol, domainMetadata``,
  one action per row, every other column null;
* ``add`` carries ``stats`` as JSON text unless ``delta.checkpoint.writeStatsAsJson``
  is false, and, when ``delta.checkpoint.writeStatsAsStruct`` is true, the typed
  ``partitionValues_parsed`` (partitioned tables only) and ``stats_parsed`` columns
  built from the table schema (physical names under column mapping);
* ``remove`` omits ``stats``/``tags`` and keeps only tombstones younger than
  ``delta.deletedFileRetentionDuration`` (Spark keeps ``deletionTimestamp > now - retention``);
* paths are written URL-encoded, as the JSON commits hold them.

Multi-part checkpoints are partitioned the way Spark does it, ``pmod(murmur3(path,
seed 42), parts)``, with non-file actions where a null key lands (part ``42 % parts +
1``): racing writers, whichever wins each part file, always publish the same content.

Memory: rows are produced from the Arrow tables of ``Snapshot.files()`` in batches;
there is no Python code per file, so a million files fit.
"""
from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.action_schemas import (ADD_BASE_FIELDS, DOMAIN_TYPE, DV_TYPE, METADATA_TYPE, PROTOCOL_TYPE, REMOVE_TYPE,
                             STR_MAP, TXN_TYPE)
from ..base.path_spelling import LOG_PATH_COLUMN, encode_path
from ..base.errors import InvalidTableStateError
from ..base.features import CHECKPOINT_STATS_AS_JSON_PROPERTY, CHECKPOINT_STATS_AS_STRUCT_PROPERTY, column_mapping_mode
from ..base.intervals import deleted_file_retention_ms, set_transaction_retention_ms
from ..base.schema import partition_values_to_arrow, physical_name, schema_to_arrow
from ..read.snapshot import Snapshot

log = logging.getLogger(__name__)

#: Rows per parquet row group (and per processing batch).
ROW_GROUP_ROWS = 100_000
#: Spark's Murmur3Hash default seed, used by HashPartitioning.
SPARK_HASH_SEED = 42

#: characters encode_path leaves alone; anything else sends a path through Python quoting
_UNSAFE_PATH_CHARS = r"[^A-Za-z0-9/=:@$&+,;~\-_.!*'()]"


def _conf_bool(conf: dict[str, str], key: str, default: bool) -> bool:
    raw = conf.get(key)
    if raw is None:
        return default
    v = str(raw).strip().lower()
    if v in ("true", "false"):
        return v == "true"
    raise InvalidTableStateError(f"table property {key} must be 'true' or 'false', got {raw!r}")


@dataclass(frozen=True)
class CheckpointLayout:
    """What the checkpoint of one snapshot looks like: its parquet schema and the typed add columns."""

    schema: pa.Schema
    add_type: pa.StructType
    write_stats_json: bool
    partition_type: pa.StructType | None    # partitionValues_parsed
    partition_keys: tuple[str, ...]         # map keys (physical names) per partition field
    stats_type: pa.StructType | None        # stats_parsed


def _leaf_stats_fields(fields: list[pa.Field], physical: bool) -> tuple[list[pa.Field], list[pa.Field]]:
    """(min/max fields, nullCount fields) for a list of data fields, recursing into structs.

    Min/max exist for the types Delta Spark collects them for (numbers, decimals, dates,
    timestamps, strings); null counts for every column, nested structs mirrored.
    """
    minmax: list[pa.Field] = []
    nulls: list[pa.Field] = []
    for f in fields:
        name = physical_name(f) if physical else f.name
        t = f.type
        if pa.types.is_struct(t):
            mm, nc = _leaf_stats_fields([t.field(i) for i in range(t.num_fields)], physical)
            if mm:
                minmax.append(pa.field(name, pa.struct(mm)))
            if nc:
                nulls.append(pa.field(name, pa.struct(nc)))
            continue
        if (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)
                or pa.types.is_date(t) or pa.types.is_timestamp(t) or pa.types.is_string(t)):
            minmax.append(pa.field(name, t))
        nulls.append(pa.field(name, pa.int64()))
    return minmax, nulls


def checkpoint_layout(snapshot: Snapshot) -> CheckpointLayout:
    """The checkpoint schema for ``snapshot``, following its table properties."""
    md = snapshot.metadata
    conf = md.configuration
    write_json = _conf_bool(conf, CHECKPOINT_STATS_AS_JSON_PROPERTY, True)
    write_struct = _conf_bool(conf, CHECKPOINT_STATS_AS_STRUCT_PROPERTY, False)
    add_fields = list(ADD_BASE_FIELDS)
    if write_json:
        add_fields.append(pa.field("stats", pa.string()))
    partition_type = stats_type = None
    partition_keys: tuple[str, ...] = ()
    if write_struct:
        physical = column_mapping_mode(conf) in ("id", "name")
        schema = schema_to_arrow(md.schema_string)
        pcols = list(md.partition_columns)
        by_name = {f.name: f for f in schema}
        pfields = []
        keys = []
        for c in pcols:
            f = by_name.get(c)
            if f is None:
                raise InvalidTableStateError(f"partition column {c!r} is not in the table schema")
            key = physical_name(f) if physical else f.name
            keys.append(key)
            pfields.append(pa.field(key, f.type))
        if pfields:
            partition_type = pa.struct(pfields)
            partition_keys = tuple(keys)
            add_fields.append(pa.field("partitionValues_parsed", partition_type))
        data_fields = [f for f in schema if f.name not in set(pcols)]
        minmax, nulls = _leaf_stats_fields(data_fields, physical)
        sfields = [pa.field("numRecords", pa.int64())]
        if minmax:
            sfields += [pa.field("minValues", pa.struct(minmax)), pa.field("maxValues", pa.struct(minmax))]
        if nulls:
            sfields.append(pa.field("nullCount", pa.struct(nulls)))
        if snapshot.protocol.has_writer_feature("deletionVectors"):
            sfields.append(pa.field("tightBounds", pa.bool_()))
        stats_type = pa.struct(sfields)
        add_fields.append(pa.field("stats_parsed", stats_type))
    add_type = pa.struct(add_fields)
    schema = pa.schema([
        pa.field("txn", TXN_TYPE), pa.field("add", add_type), pa.field("remove", REMOVE_TYPE),
        pa.field("metaData", METADATA_TYPE), pa.field("protocol", PROTOCOL_TYPE),
        pa.field("domainMetadata", DOMAIN_TYPE),
    ])
    return CheckpointLayout(schema, add_type, write_json, partition_type, partition_keys, stats_type)


# ------------------------------------------------------------------- columns
def _column(t: pa.Table, name: str, typ: pa.DataType) -> pa.Array:
    """Column ``name`` of ``t`` as one array of ``typ``; all nulls when ``t`` lacks it."""
    if name not in t.column_names:
        return pa.nulls(t.num_rows, typ)
    col = t.column(name)
    arr = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if arr.type == typ:
        return arr
    if pa.types.is_null(arr.type):
        return pa.nulls(len(arr), typ)
    if pa.types.is_struct(typ) and pa.types.is_struct(arr.type):
        return _struct_by_name(arr, typ)
    return arr.cast(typ)


_SNAKE = {"storageType": "storage_type", "pathOrInlineDv": "path_or_inline_dv",
          "sizeInBytes": "size_in_bytes", "maxRowIndex": "max_row_index"}


def _struct_by_name(arr: pa.StructArray, typ: pa.StructType) -> pa.Array:
    """Rebuild a struct array with ``typ``'s fields, taking children by (camel or snake) name."""
    children = []
    for f in typ:
        idx = arr.type.get_field_index(f.name)
        if idx < 0:
            idx = arr.type.get_field_index(_SNAKE.get(f.name, f.name))
        children.append(arr.field(idx).cast(f.type) if idx >= 0 else pa.nulls(len(arr), f.type))
    return pa.StructArray.from_arrays(children, fields=list(typ), mask=arr.is_null())


def log_paths(t: pa.Table) -> pa.Array:
    """Each row's path as the log spells it (:mod:`..base.path_spelling`): a checkpoint keeps
    the spelling of the action it summarizes, or a later remove spelled like the add would
    no longer match it. Rows without one (built by hand) get the encoding of ``path``."""
    spelled = _column(t, LOG_PATH_COLUMN, pa.string())
    path = _column(t, "path", pa.string())
    # a scheme-less absolute path keeps its form (path_spelling.existing_spelling: its key is qualified)
    scheme_less = ak.fill_null(ak.and_(ak.and_(ak.starts_with(path, "/"), ak.invert(ak.starts_with(path, "//"))),
                                       ak.starts_with(spelled, "file:")), ab.scalar(False))
    if ak.any_true(scheme_less):
        spelled = ak.if_else(scheme_less, encode_paths(path), spelled)
    if spelled.null_count == 0:
        return spelled
    return ak.coalesce(spelled, encode_paths(path))


def encode_paths(paths: pa.Array) -> pa.Array:
    """URL-encode relative paths as the log stores them; only unusual paths go through Python."""
    unsafe = ak.fill_null(ak.match_substring_regex(paths, _UNSAFE_PATH_CHARS), ab.scalar(False))
    if not ak.any_true(unsafe):
        return paths
    idx = np.flatnonzero(ab.to_numpy(unsafe))
    encoded = [encode_path(p) for p in ak.take(paths, ab.from_numpy(idx)).to_pylist()]
    return ak.replace_with_mask(paths, unsafe, ab.array(encoded, pa.string()))


def _stats_read_type(t: pa.DataType) -> pa.DataType:
    """The type Arrow's JSON reader should use for a stats field (dates arrive as strings)."""
    if pa.types.is_struct(t):
        return pa.struct([pa.field(f.name, _stats_read_type(f.type)) for f in t])
    if pa.types.is_date(t):
        return pa.string()
    return t


def _json_lines_buffer(texts: pa.Array) -> pa.Buffer:
    """One newline-separated buffer of JSON objects, '{}' for nulls, for Arrow's JSON reader."""
    texts = ak.fill_null(texts, ab.scalar("{}", texts.type))
    texts = ak.replace_substring(texts, "\n", " ")  # only whitespace can hold a raw newline
    joined = ak.join_element_wise(texts, ab.scalar("", texts.type), separator=ab.scalar("\n", texts.type))
    if isinstance(joined, pa.ChunkedArray):
        joined = joined.combine_chunks()
    bufs = joined.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64 if pa.types.is_large_string(joined.type) else np.int32)
    start, end = int(offs[joined.offset]), int(offs[joined.offset + len(joined)])
    return bufs[2].slice(start, end - start)


def _read_stats(texts: pa.Array, stats_type: pa.StructType) -> pa.StructArray:
    read_type = _stats_read_type(stats_type)
    buf = _json_lines_buffer(texts)
    parsed = pj.read_json(
        pa.BufferReader(buf),
        read_options=pj.ReadOptions(block_size=max(1 << 20, min(buf.size + 1, 1 << 30))),
        parse_options=pj.ParseOptions(explicit_schema=pa.schema(list(read_type)),
                                      unexpected_field_behavior="ignore"))
    if parsed.num_rows != len(texts):
        raise pa.ArrowInvalid("stats row count mismatch")
    children = [parsed.column(f.name).combine_chunks().cast(f.type) for f in stats_type]
    return pa.StructArray.from_arrays(children, fields=list(stats_type), mask=texts.is_null())


def parse_stats(texts: pa.Array, stats_type: pa.StructType) -> pa.StructArray:
    """``stats`` JSON strings -> ``stats_parsed`` structs, vectorized with Arrow's JSON reader.

    JSON has no NaN or infinity, so writers that emit them as strings ("NaN") make the
    fast path fail; those bounds are then dropped (null = unknown, which only costs
    skipping). Stats that still do not fit the schema are left out for that batch.
    """
    try:
        return _read_stats(texts, stats_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        pass
    cleaned = texts
    for token in ('"NaN"', '"Infinity"', '"-Infinity"'):
        cleaned = ak.replace_substring_regex(cleaned, r":\s*" + token, ":null")
    try:
        return _read_stats(cleaned, stats_type)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as e:
        log.warning("stats of %d files do not match the table schema (%s); stats_parsed left null "
                    "for them (the JSON stats are unaffected)", len(texts), e)
        return pa.nulls(len(texts), stats_type)


def _partition_parsed(pv: pa.Array, layout: CheckpointLayout) -> pa.StructArray:
    children = []
    for key, f in zip(layout.partition_keys, layout.partition_type):
        raw = ak.map_lookup(pv, ab.scalar(key), "first") if len(pv) else pa.nulls(0, pa.string())
        children.append(partition_values_to_arrow(raw, f.type))
    return pa.StructArray.from_arrays(children, fields=list(layout.partition_type))


def add_column(files: pa.Table, layout: CheckpointLayout) -> pa.StructArray:
    """The ``add`` struct column for a batch of ``Snapshot.files()`` rows."""
    n = files.num_rows
    paths = log_paths(files)
    pv = _column(files, "partition_values", STR_MAP)
    cols = {
        "path": paths, "partitionValues": pv,
        "size": _column(files, "size", pa.int64()),
        "modificationTime": _column(files, "modification_time", pa.int64()),
        "dataChange": _column(files, "data_change", pa.bool_()),
        "tags": _column(files, "tags", STR_MAP),
        "deletionVector": _column(files, "deletion_vector", DV_TYPE),
        "baseRowId": _column(files, "base_row_id", pa.int64()),
        "defaultRowCommitVersion": _column(files, "default_row_commit_version", pa.int64()),
        "clusteringProvider": _column(files, "clustering_provider", pa.string()),
    }
    stats = _column(files, "stats", pa.string())
    if layout.write_stats_json:
        cols["stats"] = stats
    if layout.partition_type is not None:
        cols["partitionValues_parsed"] = _partition_parsed(pv, layout)
    if layout.stats_type is not None:
        cols["stats_parsed"] = parse_stats(stats, layout.stats_type)
    arrays = [cols[f.name] for f in layout.add_type]
    # partitionValues is required in an add: a missing map (some writers omit it when
    # unpartitioned) is written as {} rather than null
    if pv.null_count:
        empty = pa.MapArray.from_arrays(ab.from_numpy(np.zeros(n + 1, dtype=np.int32)),
                                        pa.nulls(0, pa.string()), pa.nulls(0, pa.string()))
        arrays[1] = ak.if_else(ak.is_valid(pv), pv, ak.cast(empty, STR_MAP))
    return pa.StructArray.from_arrays(arrays, fields=list(layout.add_type))


def remove_column(tombstones: pa.Table) -> pa.StructArray:
    """The ``remove`` struct column (tombstones, without stats and tags) for a batch."""
    arrays = [
        log_paths(tombstones),
        _column(tombstones, "deletion_timestamp", pa.int64()),
        _column(tombstones, "data_change", pa.bool_()),
        _column(tombstones, "extended_file_metadata", pa.bool_()),
        _column(tombstones, "partition_values", STR_MAP),
        _column(tombstones, "size", pa.int64()),
        _column(tombstones, "deletion_vector", DV_TYPE),
        _column(tombstones, "base_row_id", pa.int64()),
        _column(tombstones, "default_row_commit_version", pa.int64()),
    ]
    return pa.StructArray.from_arrays(arrays, fields=list(REMOVE_TYPE))


def action_batch(schema: pa.Schema, column: str, values: pa.Array) -> pa.RecordBatch:
    """Rows holding ``values`` in ``column`` and nulls in every other column of ``schema``."""
    n = len(values)
    arrays = [values if f.name == column else pa.nulls(n, f.type) for f in schema]
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def non_file_rows(snapshot: Snapshot, schema: pa.Schema, now_ms: int) -> pa.RecordBatch:
    """protocol, metaData, txn and domainMetadata rows (one batch)."""
    p, md = snapshot.protocol, snapshot.metadata
    rows: list[tuple[str, dict[str, Any]]] = [
        ("protocol", {"minReaderVersion": p.min_reader_version, "minWriterVersion": p.min_writer_version,
                      "readerFeatures": list(p.reader_features) if p.reader_features is not None else None,
                      "writerFeatures": list(p.writer_features) if p.writer_features is not None else None}),
        ("metaData", {"id": md.id, "name": md.name, "description": md.description,
                      "format": {"provider": md.format_provider, "options": list(md.format_options.items())},
                      "schemaString": md.schema_string, "partitionColumns": list(md.partition_columns),
                      "configuration": list(md.configuration.items()), "createdTime": md.created_time}),
    ]
    rows += retained_txns_and_domains(snapshot, now_ms)
    columns = []
    for f in schema:
        columns.append(ab.array([v if k == f.name else None for k, v in rows], f.type))
    return pa.RecordBatch.from_arrays(columns, schema=schema)


def retained_txns_and_domains(snapshot: Snapshot, now_ms: int) -> list[tuple[str, dict[str, Any]]]:
    """The ``txn`` and ``domainMetadata`` actions a checkpoint keeps, as JSON-form dicts."""
    rows: list[tuple[str, dict[str, Any]]] = []
    txn_retention = set_transaction_retention_ms(snapshot.metadata.configuration)
    for app_id, (ver, last_updated) in sorted(snapshot.transactions(include_expired=True).items()):
        # Spark drops an app id whose lastUpdated is older than delta.setTransactionRetentionDuration
        if txn_retention is not None and last_updated is not None and last_updated < now_ms - txn_retention:
            continue
        rows.append(("txn", {"appId": app_id, "version": ver, "lastUpdated": last_updated}))
    for domain, configuration in sorted(snapshot.domain_metadata().items()):
        rows.append(("domainMetadata", {"domain": domain, "configuration": configuration, "removed": False}))
    return rows


def _live_tombstones(snapshot: Snapshot, now_ms: int) -> pa.Table:
    t = snapshot.tombstones(now_ms=now_ms)
    if t.num_rows == 0:
        return t
    retention = deleted_file_retention_ms(snapshot.metadata.configuration)
    ts = ak.fill_null(_column(t, "deletion_timestamp", pa.int64()), ab.scalar(0))
    return ak.filter(t, ak.greater(ts, ab.scalar(now_ms - retention)))


def _split_by_part(t: pa.Table, parts: int) -> Iterator[tuple[int, pa.Table]]:
    """(part index, rows of ``t`` in that part), by Spark's hash of the encoded path."""
    if parts == 1 or t.num_rows == 0:
        yield 0, t
        return
    paths = log_paths(t)
    part = np.mod(spark_murmur3(paths).astype(np.int64), parts)
    if parts <= 32:
        # a boolean filter copies sequentially: much cheaper than a random-order take
        for i in range(parts):
            mask = part == i
            if mask.any():
                yield i, t.filter(ab.from_numpy(mask))
        return
    order = np.argsort(part, kind="stable")
    grouped = t.take(ab.from_numpy(order))
    bounds = np.searchsorted(part[order], np.arange(parts + 1))
    for i in range(parts):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        if hi > lo:
            yield i, grouped.slice(lo, hi - lo)


def checkpoint_batches(snapshot: Snapshot, layout: CheckpointLayout, now_ms: int, parts: int = 1,
                       rows_per_batch: int = ROW_GROUP_ROWS,
                       with_non_file: bool = True) -> Iterator[tuple[int, str, pa.RecordBatch]]:
    """(part index, kind, batch) of checkpoint rows: non-file actions, then adds, then removes.

    With ``parts`` > 1 rows are routed as Spark's ``repartition(parts, coalesce(add.path,
    remove.path))`` does: ``pmod(murmur3(path, 42), parts)``, and the non-file actions
    (a null key) to ``42 % parts``. Each part's file rows are gathered once from the flat
    file table, then turned into checkpoint rows batch by batch. ``with_non_file=False``
    gives only the file actions (the rows of v2 checkpoint sidecars).
    """
    if with_non_file:
        yield SPARK_HASH_SEED % parts, "meta", non_file_rows(snapshot, layout.schema, now_ms)
    sources = (("add", snapshot.files, lambda b: add_column(b, layout)),
               ("remove", lambda: _live_tombstones(snapshot, now_ms), remove_column))
    for kind, load, build in sources:   # loaded one after the other to bound memory
        for part, rows in _split_by_part(load(), parts):
            for start in range(0, rows.num_rows, rows_per_batch):
                yield part, kind, action_batch(layout.schema, kind, build(rows.slice(start, rows_per_batch)))


# ------------------------------------------------------------- partitioning
_C1, _C2 = np.uint32(0xCC9E2D51), np.uint32(0x1B873593)


def _rotl(x: np.ndarray, r: int) -> np.ndarray:
    return (x << np.uint32(r)) | (x >> np.uint32(32 - r))


def _mix_k1(k: np.ndarray) -> np.ndarray:
    return _rotl(k * _C1, 15) * _C2


def _mix_h1(h: np.ndarray, k: np.ndarray) -> np.ndarray:
    h = _rotl(h ^ k, 13)
    return h * np.uint32(5) + np.uint32(0xE6546B64)


def spark_murmur3(strings: pa.Array, seed: int = SPARK_HASH_SEED) -> np.ndarray:
    """Spark's ``hash(col)`` (Murmur3_x86_32.hashUnsafeBytes) of non-null UTF-8 strings, as int32.

    Spark hashes whole 4-byte little-endian words, then each remaining byte as its own
    signed word (not standard Murmur3's tail). Vectorized over rows: each chunk of
    strings is laid out as a zero-padded byte matrix, hashed one word column at a time.
    """
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    strings = strings.cast(pa.large_string())
    n = len(strings)
    out = np.empty(n, dtype=np.uint32)
    if n == 0:
        return out.view(np.int32)
    bufs = strings.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64)[strings.offset:strings.offset + n + 1]
    data = np.frombuffer(bufs[2], dtype=np.uint8) if bufs[2] is not None else np.zeros(0, np.uint8)
    data = np.concatenate([data, np.zeros(4, np.uint8)])  # room for the padded gather below
    chunk = 65_536
    with np.errstate(over="ignore"):
        for lo in range(0, n, chunk):
            hi = min(n, lo + chunk)
            start = offs[lo:hi]
            lengths = offs[lo + 1:hi + 1] - start
            width = int(lengths.max()) if len(lengths) else 0
            width4 = (width + 3) // 4 * 4
            h = np.full(hi - lo, np.uint32(seed & 0xFFFFFFFF), dtype=np.uint32)
            if width4:
                itype = np.int32 if len(data) < 2**31 - width4 else np.int64
                cols = np.arange(width4, dtype=itype)
                idx = start.astype(itype)[:, None] + cols[None, :]
                np.minimum(idx, len(data) - 1, out=idx)
                mat = data[idx]
                mat[cols[None, :] >= lengths[:, None]] = 0
                words = np.ascontiguousarray(mat).view("<u4")        # (rows, width4 / 4)
                full = lengths // 4
                for j in range(words.shape[1]):
                    active = full > j
                    if not active.any():
                        break
                    h = np.where(active, _mix_h1(h, _mix_k1(words[:, j].astype(np.uint32))), h)
                for t in range(3):
                    pos = full * 4 + t
                    active = lengths > pos
                    if not active.any():
                        continue
                    b = mat[np.arange(hi - lo), np.minimum(pos, width4 - 1)]
                    k = b.astype(np.int8).astype(np.int32).view(np.uint32)
                    h = np.where(active, _mix_h1(h, _mix_k1(k)), h)
            h ^= lengths.astype(np.uint32)
            h ^= h >> np.uint32(16)
            h *= np.uint32(0x85EBCA6B)
            h ^= h >> np.uint32(13)
            h *= np.uint32(0xC2B2AE35)
            h ^= h >> np.uint32(16)
            out[lo:hi] = h
    return out.view(np.int32)


