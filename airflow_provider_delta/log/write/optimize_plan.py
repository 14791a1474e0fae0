"""Planning OPTIMIZE: which live files to rewrite, grouped into bins, before any data is read.

The rules are Delta Spark's (``OptimizeExecutor``, ``OptimizeTableStrategy``, ``DeltaSQLConf``):

- candidates are the live files of the partitions that ``partition_filter`` selects (a filter
  on partition columns only); without Z-order, a file is a candidate when it is smaller than
  ``min_file_size`` or carries a deletion vector that deletes more than
  ``max_deleted_rows_ratio`` of its rows (or whose row count is unknown);
- compaction groups the candidates of one partition, smallest first, into bins of at most
  ``target_size`` bytes; each bin becomes one new file. A bin of one file is left alone
  (rewriting it gains nothing) unless that file has a deletion vector: then it is rewritten
  without its deleted rows (Delta Spark drops such bins; we purge them, see ``docs/maintenance.md``);
- Z-order takes every file of a partition as one bin (it reorders all of them) and writes
  about ``bin size / target_size`` files;
- ``purge`` (``REORG TABLE ... APPLY (PURGE)``) takes exactly the files with deletion
  vectors, every bin kept.

Sizes: ``target_size`` defaults to the table's ``delta.targetFileSize``, else Delta Spark's
``optimize.maxFileSize`` (1 GiB); ``min_file_size`` defaults to the target size (Delta
Spark's ``optimize.minFileSize`` default equals its ``maxFileSize``).
"""
from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass, field
from typing import Any

import pyarrow as pa

from ..base.errors import DeltaError, InvalidArgumentError, InvalidTableStateError
from ..base.features import TARGET_FILE_SIZE_PROPERTY
from ..read.column_mapping import mapping_mode, partition_keys
from ..base.schema import serialize_partition_value
from ..base.stats import column_path, indexed_columns
from ..read.filters import normalize
from ..read.reader import data_fields, prune_by_partition
from ..read.snapshot import Snapshot
from .commit_info import param_value, stats_records

#: Delta Spark's ``spark.databricks.delta.optimize.maxFileSize`` and ``minFileSize`` default.
DEFAULT_TARGET_SIZE = 1024 * 1024 * 1024
#: Delta Spark's ``spark.databricks.delta.optimize.maxDeletedRowsRatio`` default.
DEFAULT_MAX_DELETED_ROWS_RATIO = 0.05

