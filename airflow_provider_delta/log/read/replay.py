"""Vectorized replay of file actions with pyarrow.

Commit files are concatenated and split into lines by Arrow compute. Lines that
start with ``{"add":`` or ``{"remove":`` (the bulk of any log) are parsed by
Arrow's C++ JSON reader against an explicit schema; every other line
(protocol, metaData, txn, commitInfo, ...) is rare and parsed with ``json``.
Partition values are read with a struct of the known partition columns, all
strings, so no value is ever type-inferred (Arrow would read "2024-01-01" as a
timestamp). A batch the fast path cannot take (a non-string partition value, say)
falls back to parsing line by line, which gives the same result.

Reconciliation keeps the last action per file key (the path as the log spells it plus
the deletion-vector id, as the protocol defines it; the decoded path is kept beside it to
open the file): a checkpoint is already reconciled, so only the
keys touched by later commits need sorting; the checkpoint's rows are filtered
with one hash lookup.
"""
from __future__ import annotations

import json
import os
from typing import Any, Iterable
from urllib.parse import unquote

import numpy as np
import pyarrow as pa
import pyarrow.json as pj

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.action_schemas import (ADD_FIELDS, DV_TYPE, FILE_ACTION_SCHEMA, FILE_ACTION_TYPES, REMOVE_FIELDS,
                             STR_MAP, empty_file_actions)
from .action_lines import action_kind, kinds_before
from .column_mapping import partition_keys_of
from .commit_reader import CommitBlobs, parse_json_lines
from ..base.errors import CorruptLogError
from ..base.path_spelling import LOG_PATH_COLUMN, NEEDS_NORMALIZING_REGEX, canonical_log_path, uri_path_part
from ..base.records import Record


class ParsedLog(Record):
    """Result of parsing a batch of JSON log files."""

    __slots__ = ("file_actions", "others")
    _factories = {"others": list}

    file_actions: pa.Table
    #: the non-file actions in log order: (version, action dict)
    others: list[tuple[int, dict[str, Any]]]



# --------------------------------------------------------------------------- JSON
def parse_json_logs(blobs: list[tuple[int, bytes, str]], partition_columns: Iterable[str],
                    seq_start: int = 0) -> ParsedLog:
    """:func:`_parse_json_logs`, with values no log may hold reported as CorruptLogError.

    ``partition_columns``: the partition keys to read (the table's current ones). A metaData
    action among these commits that names others (the partitioning changed) is seen among
    the parsed non-file actions; the commits are then parsed again with all of them, so
    no byte scan for metaData lines is needed up front.

    Numbers beyond int64 (``"size": 1e30``) and absurdly deep nesting surface from Arrow or
    ``json`` as OverflowError / RecursionError; the caller gets the typed error instead.
    """
    pcols = list(dict.fromkeys(partition_columns))
    try:
        parsed = _parse_json_logs(blobs, pcols, seq_start)
        more = _new_partition_keys(parsed.others, pcols)
        return _parse_json_logs(blobs, pcols + more, seq_start) if more else parsed
    except (OverflowError, RecursionError) as e:
        raise CorruptLogError(f"{_describe(blobs)}: an action holds a value no Delta log may hold "
                              f"({type(e).__name__}: {str(e)[:200]})") from None


def _new_partition_keys(others: list[tuple[int, dict[str, Any]]], known: list[str]) -> list[str]:
    """Partition keys named by the metaData actions among ``others`` that ``known`` lacks."""
    seen, out = set(known), []
    for _, obj in others:
        md = obj.get("metaData")
        if not isinstance(md, dict):
            continue
        try:
            keys = partition_keys_of(md)
        except (ValueError, KeyError, AttributeError, TypeError):
            continue    # a malformed metaData is reported by whoever reads it as metadata
        for k in keys:
            if k not in seen:
                seen.add(k)
                out.append(k)
    return out


