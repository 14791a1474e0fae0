"""Reading checkpoints: classic, multi-part, and v2 (JSON or parquet manifest with sidecars).

Parquet is read with column projection: protocol/metaData alone when only those are
needed (history, timestamps), ``add.*``/``remove.*`` leaves only when file state is
asked for, never the heavy ``stats_parsed`` columns.
"""
from __future__ import annotations

import json
from datetime import date, datetime, timezone
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..base import arrow_build as ab
from ..base import arrow_kernels as ak
from ..base.action_schemas import ADD_FIELDS, REMOVE_FIELDS, empty_file_actions
from ..base.errors import CorruptLogError
from ..base.names import LogFile
from ..base.parquet_file import ParquetFile
from ..base.records import Record
from .action_lines import action_kind, first_action
from .column_mapping import partition_keys_of
from .data_paths import ABSOLUTE_PATH_REGEX, open_path, sidecar_location
from .replay import file_actions_from_struct, one_action_per_line, parse_json_logs

if TYPE_CHECKING:  # pragma: no cover
    from ..base.storage import Storage

_NON_FILE_COLUMNS = ("protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar")


class CheckpointContent(Record):
    __slots__ = ("protocol", "metadata", "others", "file_actions")
    _defaults = {"protocol": None, "metadata": None, "file_actions": None}
    _factories = {"others": list}

    protocol: dict[str, Any] | None
    metadata: dict[str, Any] | None
    #: non-file actions in checkpoint order (txn, domainMetadata, sidecar, checkpointMetadata)
    others: list[dict[str, Any]]
    file_actions: pa.Table | None


def _pyify(v: Any) -> Any:
    """Arrow's to_pylist renders maps as lists of pairs; the protocol's JSON has objects."""
    if isinstance(v, dict):
        return {k: _pyify(x) for k, x in v.items()}
    if isinstance(v, list) and v and all(isinstance(x, tuple) and len(x) == 2 for x in v):
        return {k: _pyify(x) for k, x in v}
    if isinstance(v, list):
        return [_pyify(x) for x in v]
    return v


def _open_parquet(storage: "Storage", path: str) -> ParquetFile:
    try:
        return ParquetFile(path if storage.is_local else storage.open(path))
    except FileNotFoundError:
        raise
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise CorruptLogError(f"checkpoint {path} cannot be read as parquet: {e}", path=path) from None


def _open_parquet_at(storage: "Storage", log_path: str) -> ParquetFile:
    """A parquet file a log action names (table-relative or absolute; :mod:`.data_paths`)."""
    try:
        return ParquetFile(open_path(storage, log_path))
    except FileNotFoundError:
        raise
    except Exception as e:  # pyarrow raises several types for a damaged file
        raise CorruptLogError(f"checkpoint {log_path} cannot be read as parquet: {e}", path=log_path) from None


def _non_file_columns(pf: ParquetFile, with_pm: bool, with_others: bool) -> list[str]:
    names = set(pf.schema_arrow.names)
    return [c for c in _NON_FILE_COLUMNS if (with_pm if c in ("protocol", "metaData") else with_others) and c in names]


def _file_columns(pf: ParquetFile) -> dict[str, list[str]]:
    """kind -> the leaves of its file-action fields worth reading.

    A kind without ``path``, or whose every leaf the file's statistics say is null (a
    checkpoint without tombstones), is left out; an action with a value but no path is
    still read, and refused as corrupt. Left out as well: a scalar or struct field null in
    every row (deletion vectors, row tracking, clustering on most tables): the normalized
    actions hold null there anyway, and decoding a column of nulls still costs a pass over
    every row. Maps are always read: an empty map is not null."""
    schema = pf.schema_arrow
    out = {}
    for kind, fields in (("add", ADD_FIELDS), ("remove", REMOVE_FIELDS)):
        idx = schema.get_field_index(kind)
        if idx < 0:
            continue
        struct = schema.field(idx).type
        types = {struct.field(i).name: struct.field(i).type for i in range(struct.num_fields)}
        if "path" not in types or not pf.row_groups_with_values([kind]):
            continue
        out[kind] = [f"{kind}.{j}" for j, _ in fields if j in types and
                     (pa.types.is_map(types[j]) or pa.types.is_list(types[j]) or
                      pf.row_groups_with_values([f"{kind}.{j}"]))]
    return out


def _non_file_actions(pf: ParquetFile, columns: list[str]) -> CheckpointContent:
    """The non-file actions in ``columns``; the columns (a value per row of the checkpoint,
    nearly all null) are let go before the file actions are read."""
    out = CheckpointContent()
    groups = pf.row_groups_with_values(columns) if columns else []
    if not groups:
        return out
    t = pf.read(columns=columns, row_groups=groups)
    for c in columns:
        col = t.column(c)
        if col.null_count == len(col):
            continue
        rows = [_pyify(r) for r in ak.filter(col, ak.is_valid(col)).to_pylist()]
        if c == "protocol":
            out.protocol = rows[-1]
        elif c == "metaData":
            out.metadata = rows[-1]
        else:
            out.others.extend({c: r} for r in rows)
    return out


