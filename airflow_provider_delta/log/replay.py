"""Vectorized replay of file actions with pyarrow.

Commit files are concatenated and split into lines by Arrow compute. Lines that
start with ``{"add":`` or ``{"remove":`` (the bulk of any log) are parsed by
Arrow's C++ JSON reader against an explicit schema; every other line
(protocol, metaData, txn, commitInfo, ...) is rare and parsed with ``json``.
Partition values are read with a struct of the known partition columns, all
strings, so no value is ever type-inferred (Arrow would read "2024-01-01" as a
timestamp). A batch the fast path cannot take (a non-string partition value, say)
falls back to parsing line by line, which gives the same result.

Reconciliation keeps the last action per file key (path plus deletion-vector id,
as the protocol defines it): a checkpoint is already reconciled, so only the
keys touched by later commits need sorting; the checkpoint's rows are filtered
with one hash lookup.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterable
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.json as pj

from .errors import CorruptLogError

STR_MAP = pa.map_(pa.string(), pa.string())
DV_TYPE = pa.struct([
    ("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
    ("sizeInBytes", pa.int32()), ("cardinality", pa.int64()), ("maxRowIndex", pa.int64()),
])

#: Columns of a normalized file-action table (adds and removes together).
FILE_ACTION_SCHEMA = pa.schema([
    ("path", pa.string()),
    ("partition_values", STR_MAP),
    ("size", pa.int64()),
    ("modification_time", pa.int64()),
    ("data_change", pa.bool_()),
    ("stats", pa.string()),
    ("tags", STR_MAP),
    ("deletion_vector", DV_TYPE),
    ("base_row_id", pa.int64()),
    ("default_row_commit_version", pa.int64()),
    ("clustering_provider", pa.string()),
    ("deletion_timestamp", pa.int64()),
    ("extended_file_metadata", pa.bool_()),
    ("is_add", pa.bool_()),
    ("version", pa.int64()),
    ("seq", pa.int64()),
])

#: (json field name, normalized column name) of add / remove actions
_ADD_FIELDS = [("path", "path"), ("partitionValues", "partition_values"), ("size", "size"),
               ("modificationTime", "modification_time"), ("dataChange", "data_change"),
               ("stats", "stats"), ("tags", "tags"), ("deletionVector", "deletion_vector"),
               ("baseRowId", "base_row_id"), ("defaultRowCommitVersion", "default_row_commit_version"),
               ("clusteringProvider", "clustering_provider")]
_REMOVE_FIELDS = [("path", "path"), ("partitionValues", "partition_values"), ("size", "size"),
                  ("dataChange", "data_change"), ("deletionVector", "deletion_vector"),
                  ("baseRowId", "base_row_id"), ("defaultRowCommitVersion", "default_row_commit_version"),
                  ("deletionTimestamp", "deletion_timestamp"),
                  ("extendedFileMetadata", "extended_file_metadata"), ("tags", "tags"), ("stats", "stats")]
_COL_TYPES = {f.name: f.type for f in FILE_ACTION_SCHEMA}


@dataclass
class ParsedLog:
    """Result of parsing a batch of JSON log files."""

    file_actions: pa.Table
    #: the non-file actions in log order: (version, action dict)
    others: list[tuple[int, dict[str, Any]]] = field(default_factory=list)


def empty_file_actions() -> pa.Table:
    return FILE_ACTION_SCHEMA.empty_table()


# --------------------------------------------------------------------------- JSON
def parse_json_logs(blobs: list[tuple[int, bytes, str]], partition_columns: Iterable[str],
                    seq_start: int = 0) -> ParsedLog:
    """Parse newline-delimited JSON files ``(version, bytes, path)`` given in log order."""
    blobs = [b for b in blobs if b[1]]
    if not blobs:
        return ParsedLog(empty_file_actions())
    parts, counts = [], []
    for _, data, _ in blobs:
        if not data.endswith(b"\n"):
            data = data + b"\n"
        parts.append(data)
        counts.append(data.count(b"\n"))
    big = b"".join(parts)
    lines = _split_lines(big)
    versions = np.repeat(np.asarray([b[0] for b in blobs], dtype=np.int64), counts)
    nonempty = pc.greater(pc.binary_length(pc.utf8_trim_whitespace(lines)), 0)
    if not pc.all(nonempty).as_py():
        mask = nonempty.to_numpy(zero_copy_only=False)
        lines = lines.filter(nonempty)
        versions = versions[mask]
    seqs = np.arange(seq_start, seq_start + len(lines), dtype=np.int64)
    is_add = pc.fill_null(pc.starts_with(lines, '{"add":'), False)
    is_remove = pc.fill_null(pc.starts_with(lines, '{"remove":'), False)
    is_other = pc.invert(pc.or_(is_add, is_remove))
    others: list[tuple[int, dict[str, Any]]] = []
    other_idx = np.flatnonzero(is_other.to_numpy(zero_copy_only=False))
    bad_json = False
    if len(other_idx):
        other_lines = lines.take(pa.array(other_idx)).to_pylist()
        for i, line in zip(other_idx, other_lines):
            try:
                obj = json.loads(line)
            except ValueError:
                bad_json = True
                break
            if not isinstance(obj, dict):
                bad_json = True
                break
            if "add" in obj or "remove" in obj:
                # an add/remove written with unusual formatting: handled by the slow path below
                others.append((int(versions[i]), {"__file_action__": obj, "__seq__": int(seqs[i])}))
            else:
                others.append((int(versions[i]), obj))
    if bad_json:
        _raise_first_bad_line(blobs)
    pcols = list(dict.fromkeys(partition_columns))
    tables = []
    for mask, kind in ((is_add, "add"), (is_remove, "remove")):
        idx = np.flatnonzero(mask.to_numpy(zero_copy_only=False))
        if not len(idx):
            continue
        sel = lines.take(pa.array(idx))
        v, s = versions[idx], seqs[idx]
        try:
            tables.append(_fast_parse(sel, kind, pcols, v, s))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
            dicts = _loads_or_raise(sel.to_pylist(), blobs)
            tables.append(actions_from_dicts([d[kind] for d in dicts], kind == "add", v, s))
    odd = [(v, o) for v, o in others if "__file_action__" in o]
    if odd:
        others = [(v, o) for v, o in others if "__file_action__" not in o]
        for v, o in odd:
            a = o["__file_action__"]
            kind = "add" if "add" in a else "remove"
            tables.append(actions_from_dicts([a[kind]], kind == "add", np.array([v]), np.array([o["__seq__"]])))
    fa = pa.concat_tables(tables).sort_by("seq") if len(tables) > 1 else (tables[0] if tables else empty_file_actions())
    return ParsedLog(fa, others)


def _split_lines(big: bytes) -> pa.Array:
    """One large buffer -> an Arrow string array of its lines, without a Python loop."""
    data = pa.py_buffer(big)
    offsets = pa.py_buffer(np.array([0, len(big)], dtype=np.int64).tobytes())
    whole = pa.Array.from_buffers(pa.large_string(), 1, [None, offsets, data])
    lines = pc.split_pattern(whole, "\n").flatten()
    return lines.slice(0, len(lines) - 1)  # the text ends with "\n": drop the empty tail


def _joined_buffer(lines: pa.Array) -> pa.Buffer:
    """The lines as one newline-terminated buffer (input for Arrow's JSON reader)."""
    joined = pc.binary_join_element_wise(lines, pa.scalar("", lines.type), "\n")
    if isinstance(joined, pa.ChunkedArray):
        joined = joined.combine_chunks()
    bufs = joined.buffers()
    offs = np.frombuffer(bufs[1], dtype=np.int64 if pa.types.is_large_string(joined.type) else np.int32)
    start, end = int(offs[joined.offset]), int(offs[joined.offset + len(joined)])
    return bufs[2].slice(start, end - start)


def _fast_parse(lines: pa.Array, kind: str, pcols: list[str], versions: np.ndarray,
                seqs: np.ndarray) -> pa.Table:
    fields = [
        pa.field("path", pa.string()),
        pa.field("partitionValues", pa.struct([(c, pa.string()) for c in pcols])),
        pa.field("size", pa.int64()),
        pa.field("dataChange", pa.bool_()),
        pa.field("deletionVector", DV_TYPE),
        pa.field("baseRowId", pa.int64()),
        pa.field("defaultRowCommitVersion", pa.int64()),
    ]
    if kind == "add":
        fields += [pa.field("modificationTime", pa.int64()), pa.field("stats", pa.string()),
                   pa.field("clusteringProvider", pa.string())]
    else:
        fields += [pa.field("deletionTimestamp", pa.int64()), pa.field("extendedFileMetadata", pa.bool_())]
    schema = pa.schema([pa.field(kind, pa.struct(fields))])
    buf = _joined_buffer(lines)
    block = max(1 << 22, min(buf.size + 1, 1 << 30))
    t = pj.read_json(pa.BufferReader(buf),
                     read_options=pj.ReadOptions(block_size=block, use_threads=True),
                     parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore",
                                                   newlines_in_values=False))
    if t.num_rows != len(lines):
        raise pa.ArrowInvalid("row count mismatch")
    cols = struct_columns(t.column(kind), kind)
    cols.pop("tags", None)
    # Tags have free-form keys: parse them only on the (rare) lines that carry them.
    tagged = pc.fill_null(pc.match_substring(lines, '"tags":{'), False)
    if pc.any(tagged).as_py():
        idx = np.flatnonzero(tagged.to_numpy(zero_copy_only=False))
        vals: list[Any] = [None] * len(lines)
        for i, line in zip(idx, lines.take(pa.array(idx)).to_pylist()):
            tags = json.loads(line)[kind].get("tags")
            vals[i] = list(tags.items()) if tags else None
        cols["tags"] = pa.array(vals, STR_MAP)
    return _assemble(cols, len(lines), kind == "add", versions, seqs)