def _parse_json_logs(blobs: CommitBlobs | list[tuple[int, bytes, str]], partition_columns: Iterable[str],
                     seq_start: int = 0) -> ParsedLog:
    """Parse newline-delimited JSON files given in log order (as read, or ``(version, bytes, path)``).

    The files, in one buffer (see ``CommitBlobs``), are parsed in a single pass by Arrow's JSON
    reader with a schema holding only ``add`` and ``remove`` (other keys are skipped
    by the C++ parser). Row i of the result is line i, so the few other lines
    (protocol, metaData, txn, commitInfo, ...) are found by position and parsed
    with ``json``. The result stays chunked as Arrow produced it: no full copy.
    """
    blobs = CommitBlobs.of(blobs)
    buf, bounds = blobs.buffer, blobs.bounds
    if not len(blobs) or bounds[-1] == bounds[0]:
        return ParsedLog(empty_file_actions())
    counts = np.fromiter((buf.count(b"\n", bounds[i], bounds[i + 1]) for i in range(len(blobs))),
                         dtype=np.int64, count=len(blobs))
    total = int(counts.sum())
    pcols = list(dict.fromkeys(partition_columns))
    try:
        t = _read_file_actions_json(pa.py_buffer(buf)[bounds[0]:bounds[-1]], pcols)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return _parse_slow(blobs, seq_start)
    if t.num_rows != total:
        # blank lines (hand-made logs): drop them so that row i is line i, then retry
        given = [b for b in blobs if b[1]]
        cleaned = [(v, b"\n".join(x for x in d.splitlines() if x.strip()) + b"\n", p) for v, d, p in given]
        if any(len(c[1]) != len(b[1]) for c, b in zip(cleaned, given)):
            return _parse_json_logs([c for c in cleaned if c[1].strip()], partition_columns, seq_start)
        return _parse_slow(blobs, seq_start)
    versions = np.repeat(np.asarray(blobs.versions, dtype=np.int64), counts)
    seqs = np.arange(seq_start, seq_start + total, dtype=np.int64)
    file_start_row = np.concatenate(([0], np.cumsum(counts)[:-1]))
    add_col, rm_col = t.column("add"), t.column("remove")
    add_valid, rm_valid = one_action_per_line({"add": file_action_validity(add_col),
                                               "remove": file_action_validity(rm_col)})
    others: list[tuple[int, dict[str, Any]]] = []
    other_rows = _nonzero(ak.invert(ak.or_(add_valid, rm_valid)))
    if len(other_rows):
        files_of = np.searchsorted(file_start_row, other_rows, side="right") - 1
        for row, fi in zip(other_rows, files_of):
            line = _nth_line(buf, *blobs.span(fi), int(row - file_start_row[fi]), int(counts[fi]))
            try:
                obj = json.loads(line)
            except ValueError:
                _raise_first_bad_line(blobs)
            if not isinstance(obj, dict):
                _raise_first_bad_line(blobs)
            others.append((blobs.versions[fi], without_pathless_file_actions(obj)))
    jobs = []   # (kind, rows of the kind's actions in this chunk, the chunk, its validity)
    for col, valid, kind in ((add_col, add_valid, "add"), (rm_col, rm_valid, "remove")):
        offset = 0
        for chunk, vchunk in zip(col.chunks, valid.chunks):
            idx = _nonzero(vchunk) + offset
            offset += len(chunk)
            if len(idx):
                jobs.append((kind, idx, chunk, vchunk))
    selected = ak.filter_each([(chunk, vchunk) for _, _, chunk, vchunk in jobs])
    tables = []
    for (kind, idx, _, _), rows in zip(jobs, selected):
        cols = struct_columns(rows, kind)
        tags = cols.pop("tags", None)       # an empty struct: which adds carry a tags object
        if tags is not None and tags.null_count < len(tags):
            cols["tags"] = _tags_of(blobs, file_start_row, counts, idx, _nonzero(ak.is_valid(tags)), kind)
        try:
            tables.append(_assemble(cols, len(idx), kind == "add", versions[idx], seqs[idx]))
        except CorruptLogError:
            return _parse_slow(blobs, seq_start)  # names the file and line at fault
    fa = pa.concat_tables(tables) if len(tables) > 1 else (tables[0] if tables else empty_file_actions())
    return ParsedLog(fa, others)


#: the action columns the fast path reads: each is masked where an action before it (action_lines'
#: order) is valid, so every action before one of them must be among them
_FAST_KINDS = ("add", "remove")
if not all(set(kinds_before(kind)) <= set(_FAST_KINDS) for kind in _FAST_KINDS):
    raise ImportError("replay's fast path must read every action kind that takes a line before its own")