def read_parquet_part(pf: ParquetFile, version: int, seq: int, with_files: bool, with_pm: bool,
                      with_others: bool = True) -> tuple[CheckpointContent, list[pa.Table]]:
    """The non-file actions of one checkpoint file (``with_others``: txn, domainMetadata,
    sidecar...; ``with_pm``: protocol and metaData) and, ``with_files``, its normalized file
    actions (adds, then removes).

    Adds and removes are read one kind at a time: reading every column in one pass was
    measured at 14% more peak memory on a 1,000,000-file checkpoint, for no measurable gain.
    Each is read on the calling thread: Arrow decodes top-level columns side by side, and a
    kind is one column (a struct), so its thread pool only added its start-up to a cold read
    (90,000 files: median 40 ms with threads, 34 without, with outliers past 100 ms).

    ``pf``: a :class:`ParquetFile`, or anything with its ``schema_arrow``, ``read`` and
    ``row_groups_with_values`` (a parallel checkpoint worker's row groups)."""
    non_file = _non_file_columns(pf, with_pm, with_others)
    file_cols = _file_columns(pf) if with_files else {}
    out = _non_file_actions(pf, non_file)
    tables = []
    structs = {kind: pf.read(columns=leaves, use_threads=False).column(kind) for kind, leaves in file_cols.items()}
    if len(structs) == 2:
        # a row holding an add and a remove is the add (Delta Spark replays a checkpoint's rows by
        # SingleAction.unwrap too): the remove is masked there, as replay's fast path does for a commit line
        rm_valid = ak.is_valid(structs["remove"])
        masked = one_action_per_line({"add": ak.is_valid(structs["add"]), "remove": rm_valid})[1]
        if masked is not rm_valid:
            structs["remove"] = ab.with_validity(structs["remove"].combine_chunks(), masked.combine_chunks())
    for kind, struct in structs.items():
        fa = file_actions_from_struct(struct, kind, version, seq)
        if kind == "add" and fa.num_rows and fa.column("stats").null_count == fa.num_rows and \
                "stats_parsed" in {f.name for f in pf.schema_arrow.field("add").type}:
            fa = _stats_from_parsed(pf, fa)
        if fa.num_rows:
            tables.append(fa)
            seq += fa.num_rows
    return out, tables


def _json_default(v: Any) -> Any:
    if isinstance(v, (datetime, date)):
        if isinstance(v, datetime):
            v = v.astimezone(timezone.utc) if v.tzinfo else v
            return v.isoformat(timespec="milliseconds").replace("+00:00", "Z")
        return v.isoformat()
    if isinstance(v, Decimal):
        return float(v)
    if isinstance(v, bytes):
        return v.decode("utf-8", "replace")
    return str(v)


def _stats_from_parsed(pf: ParquetFile, fa: pa.Table) -> pa.Table:
    """A checkpoint written with ``writeStatsAsJson=false`` has only ``stats_parsed``:
    rebuild the JSON ``stats`` strings from it so ``files()`` always offers them.
    (A per-file Python step, taken only for such checkpoints.)"""
    parsed = pf.read(columns=["add.path", "add.stats_parsed"]).column("add").combine_chunks()
    parsed = ak.filter(parsed, ak.is_valid(parsed))
    if len(parsed) != fa.num_rows:
        return fa
    stats = [None if d is None else json.dumps({k: v for k, v in d.items() if v is not None},
                                               default=_json_default, separators=(",", ":"))
             for d in parsed.field("stats_parsed").to_pylist()]
    return fa.set_column(fa.schema.get_field_index("stats"), "stats", pa.array(stats, pa.string()))


def read_checkpoint_protocol(storage: "Storage", files: list[LogFile], version: int) -> Any:
    """The raw ``protocol`` action of the checkpoint of ``version`` (None if it has none): of a
    parquet checkpoint only the ``protocol`` column is read, from the row groups whose statistics
    say it holds a value; what the catalog-managed check of a fresh ``latest_version()`` needs
    (reading ``metaData`` too cost a sensor poke ten times the listing on a wide checkpoint)."""
    if any(f.fmt == "json" for f in files):
        return read_checkpoint(storage, files, version, with_files=False).protocol
    protocol = None
    for f in files:
        protocol = _non_file_actions(_open_parquet(storage, f.path), ["protocol"]).protocol or protocol
    return protocol


def checkpoint_may_hold_deletion_vectors(storage: "Storage", files: list[LogFile]) -> bool:
    """Whether an ``add`` of this checkpoint may carry a deletion vector, from the parquet footers'
    null counts alone (no row is read); conservative: True for a JSON checkpoint, or one with
    sidecars (its adds are in other files), or a row group without statistics."""
    for f in files:
        if f.fmt == "json":
            return True
        if _open_parquet(storage, f.path).row_groups_with_values(["add.deletionVector", "sidecar"]):
            return True
    return False


