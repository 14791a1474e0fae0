"""Writing a DataFrame's parquet files into a table directory with Spark, without committing.

Spark's file committer owns its output directory (``_temporary``, ``_SUCCESS``),
and two jobs writing into the same directory trample each other's temporary
files. So each write gets its own staging directory inside the table root
(``_delta_spark_staging/<write id>/``, hidden from Delta readers and vacuum by the
leading underscore); once Spark has committed its job there, the files are
moved into the table's Hive-style partition directories under their
Spark-given names (which carry the job's UUID, so they never collide), with
size, partition values and footer statistics collected on the driver.

Nothing here touches the log: :mod:`.commit` decides whether the files get
committed or deleted again.
"""
from __future__ import annotations

import datetime as _dt
import os
import uuid
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

import pyarrow as pa
import pyarrow.parquet as pq

from ..log import AddFile
from ..log import DeltaError, InvalidArgumentError, StorageError
from ..log import serialize_partition_value
from .file_stats import footer_stats
from .uris import spark_uri

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

    from ..log import DeltaTable

STAGING_DIR = "_delta_spark_staging"
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


@dataclass
class StagedWrite:
    """Where one write's files are: staging directory, then the published relative paths."""

    table: "DeltaTable"
    write_id: str
    published: list[str]

    @property
    def staging_rel(self) -> str:
        return f"{STAGING_DIR}/{self.write_id}"

    def discard_staging(self) -> None:
        """Delete the staging directory (what Spark left there: _SUCCESS, checksums, empty files)."""
        storage = self.table.storage
        path = storage.path(self.staging_rel)
        try:
            if storage.fs.exists(path):
                storage.fs.rm(path, recursive=True)
        except (OSError, FileNotFoundError):
            pass
        _remove_if_empty(storage, STAGING_DIR)

    def discard_published(self) -> None:
        """Delete the files already moved into the table (they were never committed)."""
        for rel in self.published:
            try:
                self.table.storage.delete(rel)
            except (OSError, DeltaError):
                pass
        self.published.clear()


def _remove_if_empty(storage: Any, rel: str) -> None:
    if storage.is_local:
        try:
            os.rmdir(storage.path(rel))
        except OSError:
            pass


#: the instant a zoned timestamp partition directory counts its microseconds from
_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_dt.timezone.utc)


def partition_value_from_dir(text: str, t: pa.DataType) -> str | None:
    """The log's ``partitionValues`` string for one Spark partition directory value.

    Spark escapes directory values (``%XX``) and writes null as ``__HIVE_DEFAULT_PARTITION__``.
    A zoned timestamp column is written partitioned by its microseconds since the epoch
    (:func:`partition_frame`): Spark renders an instant in the session time zone, where an
    hour is ambiguous when clocks go back (``01:30`` twice in America/Los_Angeles) and the
    end of year 9999 UTC can be in year 10000, so the text would not say which instant it was.
    """
    raw = unquote(text)
    if text == HIVE_NULL:
        return None
    if pa.types.is_timestamp(t) and t.tz is not None:
        try:
            value = _EPOCH + _dt.timedelta(microseconds=int(raw))
        except (ValueError, OverflowError):
            raise InvalidArgumentError(f"Spark wrote a timestamp partition value {raw!r} that is not a number of "
                                       "microseconds") from None
        return serialize_partition_value(value, t)
    if pa.types.is_timestamp(t):
        try:
            value = _dt.datetime.fromisoformat(raw)
        except ValueError:
            raise InvalidArgumentError(f"Spark wrote a timestamp partition value {raw!r} that cannot be parsed") \
                from None
        return serialize_partition_value(value, t)
    return serialize_partition_value(raw, t)


def partition_frame(df: "DataFrame", partition_columns: tuple[str, ...], types: dict[str, pa.DataType]) -> "DataFrame":
    """``df`` as written into staging: zoned timestamp partition columns as microseconds since the epoch.

    Partition columns are not stored in the data files, so only the directory names change;
    :func:`partition_value_from_dir` turns them back into the instant.
    """
    from pyspark.sql import functions as F
    for c in partition_columns:
        t = types[c]
        if pa.types.is_timestamp(t) and t.tz is not None:
            df = df.withColumn(c, F.unix_micros(F.col(f"`{c}`")))
    return df