def file_action_validity(col: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """Where an ``add`` or ``remove`` column holds a file action for state reconstruction: the action and
    its ``path`` not null. Delta Spark's ``Snapshot.stateReconstruction`` sets an add or remove whose path
    is null to null before ``SingleAction.unwrap``, so such a line is its other action
    (``{"add": {}, "remove": R}`` removes R) or none (:func:`without_pathless_file_actions`)."""
    valid = ak.is_valid(col)
    if not has_pathless_file_action(col):
        return valid                            # the usual log: every action names its path
    return ak.and_(valid, ak.is_valid(ak.struct_field(col, "path")))


def has_pathless_file_action(col: pa.ChunkedArray | pa.Array) -> bool:
    """Whether an ``add``/``remove`` column holds an action without a path (:func:`file_action_validity`)."""
    return ak.struct_field(col, "path").null_count != col.null_count


def without_pathless_file_actions(obj: dict[str, Any]) -> dict[str, Any]:
    """A parsed line as state reconstruction sees it: an ``add``/``remove`` object without a path (absent or
    null) dropped (:func:`file_action_validity`)."""
    if not any(isinstance(obj.get(k), dict) and obj[k].get("path") is None for k in _FAST_KINDS):
        return obj
    return {k: v for k, v in obj.items() if not (k in _FAST_KINDS and isinstance(v, dict) and v.get("path") is None)}


def one_action_per_line(valid: dict[str, pa.ChunkedArray]) -> list[pa.ChunkedArray]:
    """The validity of each of :data:`_FAST_KINDS` with a line counted as one action only, the first
    non-null in :func:`~.action_lines.kinds_before`'s order (Delta Spark's ``SingleAction.unwrap``): a
    line ``{"add": A, "remove": B}`` (either key order) is the add of A; B is not removed. Per chunk
    (the columns of one table share their chunking), and only where two masks overlap at all; the mask
    of a kind no earlier action overlaps is returned as given (``is``)."""
    out = []
    for kind in _FAST_KINDS:
        mask = valid[kind]
        for before in kinds_before(kind):
            other = valid[before]
            if ak.any_true(ak.and_(mask, other)):
                if [len(c) for c in mask.chunks] != [len(c) for c in other.chunks]:
                    mask, other = pa.chunked_array([mask.combine_chunks()]), pa.chunked_array([other.combine_chunks()])
                mask = pa.chunked_array([ak.and_(m, ak.invert(o)) for m, o in zip(mask.chunks, other.chunks)],
                                        pa.bool_())
        out.append(mask)
    return out


def _nth_line(buf: bytes | bytearray, start: int, end: int, k: int, n_lines: int) -> bytes:
    """Line ``k`` (0-based) of the ``n_lines`` in ``buf[start:end]`` (which ends with a newline),
    scanning from whichever end is nearer."""
    if k <= n_lines // 2:
        for _ in range(k):
            start = buf.index(b"\n", start, end) + 1
        return bytes(buf[start:buf.index(b"\n", start, end)])
    stop = end - 1
    for _ in range(n_lines - 1 - k):
        stop = buf.rindex(b"\n", start, stop)
    before = buf.rfind(b"\n", start, stop)
    return bytes(buf[start if before < 0 else before + 1:stop])


def _nonzero(mask: pa.Array) -> np.ndarray:
    """Indices of true values, read straight from the Arrow buffer.

    (``Array.to_numpy`` imports pandas on first use, which costs more than the replay.)
    """
    idx = ak.indices_nonzero(mask)
    return np.frombuffer(idx.buffers()[1], dtype=np.uint64, count=len(idx),
                         offset=idx.offset * 8).astype(np.int64)


def _read_file_actions_json(big: pa.Buffer, pcols: list[str]) -> pa.Table:
    common = [
        pa.field("path", pa.string()),
        pa.field("partitionValues", pa.struct([(c, pa.string()) for c in pcols])),
        pa.field("size", pa.int64()),
        pa.field("dataChange", pa.bool_()),
        pa.field("deletionVector", DV_TYPE),
        pa.field("baseRowId", pa.int64()),
        pa.field("defaultRowCommitVersion", pa.int64()),
    ]
    # "tags" as a struct of no fields: the reader only says which adds carry a tags object
    # (free-form keys; _tags_of parses those lines), so no byte scan of the log is needed
    add = common + [pa.field("modificationTime", pa.int64()), pa.field("stats", pa.string()),
                    pa.field("clusteringProvider", pa.string()), pa.field("tags", pa.struct([]))]
    remove = common + [pa.field("deletionTimestamp", pa.int64()), pa.field("extendedFileMetadata", pa.bool_())]
    schema = pa.schema([pa.field("add", pa.struct(add)), pa.field("remove", pa.struct(remove))])
    # A few large blocks: enough to keep every core parsing, few enough that the per-chunk
    # Arrow calls afterwards stay cheap.
    block = max(1 << 22, len(big) // (2 * (os.cpu_count() or 2)) + 1)
    return pj.read_json(pa.BufferReader(big),
                        read_options=pj.ReadOptions(block_size=block, use_threads=True),
                        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="ignore",
                                                      newlines_in_values=False))


def _tags_of(blobs: CommitBlobs, file_start_row: np.ndarray, counts: np.ndarray, rows: np.ndarray,
             present: np.ndarray, kind: str) -> pa.Array:
    """Tags of the actions on lines ``rows`` (``present``: positions in ``rows`` that carry a tags
    object). Tags have free-form keys: those lines are parsed with ``json``."""
    vals: list[Any] = [None] * len(rows)
    files_of = np.searchsorted(file_start_row, rows[present], side="right") - 1
    for j, fi in zip(present, files_of):
        line = _nth_line(blobs.buffer, *blobs.span(fi), int(rows[j] - file_start_row[fi]), int(counts[fi]))
        tags = json.loads(line)[kind].get("tags")
        vals[j] = [(str(k), None if v is None else str(v)) for k, v in tags.items()] if tags else None
    return ab.array(vals, STR_MAP)


def _parse_slow(blobs: list[tuple[int, bytes, str]], seq_start: int) -> ParsedLog:
    """Line-by-line parsing with ``json``: for logs the fast path cannot take (e.g. a
    non-string partition value). Same result, slower."""
    others: list[tuple[int, dict[str, Any]]] = []
    rows: dict[str, tuple[list, list, list]] = {"add": ([], [], []), "remove": ([], [], [])}
    seq = seq_start
    for version, data, path in blobs:
        for i, obj in enumerate(parse_json_lines(data, path), start=1):
            obj = without_pathless_file_actions(obj)
            kind = action_kind(obj)
            if kind not in ("add", "remove"):
                others.append((version, obj))
            else:
                action = obj[kind]
                if not isinstance(action, dict) or not isinstance(action.get("path"), str):
                    raise CorruptLogError(f"{path}, action {i}: a {kind} action needs an object with a "
                                          "string 'path'", path=path, line=i)
                d, v, s = rows[kind]
                d.append(obj[kind])
                v.append(version)
                s.append(seq)
            seq += 1
    try:
        tables = [actions_from_dicts(d, kind == "add", np.asarray(v, dtype=np.int64), np.asarray(s, dtype=np.int64))
                  for kind, (d, v, s) in rows.items() if d]
    except (pa.ArrowInvalid, pa.ArrowTypeError, AttributeError, TypeError, ValueError) as e:
        raise CorruptLogError(f"a file action in {_describe(blobs)} is malformed: {e}") from None
    fa = pa.concat_tables(tables) if tables else empty_file_actions()
    return ParsedLog(fa, others)


def struct_columns(s: pa.Array, kind: str) -> dict[str, pa.Array]:
    """Children of an ``add``/``remove`` struct column, keyed by normalized column name."""
    if isinstance(s, pa.ChunkedArray):
        s = s.combine_chunks()
    cols: dict[str, pa.Array] = {}
    for jname, cname in (ADD_FIELDS if kind == "add" else REMOVE_FIELDS):
        idx = s.type.get_field_index(jname)
        if idx < 0:
            continue
        child = s.field(idx)
        if s.null_count:
            child = ak.if_else(ak.is_valid(s), child, pa.nulls(len(s), child.type))
        cols[cname] = child
    return cols


def file_actions_from_struct(s: pa.Array, kind: str, version: int, seq_start: int) -> pa.Table:
    """Normalized file actions from a checkpoint's ``add`` or ``remove`` column (non-null rows only).

    A checkpoint's other rows (protocol, metaData, txn, ...) are few, so the valid rows
    form a few contiguous runs: those are sliced (zero-copy) rather than filtered, which
    would copy every column, stats strings included.
    """
    chunks = s.chunks if isinstance(s, pa.ChunkedArray) else [s]
    tables = []
    seq = seq_start
    for chunk in chunks:
        for part in _valid_parts(chunk):
            n = len(part)
            tables.append(_assemble(struct_columns(part, kind), n, kind == "add",
                                    np.full(n, version, dtype=np.int64),
                                    np.arange(seq, seq + n, dtype=np.int64)))
            seq += n
    if not tables:
        return empty_file_actions()
    return pa.concat_tables(tables) if len(tables) > 1 else tables[0]


#: past this many runs of selected rows, one filter (a copy) is cheaper than many slices
MAX_RUNS = 64


def _runs(idx: np.ndarray) -> list[tuple[int, int]] | None:
    """The sorted row indices ``idx`` as (start, length) runs; None when there are more than MAX_RUNS."""
    if not len(idx):
        return []
    breaks = np.flatnonzero(np.diff(idx) != 1)
    if len(breaks) + 1 > MAX_RUNS:
        return None
    starts = np.concatenate(([idx[0]], idx[breaks + 1]))
    ends = np.concatenate((idx[breaks], [idx[-1]])) + 1
    return [(int(a), int(b - a)) for a, b in zip(starts, ends)]


def _valid_parts(chunk: pa.Array) -> list[pa.Array]:
    """The non-null rows of ``chunk`` as zero-copy slices of contiguous runs (a filter if fragmented)."""
    if chunk.null_count == 0:
        return [chunk] if len(chunk) else []
    runs = _runs(_nonzero(ak.is_valid(chunk)))
    if runs is None:
        return [ak.filter(chunk, ak.is_valid(chunk))]
    return [chunk.slice(a, n) for a, n in runs]


def select_rows(t: pa.Table, mask: pa.Array | pa.ChunkedArray) -> pa.Table:
    """The rows of ``t`` where ``mask`` (no nulls) is true.

    Adds and removes lie in long blocks (a checkpoint's adds, then its removes, then
    each batch of commits), so the rows are usually a few zero-copy slices; a filter
    would copy every column, the stats strings included.
    """
    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks() if mask.num_chunks != 1 else mask.chunk(0)
    runs = _runs(_nonzero(mask))
    if runs is None:
        return ak.filter(t, mask)
    if len(runs) == 1 and runs[0] == (0, t.num_rows):
        return t
    return pa.concat_tables([t.slice(a, n) for a, n in runs]) if runs else t.slice(0, 0)


def _describe(blobs) -> str:
    paths = blobs.paths if isinstance(blobs, CommitBlobs) else [p for _, _, p in blobs]
    return paths[0] if len(paths) == 1 else f"{len(paths)} log files ({paths[0]} ... {paths[-1]})"


def _raise_first_bad_line(blobs) -> None:
    for _, data, path in blobs:
        parse_json_lines(data, path)
    raise CorruptLogError("a log file holds an action that is not a JSON object")


def struct_to_map(s: pa.Array) -> pa.Array:
    """A struct of string columns -> map<string,string>, one entry per field, row-major.

    A null struct (the action had no such object: ``remove.partitionValues`` is
    optional) stays a null map, so it is not mistaken for null partition values.
    """
    if isinstance(s, pa.ChunkedArray):
        s = s.combine_chunks()
    n = len(s)
    if pa.types.is_map(s.type):
        return ak.cast(s, STR_MAP)
    if pa.types.is_null(s.type):
        return pa.MapArray.from_arrays(ab.from_numpy(np.zeros(n + 1, dtype=np.int32)),
                                       pa.nulls(0, pa.string()), pa.nulls(0, pa.string()))
    names = [s.type.field(i).name for i in range(s.type.num_fields)]
    k = len(names)
    if k == 0 or n == 0:
        offsets = np.zeros(n + 1, dtype=np.int32)
        return pa.MapArray.from_arrays(ab.from_numpy(offsets), pa.nulls(0, pa.string()), pa.nulls(0, pa.string()))
    children = [ak.cast(s.field(i), pa.string()) for i in range(k)]
    stacked = pa.concat_arrays(children)
    idx = (np.arange(k, dtype=np.int64)[None, :] * n + np.arange(n, dtype=np.int64)[:, None]).ravel()
    items = ak.take(stacked, ab.from_numpy(idx))
    keys = ak.take(ab.array(names, pa.string()), ab.from_numpy(np.tile(np.arange(k, dtype=np.int32), n)))
    offsets = ab.from_numpy(np.arange(0, n * k + 1, k, dtype=np.int32))
    return ab.with_validity(pa.MapArray.from_arrays(offsets, keys, items), ak.is_valid(s) if s.null_count else None)


def only_keys(maps: pa.Array | pa.ChunkedArray, keys: list[str]) -> pa.Array | pa.ChunkedArray:
    """``maps`` (map<string,string>) with the entries of other keys dropped; unchanged when there are none.

    The replay parses ``partitionValues`` with every partition key any parsed ``metaData``
    named, so after the partitioning changed, files read as holding the old columns too
    (as null: a key absent from the action and a null value parse alike). A file's
    partition values are those of the table's partition columns (what Delta Spark reads
    from an add), so :meth:`~.snapshot.Snapshot.files` keeps only those keys.
    """
    arr = maps.combine_chunks() if isinstance(maps, pa.ChunkedArray) else maps
    if len(arr) == 0:
        return arr
    offsets = ab.to_numpy(arr.offsets).astype(np.int64)
    child_keys = arr.keys.slice(0, int(offsets[-1])) if len(arr.keys) > offsets[-1] else arr.keys
    keep = ab.to_numpy(ak.fill_null(ak.is_in(child_keys, ab.array(keys, pa.string())), ab.scalar(False)))
    if keep.all():
        return arr
    kept = np.concatenate(([0], np.cumsum(keep, dtype=np.int64)))
    mask = ab.from_numpy(keep)
    items = arr.items.slice(0, len(child_keys))
    out = pa.MapArray.from_arrays(ab.from_numpy(kept[offsets].astype(np.int32)), ak.filter(child_keys, mask),
                                  ak.filter(items, mask))
    return ab.with_validity(out, ak.is_valid(arr) if arr.null_count else None)


def file_paths(raw: pa.Array) -> tuple[pa.Array, pa.Array]:
    """(reconciliation key, decoded path) of the log's raw file paths.

    The key is Delta Spark's canonical path (:func:`~..base.path_spelling.canonical_log_path`: ``./p``
    is ``p``); the decoded path is the file the raw URI names, its query or fragment dropped (a
    writer that does not percent-encode: ``x.parquet?a=b`` opens ``x.parquet`` for Hadoop's file
    systems, :func:`~..base.path_spelling.uri_path_part`), then percent-decoded. Its ``.``/``..``
    segments stay: the reader resolves them lexically, as Hadoop does, and vacuum also keeps the file
    the operating system reaches through a symbolic link (``ln/../x``). One scan of the character
    buffer (:func:`_scan_paths`) decides whether any path needs more than a copy; only those go
    through Python.
    """
    scan = _scan_paths(raw)
    normalize, query, percent = scan if scan is not None else (True, True, True)
    key = _replaced(raw, NEEDS_NORMALIZING_REGEX, canonical_log_path) if normalize else raw
    path = _replaced(raw, "[?#]", uri_path_part) if query else raw
    if percent:
        path = _replaced(path, "%", unquote, regex=False)
    return key, path


def _replaced(paths: pa.Array, pattern: str, fix, regex: bool = True) -> pa.Array:
    """``paths`` with ``fix`` applied to the values matching ``pattern`` (only those go through Python)."""
    hits = (ak.match_substring_regex if regex else ak.match_substring)(paths, pattern)
    hits = ak.fill_null(hits, ab.scalar(False, pa.bool_()))
    idx = _nonzero(hits)
    if not len(idx):
        return paths
    fixed = [fix(p) for p in ak.take(paths, ab.from_numpy(idx)).to_pylist()]
    out = paths.to_pylist() if len(idx) * 4 > len(paths) else None
    if out is not None:
        for i, d in zip(idx, fixed):
            out[i] = d
        return ab.array(out, pa.string())
    return ak.replace_with_mask(paths, hits, ab.array(fixed, pa.string()))


_STEP = 1 << 20


def _scan_paths(strings: pa.Array) -> tuple[bool, bool, bool] | None:
    """(may need normalizing, holds ``?`` or ``#``, holds ``%``) for the values of a string array, from
    one pass over its character buffer in 1 MiB steps (small temporary buffers instead of ones as large
    as the data); None for a type this does not read (the caller then
    checks every value). A match across two values' boundary is a false alarm only: the caller checks
    the values themselves."""
    if not pa.types.is_string(strings.type):
        return None
    offsets_buf, data_buf = strings.buffers()[1:3]
    if data_buf is None or len(strings) == 0:
        return False, False, False
    offsets = np.frombuffer(offsets_buf, dtype=np.int32, count=len(strings) + 1, offset=strings.offset * 4)
    chars = np.frombuffer(data_buf, dtype=np.uint8)[offsets[0]:offsets[-1]]
    offsets = offsets - offsets[0]
    normalize = _a_path_starts_with(chars, offsets, b"./")
    query = percent = False
    for start in range(0, len(chars), _STEP):
        normalize = normalize or _may_need_normalizing(chars, offsets, start, start + _STEP)
        text = chars[start:start + _STEP].tobytes()          # 1 MiB: bytes' one-character search is memchr
        query = query or b"?" in text or b"#" in text
        percent = percent or b"%" in text
        if normalize and query and percent:
            break
    return normalize, query, percent


#: The characters of a URI scheme (RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )), by byte value
_SCHEME_CHAR = np.zeros(256, dtype=bool)
_SCHEME_CHAR[[ord(c) for c in "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-."]] = True
#: A longer scheme is taken for none (a false alarm at worst: the values then go through the exact regex)
_LONGEST_SCHEME = 32


def _may_need_normalizing(chars: np.ndarray, offsets: np.ndarray, start: int, stop: int) -> bool:
    """Whether the slashes at ``chars[start:stop]`` may make a value one
    :func:`~..base.path_spelling.canonical_log_path` changes (a superset, found from the slash positions):
    ``/.``; a ``//`` that is not an authority's, i.e. not right after a scheme's colon at the value's
    start (``s3://b``), nor its second half of ``:///`` (``file:///t``); so ``file:////t``, ``d/a://x``
    and ``a//b`` are found. ``offsets``: the values' bounds in ``chars``."""
    lo = max(start - 2, 0)
    part = chars[lo:min(stop + 1, len(chars))]
    slashes = np.flatnonzero(part[:-1] == ord("/"))
    slashes = slashes[slashes + lo >= start]                  # the step's own slashes, 2 characters of context
    if not len(slashes):
        return False
    following = part[slashes + 1]
    if (following == ord(".")).any():
        return True
    doubled = slashes[following == ord("/")]                  # in ``part``
    if not len(doubled):
        return False
    if (doubled < 1).any():
        return True                                           # no character before it in the buffer
    before = part[doubled - 1]
    after_slash = doubled[before == ord("/")]
    if len(after_slash) and ((after_slash < 2) | (part[np.maximum(after_slash - 2, 0)] != ord(":"))).any():
        return True                                           # a third slash that is no ':///'s
    colons = doubled[before == ord(":")] - 1 + lo             # ':' of '://', in ``chars``
    if len(doubled) > len(after_slash) + len(colons):
        return True                                           # '//' after another character
    if not len(colons):
        return False
    value_start = offsets[np.searchsorted(offsets, colons, side="right") - 1]
    if ((colons - value_start < 2) | (value_start < lo)).any():
        return True                                           # no scheme, a drive letter ('C://x'), or unseen
    first = part[value_start - lo] | 0x20
    if ((first < ord("a")) | (first > ord("z"))).any():
        return True                                           # a scheme starts with a letter
    # every character up to the colon a scheme's (a later '://' of a value, s3://b/x://y, has ':' and '/'
    # before it): checked column by column for each scheme length, of which a log has few
    length = colons - value_start
    for n in np.unique(length):
        if n > _LONGEST_SCHEME:
            return True
        starts = value_start[length == n]
        for k in range(1, int(n)):
            if not _SCHEME_CHAR[chars[starts + k]].all():
                return True
    return False


def _a_path_starts_with(chars: np.ndarray, offsets: np.ndarray, firsts: bytes) -> bool:
    """Whether some value starts with one of the characters ``firsts`` (``./p``, ``../p``: the scan for
    ``/.`` misses them; ``/t/p``, which Delta Spark qualifies)."""
    starts = offsets[:-1][offsets[:-1] < offsets[1:]]       # non-empty values
    return bool(np.isin(chars[starts], np.frombuffer(firsts, dtype=np.uint8)).any())


def _assemble(cols: dict[str, Any], n: int, is_add: bool, versions, seqs) -> pa.Table:
    path = cols.get("path")
    if path is None or path.null_count:
        raise CorruptLogError(f"{'an add' if is_add else 'a remove'} action without a path (the log is corrupt)")
    raw = path.combine_chunks() if isinstance(path, pa.ChunkedArray) else path
    key, decoded = file_paths(raw if raw.type == pa.string() else ak.cast(raw, pa.string()))
    cols = {**cols, "path": decoded, LOG_PATH_COLUMN: key}      # the key: the spelling, canonical as Delta Spark's
    arrays = []
    for f in FILE_ACTION_SCHEMA:
        if f.name == "is_add":
            arrays.append(ab.from_numpy(np.full(n, is_add)))
        elif f.name == "version":
            arrays.append(ab.from_numpy(np.asarray(versions, dtype=np.int64)))
        elif f.name == "seq":
            arrays.append(ab.from_numpy(np.asarray(seqs, dtype=np.int64)))
        elif f.name in cols and cols[f.name] is not None:
            a = cols[f.name]
            if isinstance(a, pa.ChunkedArray):
                a = a.combine_chunks()
            if f.name == "deletion_vector":
                a = _cast_dv(a)
            elif f.name in ("partition_values", "tags"):
                a = struct_to_map(a) if pa.types.is_struct(a.type) else ak.cast(a, STR_MAP)
            elif a.type != f.type:
                a = ak.cast(a, f.type)
            if f.name == "size" and a.null_count < len(a) and ak.min_of(a) < 0:
                raise CorruptLogError(f"{'an add' if is_add else 'a remove'} action with a negative size "
                                      "(the log is corrupt)")
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
            children.append(ak.cast(a.field(f.name), f.type))
        except KeyError:
            children.append(pa.nulls(len(a), f.type))
    return ab.with_validity(pa.StructArray.from_arrays(children, fields=list(DV_TYPE)),
                            ak.is_valid(a) if a.null_count else None)


def actions_from_dicts(dicts: list[dict[str, Any]], is_add: bool, versions, seqs) -> pa.Table:
    """The slow path: normalized file actions from parsed JSON dicts."""
    names = ADD_FIELDS if is_add else REMOVE_FIELDS
    cols: dict[str, Any] = {}
    for jname, cname in names:
        vals = [d.get(jname) for d in dicts]
        if cname in ("partition_values", "tags"):
            vals = [None if v is None else [(str(k), None if x is None else str(x)) for k, x in v.items()]
                    for v in vals]
            cols[cname] = ab.array(vals, STR_MAP)
        elif cname == "deletion_vector":
            cols[cname] = ab.array(vals, DV_TYPE)
        elif cname == "stats":
            cols[cname] = ab.array([v if v is None or isinstance(v, str) else json.dumps(v) for v in vals],
                                   pa.string())
        else:
            cols[cname] = ab.array(vals, FILE_ACTION_TYPES[cname])
    return _assemble(cols, len(dicts), is_add, versions, seqs)


# --------------------------------------------------------------------- reconcile
def file_keys(t: pa.Table, with_dv: bool) -> pa.Array:
    """The protocol's key of each file action in ``t``: its path as the log spells it
    (:mod:`..base.path_spelling`), plus its deletion vector's id when ``with_dv`` (an add and
    the remove of the same logical file share it)."""
    path = t.column(LOG_PATH_COLUMN).combine_chunks()
    if not with_dv:
        return path
    dv = t.column("deletion_vector").combine_chunks()
    empty = ab.scalar("", pa.string())
    st = ak.fill_null(dv.field("storageType"), empty)
    p = ak.fill_null(dv.field("pathOrInlineDv"), empty)
    off = ak.fill_null(ak.cast(dv.field("offset"), pa.string()), empty)
    return ak.join_element_wise(path, st, p, off, separator=ab.scalar("\x00", pa.string()))


def _has_dv(t: pa.Table) -> bool:
    return t.num_rows > 0 and t.column("deletion_vector").null_count < t.num_rows


def reconcile(base: pa.Table | None, new: pa.Table) -> pa.Table:
    """Latest action per file key: ``base`` (already reconciled) overlaid with ``new``.

    Returns adds and removes together (``is_add`` tells them apart).
    """
    if new.num_rows == 0:
        return base if base is not None else empty_file_actions()
    with_dv = _has_dv(new) or (base is not None and _has_dv(base))
    encoded = ak.dictionary_encode(file_keys(new, with_dv))
    winner_keys = encoded.dictionary
    if len(winner_keys) == len(encoded):
        winners = new  # every key appears once: nothing to resolve
    else:
        # newest action per key, by one hash pass and a scatter-max (no sort): keep the rows
        # holding their key's highest seq
        key_ids = ab.to_numpy(encoded.indices)
        seqs = ab.to_numpy(new.column("seq"))
        newest = np.full(len(winner_keys), np.iinfo(np.int64).min, dtype=np.int64)
        np.maximum.at(newest, key_ids, seqs)
        winners = ak.filter(new, ab.from_numpy(seqs == newest[key_ids]))
    if base is None or base.num_rows == 0:
        return winners
    base_keys = file_keys(base, with_dv)
    touched = ak.is_in(base_keys, winner_keys)
    if not ak.any_true(touched):
        return pa.concat_tables([base, winners])  # appends only: no copy of the base
    return pa.concat_tables([ak.filter(base, ak.invert(touched)), winners])