def struct_columns(s: pa.Array, kind: str) -> dict[str, pa.Array]:
    """Children of an ``add``/``remove`` struct column, keyed by normalized column name."""
    if isinstance(s, pa.ChunkedArray):
        s = s.combine_chunks()
    cols: dict[str, pa.Array] = {}
    for jname, cname in (_ADD_FIELDS if kind == "add" else _REMOVE_FIELDS):
        idx = s.type.get_field_index(jname)
        if idx < 0:
            continue
        child = s.field(idx)
        if s.null_count:
            child = pc.if_else(s.is_valid(), child, pa.nulls(len(s), child.type))
        cols[cname] = child
    return cols


def file_actions_from_struct(s: pa.Array, kind: str, version: int, seq_start: int) -> pa.Table:
    """Normalized file actions from a checkpoint's ``add`` or ``remove`` column (non-null rows only)."""
    if isinstance(s, pa.ChunkedArray):
        s = s.combine_chunks()
    if s.null_count:
        s = s.filter(s.is_valid())
    n = len(s)
    return _assemble(struct_columns(s, kind), n, kind == "add", np.full(n, version, dtype=np.int64),
                     np.arange(seq_start, seq_start + n, dtype=np.int64))


def _loads_or_raise(lines: list[str], blobs) -> list[dict[str, Any]]:
    try:
        return [json.loads(x) for x in lines]
    except ValueError:
        _raise_first_bad_line(blobs)
        raise  # pragma: no cover