def checkpoint_may_hold_absolute_paths(storage: "Storage", files: list[LogFile]) -> bool:
    """Whether an ``add`` of this checkpoint may name its file by an absolute path or URI
    (:data:`~.data_paths.ABSOLUTE_PATH_REGEX`), from the ``add.path`` column alone; conservative: True for a
    JSON checkpoint or one with sidecars (its adds are in other files)."""
    for f in files:
        if f.fmt == "json":
            return True
        pf = _open_parquet(storage, f.path)
        if pf.row_groups_with_values(["sidecar"]):
            return True
        paths = pf.read(["add.path"]).column("add").combine_chunks().field("path")
        if ak.any_true(ak.match_substring_regex(paths, ABSOLUTE_PATH_REGEX)):
            return True
    return False


def read_checkpoint(storage: "Storage", files: list[LogFile], version: int,
                    with_files: bool, partition_columns: tuple[str, ...] = (),
                    with_protocol_metadata: bool = True) -> CheckpointContent:
    """Read the checkpoint of ``version`` made of ``files`` (one file, the parts, or a v2 manifest).

    ``with_protocol_metadata=False`` skips those two columns of a parquet checkpoint, for a
    caller that has them already (a snapshot read them first to decide it may read on).
    """
    content = CheckpointContent()
    tables: list[pa.Table] = []
    seq = -(1 << 62)  # checkpoint rows come before every commit row
    for f in files:
        if f.fmt == "json":
            part = _read_json_checkpoint(storage, f, version, with_files)
        else:
            # without files, only protocol and metadata are asked for
            part, part_tables = read_parquet_part(_open_parquet(storage, f.path), version, seq, with_files,
                                                  with_protocol_metadata, with_others=with_files)
            for t in part_tables:
                tables.append(t)
                seq += t.num_rows
        content.protocol = part.protocol or content.protocol
        content.metadata = part.metadata or content.metadata
        content.others.extend(part.others)
        if part.file_actions is not None and part.file_actions.num_rows:
            tables.append(part.file_actions)
            seq += part.file_actions.num_rows
    sidecars = [o["sidecar"] for o in content.others if "sidecar" in o]
    if with_files:
        for sc in sidecars:
            path = sc["path"]
            full = sidecar_location(path)
            try:
                pf = _open_parquet_at(storage, full)
            except FileNotFoundError:
                raise CorruptLogError(f"checkpoint {version} names sidecar {path}, which is missing",
                                      path=full) from None
            for t in read_parquet_part(pf, version, seq, with_files=True, with_pm=False, with_others=False)[1]:
                tables.append(t)
                seq += t.num_rows
        content.file_actions = pa.concat_tables(tables) if tables else empty_file_actions()
    return content


def _read_json_checkpoint(storage: "Storage", f: LogFile, version: int, with_files: bool) -> CheckpointContent:
    data = storage.read_bytes(f.path)
    pcols: tuple[str, ...] = ()
    metadata = first_action(data, "metaData")
    if metadata is not None:
        try:
            pcols = tuple(partition_keys_of(metadata))
        except (ValueError, KeyError, AttributeError, TypeError):
            pcols = ()
    parsed = parse_json_logs([(version, data, f.path)], pcols, seq_start=-(1 << 61))
    out = CheckpointContent()
    for _, obj in parsed.others:
        kind = action_kind(obj)
        if kind == "protocol":
            out.protocol = obj["protocol"]
        elif kind == "metaData":
            out.metadata = obj["metaData"]
        elif kind in ("txn", "domainMetadata", "sidecar", "checkpointMetadata"):
            out.others.append(obj)
    out.file_actions = parsed.file_actions if with_files else None
    return out


def sidecar_names(storage: "Storage", f: LogFile) -> set[str]:
    """File names of the sidecars one checkpoint file references (empty for V1 checkpoints).

    Reads only the ``sidecar`` column (parquet) or lines (JSON): what cleanup must protect.
    """
    if f.fmt == "json":
        refs = [o["sidecar"] for o in _read_json_checkpoint(storage, f, f.version, False).others
                if "sidecar" in o]
    else:
        pf = _open_parquet(storage, f.path)
        if "sidecar" not in pf.schema_arrow.names:
            return set()
        col = pf.read(columns=["sidecar"]).column("sidecar")
        refs = [r for r in ak.filter(col, ak.is_valid(col)).to_pylist()]
    names = set()
    for r in refs:
        if r and r.get("path"):
            raw = str(r["path"])
            for spelling in (raw, sidecar_location(raw)):   # raw too: a writer may not have encoded it
                names.add(spelling.rstrip("/").rsplit("/", 1)[-1])
    return names