_SIZE = re.compile(r"^\s*(\d+)\s*([kmgt]?)(i?b)?\s*$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}


def parse_size(value: Any, what: str) -> int:
    """Bytes from an int or a Spark size string (``"134217728"``, ``"128mb"``, ``"1g"``)."""
    if isinstance(value, bool):
        raise InvalidArgumentError(f"{what} must be a size in bytes, got {value!r}")
    if isinstance(value, int):
        size = value
    else:
        m = _SIZE.match(str(value))
        if not m:
            raise InvalidArgumentError(f"{what} must be a size in bytes (e.g. 134217728 or '128mb'), got {value!r}")
        size = int(m.group(1)) * _UNITS[m.group(2).lower()]
    if size <= 0:
        raise InvalidArgumentError(f"{what} must be positive, got {value!r}")
    return size


@dataclass(frozen=True)
class OptimizeSettings:
    """The checked arguments of one OPTIMIZE (or REORG ... PURGE) run."""

    target_size: int
    min_file_size: int
    z_order_by: tuple[str, ...] = ()
    #: ``[(column, op, value), ...]`` (AND) or a list of such lists (OR), partition columns only
    partition_filter: Any = None
    max_deleted_rows_ratio: float = DEFAULT_MAX_DELETED_ROWS_RATIO
    purge: bool = False

    @property
    def operation(self) -> str:
        return "REORG" if self.purge else "OPTIMIZE"

    def operation_parameters(self) -> dict[str, Any]:
        """commitInfo ``operationParameters`` as Delta Spark records them (JSON lists as strings)."""
        predicate = param_value(delta_spark_predicate_text(self.partition_filter))
        if self.purge:
            return {"predicate": predicate, "applyPurge": True}
        return {"predicate": predicate, "zOrderBy": param_value(list(self.z_order_by)), "clusterBy": "[]",
                "auto": False}


def delta_spark_predicate_text(partition_filter: Any) -> list[str]:
    """The partition filter as Delta Spark records ``OPTIMIZE ... WHERE``'s predicate in commitInfo: a list of
    one string, the ``simpleString`` of the expression its SQL parser makes of the WHERE text (unresolved:
    columns as ``'p``, literals unquoted), for the WHERE a user writes for this filter (branches ORed, atoms
    ANDed, left to right). Measured with the Delta Spark jars (``tests/interop/test_review_s12_rv_maint_spark.py``):
    ``p IN ('a', 'b')`` -> ``'p IN (a,b)``, ``p = 'a' AND n = 1`` -> ``(('p = a) AND ('n = 1))``,
    ``p != 'a'`` -> ``NOT ('p = a)``, ``p IS NULL`` -> ``isnull('p)``, ``d = DATE'2024-01-02'`` ->
    ``('d = 2024-01-02)``."""
    if partition_filter is None:
        return []
    branches = partition_filter if partition_filter and isinstance(partition_filter[0], list) \
        else [partition_filter]
    text = ""
    for b, conj in enumerate(branches):
        branch = ""
        for i, (column, op, value) in enumerate(conj):
            atom = _spark_atom_text(column, op, value)
            branch = atom if i == 0 else f"({branch} AND {atom})"
        text = branch if b == 0 else f"({text} OR {branch})"
    return [text]


_SPARK_SYMBOL = {"=": "=", "==": "=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


def _spark_atom_text(column: str, op: str, value: Any) -> str:
    """One atom as Spark prints its unresolved expression (``Expression.simpleString``)."""
    col = "'" + (column if re.fullmatch(r"[A-Za-z0-9_]+", column) and not column.isdigit()
                 else "`" + column.replace("`", "``") + "`")
    if value is None:       # the filter rule: None with =/is is IS NULL, with !=/is not IS NOT NULL
        return f"is{'not' if op in ('!=', 'is not') else ''}null({col})"
    if op in ("in", "not in"):
        values = sorted(value, key=repr) if isinstance(value, (set, frozenset)) else list(value)
        text = f"{col} IN ({','.join(_spark_literal_text(v) for v in values)})"
        return f"NOT {text}" if op == "not in" else text
    if op == "!=":
        return f"NOT ({col} = {_spark_literal_text(value)})"
    return f"({col} {_SPARK_SYMBOL[op]} {_spark_literal_text(value)})"


def _spark_literal_text(value: Any) -> str:
    """Spark's ``Literal.toString``: strings unquoted, dates ``2024-01-02``, timestamps ``2024-01-02 03:04:05[.f]``
    (UTC; trailing fraction zeros dropped), booleans ``true``/``false``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, _dt.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(_dt.timezone.utc).replace(tzinfo=None)
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        return text + (f".{value.microsecond:06d}".rstrip("0") if value.microsecond else "")
    if isinstance(value, _dt.date):
        return value.isoformat()
    return str(value)


def settings_for(snap: Snapshot, *, target_size: Any = None, min_file_size: Any = None,
                 z_order_by: Any = None, partition_filter: Any = None, max_deleted_rows_ratio: Any = None,
                 purge: bool = False) -> OptimizeSettings:
    """Check the arguments against the table; typed errors, nothing read beyond the snapshot."""
    conf = snap.metadata.configuration
    mapping_mode(conf, snap.uri)              # an unknown column mapping mode is refused; name and id are rewritten
    if target_size is None:
        prop = conf.get(TARGET_FILE_SIZE_PROPERTY)
        if prop is not None:
            try:
                target = parse_size(prop, TARGET_FILE_SIZE_PROPERTY)
            except InvalidArgumentError as e:
                raise InvalidTableStateError(f"{snap.uri}: table property {e}") from None
        else:
            target = DEFAULT_TARGET_SIZE
    else:
        target = parse_size(target_size, "target_size")
    minimum = target if min_file_size is None else parse_size(min_file_size, "min_file_size")
    ratio = DEFAULT_MAX_DELETED_ROWS_RATIO if max_deleted_rows_ratio is None else max_deleted_rows_ratio
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio <= 1:
        raise InvalidArgumentError(f"max_deleted_rows_ratio must be a number in [0, 1], got {ratio!r}")
    zcols = _z_order_columns(snap, z_order_by)
    if purge and zcols:
        raise InvalidArgumentError("purge (REORG ... APPLY (PURGE)) cannot be combined with z_order_by")
    _check_partition_filter(snap, partition_filter)
    return OptimizeSettings(target, minimum, zcols, partition_filter, float(ratio), bool(purge))


def _z_order_columns(snap: Snapshot, z_order_by: Any) -> tuple[str, ...]:
    """The Z-order columns, checked as Delta Spark's ``OPTIMIZE ... ZORDER BY`` checks them.

    A column is a top-level name or a nested field (``"s.a"``, backticks quote dots); it must
    exist outside the partition columns, have an order, and have statistics (be among the
    columns ``delta.dataSkippingNumIndexedCols`` / ``delta.dataSkippingStatsColumns`` index):
    a clustering no file statistic records cannot be used to skip files, so Delta Spark
    refuses it (``DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS``) and so do we, before any rewrite.
    """
    if z_order_by is None:
        return ()
    cols = (z_order_by,) if isinstance(z_order_by, str) else tuple(z_order_by)
    if not cols:
        return ()
    data_schema = pa.schema(data_fields(snap))
    indexed = set(indexed_columns(data_schema, snap.configuration))
    seen = set()
    without_stats = []
    for c in cols:
        if not isinstance(c, str) or not c:
            raise InvalidArgumentError(f"z_order_by takes column names, got {c!r}")
        path = column_path(c)
        if path[0] in snap.partition_columns:
            raise InvalidArgumentError(
                f"{c!r} is a partition column; Z-ordering by it is meaningless (each file holds one value)")
        t = _field_type(data_schema, path)
        if t is None:
            raise InvalidArgumentError(f"z_order_by column {c!r} is not in the table schema {snap.schema.names}")
        if pa.types.is_nested(t) or pa.types.is_binary(t) or pa.types.is_large_binary(t):
            raise InvalidArgumentError(f"z_order_by column {c!r} has type {t}, which has no order to cluster by")
        if path in seen:
            raise InvalidArgumentError(f"z_order_by names {c!r} twice")
        seen.add(path)
        if path not in indexed:
            without_stats.append(c)
    if without_stats:
        raise InvalidArgumentError(
            f"z_order_by column(s) {without_stats} have no statistics (beyond the table's "
            "delta.dataSkippingNumIndexedCols / delta.dataSkippingStatsColumns): Z-ordering by them could not "
            "be used to skip files (Delta Spark refuses it too: DELTA_ZORDERING_ON_COLUMN_WITHOUT_STATS). "
            "Index them (ALTER the table property) and collect their statistics first")
    return cols


def _field_type(schema: pa.Schema, path: tuple[str, ...]) -> pa.DataType | None:
    """The type at ``path`` (through struct fields), None when there is no such column."""
    fields: Any = schema
    t = None
    for name in path:
        if t is not None:
            if not pa.types.is_struct(t):
                return None
            fields = [t.field(i) for i in range(t.num_fields)]
        match = [f for f in fields if f.name == name]
        if not match:
            return None
        t = match[0].type
    return t


def _check_partition_filter(snap: Snapshot, partition_filter: Any) -> None:
    """The filter's shape and atoms by the read rule (:mod:`..read.filters`), on partition columns only."""
    if partition_filter is None:
        return
    dnf = normalize(partition_filter)
    if dnf is None:
        raise InvalidArgumentError("partition_filter must be (column, op, value) tuples or lists of them, "
                                   "not an Expression (OPTIMIZE records the predicate as text)")
    for conj in dnf:
        for column, op, value in conj:
            if column not in snap.partition_columns:
                raise InvalidArgumentError(
                    f"partition_filter may only name partition columns {list(snap.partition_columns)}; "
                    f"{column!r} is not one (OPTIMIZE rewrites whole partitions)")
            _check_string_column_value(snap, column, op, value)


def _check_string_column_value(snap: Snapshot, column: str, op: str, value: Any) -> None:
    """A string partition column compared with a non-string value is refused: Delta Spark casts the column's
    values to the value's type (measured on the jars: ``OPTIMIZE ... WHERE p = 1`` casts ``p`` to BIGINT, so
    ``'01'`` is selected too and a value that is no number fails the command, CAST_INVALID_INPUT); this filter
    compares text (``'1'`` only), so the two would select different partitions."""
    t = snap.schema.field(column).type
    if value is None or not (pa.types.is_string(t) or pa.types.is_large_string(t)):
        return
    values = value if op in ("in", "not in") else [value]
    wrong = [v for v in values if not isinstance(v, str)]
    if wrong:
        raise InvalidArgumentError(
            f"partition_filter ({column!r}, {op!r}, {value!r}): type mismatch, {column!r} is a string column and "
            f"{wrong[0]!r} is a {type(wrong[0]).__name__}; Delta Spark's WHERE casts the column's values to the "
            f"value's type (p = 1 also selects '01'), this filter would compare text: compare with a string "
            f"({str(wrong[0])!r}); nothing was read or written")


@dataclass(frozen=True)
class Bin:
    """Files of one partition rewritten together (rows as in ``Snapshot.files()``)."""

    partition_values: dict[str, str | None]
    files: list[dict[str, Any]] = field(default_factory=list)

    @property
    def size(self) -> int:
        return sum(int(f["size"]) for f in self.files)


def num_records(f: dict[str, Any]) -> int | None:
    """A file's ``numRecords`` from its statistics (None when unknown)."""
    return stats_records(f.get("stats"))


def _too_many_deleted(f: dict[str, Any], ratio: float) -> bool:
    """Delta Spark: a file with a DV but no row count, or more than ``ratio`` of its rows deleted."""
    dv = f.get("deletion_vector")
    if not dv:
        return False
    total = num_records(f)
    if not total:
        return True
    return int(dv.get("cardinality") or 0) / total > ratio


def _partition_key(f: dict[str, Any], types: dict[str, pa.DataType]) -> tuple:
    """Partition values in canonical form, so spellings of one value (e.g. timestamps) group together."""
    values = dict(f.get("partition_values") or {})
    out = []
    for col in sorted(values):
        v = values[col]
        if v in (None, ""):
            out.append((col, None))
            continue
        try:
            out.append((col, serialize_partition_value(v, types[col]) if col in types else v))
        except DeltaError:
            out.append((col, v))
    return tuple(out)


def plan_bins(snap: Snapshot, settings: OptimizeSettings) -> tuple[list[Bin], int]:
    """(bins to rewrite, number of files considered) for ``snap``."""
    files = prune_by_partition(snap, snap.files(), settings.partition_filter)
    considered = files.num_rows
    rows = files.select([c for c in ("path", "size", "partition_values", "deletion_vector", "stats", "tags")
                         if c in files.column_names]).to_pylist()
    meta = snap.metadata
    keys = partition_keys(meta.partition_columns, meta.schema_string, meta.configuration)
    for r in rows:
        r["partition_values"] = dict(r["partition_values"] or {})    # the table's partition keys only (files())
        if r.get("deletion_vector"):
            r["deletion_vector"] = {k: v for k, v in r["deletion_vector"].items() if v is not None}
    if settings.purge:
        rows = [r for r in rows if r.get("deletion_vector")]
    elif not settings.z_order_by:
        rows = [r for r in rows if int(r["size"]) < settings.min_file_size
                or _too_many_deleted(r, settings.max_deleted_rows_ratio)]
    schema = snap.schema
    types = {k: schema.field(c).type for c, k in zip(snap.partition_columns, keys)}
    groups: dict[tuple, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault(_partition_key(r, types), []).append(r)
    bins: list[Bin] = []
    for members in groups.values():
        members.sort(key=lambda r: (int(r["size"]), r["path"]))
        values = members[0]["partition_values"]
        if settings.z_order_by:
            bins.append(Bin(values, members))
            continue
        current: list[dict[str, Any]] = []
        size = 0
        packed: list[list[dict[str, Any]]] = []
        for r in members:
            if current and size + int(r["size"]) > settings.target_size:
                packed.append(current)
                current, size = [], 0
            current.append(r)
            size += int(r["size"])
        if current:
            packed.append(current)
        for group in packed:
            if len(group) > 1 or settings.purge or group[0].get("deletion_vector"):
                bins.append(Bin(values, group))
    return bins, considered