def _raise_first_bad_line(blobs) -> None:
    from .segment import parse_json_lines
    for _, data, path in blobs:
        parse_json_lines(data, path)
    raise CorruptLogError("a log file holds an action that is not a JSON object")


def struct_to_map(s: pa.Array) -> pa.Array:
    """A struct of string columns -> map<string,string>, one entry per field, row-major."""
    if isinstance(s, pa.ChunkedArray):
        s = s.combine_chunks()
    n = len(s)
    if pa.types.is_map(s.type):
        return s.cast(STR_MAP)
    if pa.types.is_null(s.type):
        return pa.MapArray.from_arrays(pa.array(np.zeros(n + 1, dtype=np.int32)),
                                       pa.array([], pa.string()), pa.array([], pa.string()))
    names = [s.type.field(i).name for i in range(s.type.num_fields)]
    k = len(names)
    if k == 0 or n == 0:
        offsets = np.zeros(n + 1, dtype=np.int32)
        return pa.MapArray.from_arrays(pa.array(offsets), pa.array([], pa.string()), pa.array([], pa.string()))
    children = [s.field(i).cast(pa.string()) for i in range(k)]
    stacked = pa.concat_arrays(children)
    idx = (np.arange(k, dtype=np.int64)[None, :] * n + np.arange(n, dtype=np.int64)[:, None]).ravel()
    items = stacked.take(pa.array(idx))
    keys = pa.array(np.tile(np.array(names, dtype=object), n), pa.string())
    offsets = pa.array(np.arange(0, n * k + 1, k, dtype=np.int32))
    return pa.MapArray.from_arrays(offsets, keys, items)


def _decode_paths(paths: pa.Array) -> pa.Array:
    """URL-decode the log's paths; only the few that contain '%' go through Python."""
    has_pct = pc.fill_null(pc.match_substring(paths, "%"), False)
    if not pc.any(has_pct).as_py():
        return paths
    idx = np.flatnonzero(has_pct.to_numpy(zero_copy_only=False))
    decoded = [unquote(p) for p in paths.take(pa.array(idx)).to_pylist()]
    out = paths.to_pylist() if len(idx) * 4 > len(paths) else None
    if out is not None:
        for i, d in zip(idx, decoded):
            out[i] = d
        return pa.array(out, pa.string())
    return pc.replace_with_mask(paths, has_pct, pa.array(decoded, pa.string()))