def _parse_partition_dirs(rel: str, partition_columns: tuple[str, ...],
                          types: dict[str, pa.DataType]) -> dict[str, str | None]:
    parts = rel.split("/")[:-1]
    if len(parts) != len(partition_columns):
        raise StorageError(f"Spark wrote {rel!r}, which is not in a partition directory for "
                           f"{list(partition_columns)}")
    values: dict[str, str | None] = {}
    for col, part in zip(partition_columns, parts):
        name, sep, value = part.partition("=")
        if not sep or unquote(name) != col:
            raise StorageError(f"Spark wrote {rel!r}: expected a directory '{col}=...' at this level")
        values[col] = partition_value_from_dir(value, types[col])
    return values


def _is_data_file(rel: str, partition_columns: tuple[str, ...]) -> bool:
    """Whether Spark's output ``rel`` is a data file: a visible ``.parquet`` name, not in a hidden
    folder (``_temporary``, ``.spark-staging``...). A partition folder ``_col=value`` is not
    hidden when ``_col`` is a partition column (Delta Spark's ``isHiddenDirectory`` rule), so a
    partition column whose name starts with ``_`` keeps its rows."""
    *dirs, name = rel.split("/")
    if not name.endswith(".parquet") or name.startswith(("_", ".")):
        return False
    for level, d in enumerate(dirs):
        col = unquote(d.partition("=")[0]) if "=" in d else None
        if level < len(partition_columns) and col == partition_columns[level]:
            continue
        if d.startswith(("_", ".")):
            return False
    return True


def _move(storage: Any, src_rel: str, dst_rel: str) -> None:
    src, dst = storage.path(src_rel), storage.path(dst_rel)
    if storage.is_local:
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        if os.path.exists(dst):
            raise StorageError(f"cannot publish {dst_rel}: a file with that name already exists")
        os.rename(src, dst)
        return
    if storage.fs.exists(dst):
        raise StorageError(f"cannot publish {dst_rel}: a file with that name already exists")
    storage.fs.mv(src, dst)


def new_staging(table: "DeltaTable") -> StagedWrite:
    """A fresh, unique staging location for one write (nothing is created yet)."""
    return StagedWrite(table, uuid.uuid4().hex, [])


def write_to_staging(df: "DataFrame", staged: StagedWrite, partition_columns: tuple[str, ...]) -> None:
    """Let Spark write ``df`` (stored columns plus partition columns) into the staging directory."""
    table = staged.table
    target = spark_uri(table.storage.full_uri(staged.staging_rel))
    writer = df.write.mode("errorifexists").option("compression", "snappy")
    if partition_columns:
        writer = writer.partitionBy(*partition_columns)
    writer.parquet(target)


def publish(staged: StagedWrite, data_schema: pa.Schema, partition_columns: tuple[str, ...],
            partition_types: dict[str, pa.DataType], configuration: dict[str, str]) -> list[AddFile]:
    """Move the staged data files into the table; return their AddFile actions (empty files dropped)."""
    storage = staged.table.storage
    base = storage.path(staged.staging_rel).rstrip("/") + "/"
    adds: list[AddFile] = []
    for info in sorted(storage.walk_files(staged.staging_rel), key=lambda i: i.path):
        rel = info.path[len(base):] if info.path.startswith(base) else info.path.rsplit(base, 1)[-1]
        if not _is_data_file(rel, partition_columns):
            continue
        values = _parse_partition_dirs(rel, partition_columns, partition_types)
        with storage.open(info.path) as f:
            metadata = pq.read_metadata(f)
        if metadata.num_rows == 0:
            continue                    # Spark writes a schema-only file for an empty input
        _move(storage, f"{staged.staging_rel}/{rel}", rel)
        staged.published.append(rel)
        adds.append(AddFile(rel, int(info.size), values, int(info.mtime_ms), True,
                            footer_stats(metadata, data_schema, configuration)))
    return adds