def _assemble(cols: dict[str, Any], n: int, is_add: bool, versions, seqs) -> pa.Table:
    arrays = []
    for f in FILE_ACTION_SCHEMA:
        if f.name == "is_add":
            arrays.append(pa.array(np.full(n, is_add)))
        elif f.name == "version":
            arrays.append(pa.array(np.asarray(versions, dtype=np.int64)))
        elif f.name == "seq":
            arrays.append(pa.array(np.asarray(seqs, dtype=np.int64)))
        elif f.name in cols and cols[f.name] is not None:
            a = cols[f.name]
            if isinstance(a, pa.ChunkedArray):
                a = a.combine_chunks()
            if f.name == "deletion_vector":
                a = _cast_dv(a)
            elif f.name in ("partition_values", "tags"):
                a = struct_to_map(a) if pa.types.is_struct(a.type) else a.cast(STR_MAP)
            elif a.type != f.type:
                a = a.cast(f.type)
            if f.name == "path":
                a = _decode_paths(a)
            arrays.append(a)
        else:
            arrays.append(pa.nulls(n, f.type))
    return pa.Table.from_arrays(arrays, schema=FILE_ACTION_SCHEMA)


def _cast_dv(a: pa.Array) -> pa.Array:
    if a.type == DV_TYPE:
        return a
    if pa.types.is_null(a.type):
        return pa.nulls(len(a), DV_TYPE)
    children = []
    for f in DV_TYPE:
        try:
            children.append(a.field(f.name).cast(f.type))
        except KeyError:
            children.append(pa.nulls(len(a), f.type))
    return pa.StructArray.from_arrays(children, fields=list(DV_TYPE), mask=a.is_null())


def actions_from_dicts(dicts: list[dict[str, Any]], is_add: bool, versions, seqs) -> pa.Table:
    """The slow path: normalized file actions from parsed JSON dicts."""
    names = _ADD_FIELDS if is_add else _REMOVE_FIELDS
    cols: dict[str, Any] = {}
    for jname, cname in names:
        vals = [d.get(jname) for d in dicts]
        if cname in ("partition_values", "tags"):
            vals = [None if v is None else [(str(k), None if x is None else str(x)) for k, x in v.items()]
                    for v in vals]
            cols[cname] = pa.array(vals, STR_MAP)
        elif cname == "deletion_vector":
            cols[cname] = pa.array(vals, DV_TYPE)
        elif cname == "stats":
            cols[cname] = pa.array([v if v is None or isinstance(v, str) else json.dumps(v) for v in vals],
                                   pa.string())
        else:
            cols[cname] = pa.array(vals, _COL_TYPES[cname])
    return _assemble(cols, len(dicts), is_add, versions, seqs)


# --------------------------------------------------------------------- reconcile
def _file_keys(t: pa.Table, with_dv: bool) -> pa.Array:
    path = t.column("path").combine_chunks()
    if not with_dv:
        return path
    dv = t.column("deletion_vector").combine_chunks()
    st = pc.fill_null(dv.field("storageType"), "")
    p = pc.fill_null(dv.field("pathOrInlineDv"), "")
    off = pc.fill_null(pc.cast(dv.field("offset"), pa.string()), "")
    return pc.binary_join_element_wise(path, st, p, off, "\x00")


def _has_dv(t: pa.Table) -> bool:
    return t.num_rows > 0 and t.column("deletion_vector").null_count < t.num_rows


def reconcile(base: pa.Table | None, new: pa.Table) -> pa.Table:
    """Latest action per file key: ``base`` (already reconciled) overlaid with ``new``.

    Returns adds and removes together (``is_add`` tells them apart).
    """
    if new.num_rows == 0:
        return base if base is not None else empty_file_actions()
    with_dv = _has_dv(new) or (base is not None and _has_dv(base))
    keys = _file_keys(new, with_dv)
    # newest action per key among the new ones
    order = pc.sort_indices(pa.table({"k": keys, "s": new.column("seq")}),
                            sort_keys=[("k", "ascending"), ("s", "descending")])
    sorted_keys = keys.take(order)
    if len(sorted_keys) > 1:
        first = pc.not_equal(sorted_keys.slice(1), sorted_keys.slice(0, len(sorted_keys) - 1))
        first = pa.concat_arrays([pa.array([True]), first])
        winners = new.take(order.filter(first))
        winner_keys = sorted_keys.filter(first)
    else:
        winners, winner_keys = new, keys
    if base is None or base.num_rows == 0:
        return winners
    base_keys = _file_keys(base, with_dv)
    keep = pc.invert(pc.is_in(base_keys, value_set=winner_keys))
    return pa.concat_tables([base.filter(keep), winners])
