"""``read_snapshot``: a Spark DataFrame of exactly one pinned table version.

Spark reads the listed parquet files and nothing else (no directory listing, so
files added or removed later are invisible). Partition columns are not stored in
Delta data files; their values come from the log, parsed with the log layer's
rules (so a timestamp partition means the same instant here as everywhere else),
and are added as typed literal columns, one scan per distinct partition.

Deletion vectors are decoded on the driver by the log layer; a file that has one
is scanned on its own with Spark's ``_metadata.row_index`` and its deleted rows
are removed by a broadcast anti-join (no Python per row). Under column mapping the
files are read with the physical schema (physical names, nested ones too) and each
column is cast to its logical type, which renames struct fields by position. In
mapping mode ``id`` Spark finds each column, nested ones too, by its Parquet field
id instead of its name (:func:`read_by_field_id`).
"""
from __future__ import annotations

import datetime as dt
import json
from collections import OrderedDict
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..log import DeltaTable, InvalidArgumentError, column_mapping_mode, physical_schema, read_deletion_vector
from ..log import partition_values_to_arrow, schema_to_arrow
from .pinned import PinnedSnapshot, from_manifest, from_table
from .tables import open_table
from .uris import spark_uri

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession

#: where Spark's Parquet reader looks for a read-schema field's Parquet field id
SPARK_FIELD_ID_KEY = "parquet.field.id"
#: the session setting that makes it look there (off by default in Spark)
FIELD_ID_READ_CONF = "spark.sql.parquet.fieldId.read.enabled"


def spark_schema(delta_schema: dict[str, Any]) -> Any:
    """The Spark StructType of a Delta schema (Delta's schema JSON is Spark's own format)."""
    from pyspark.sql.types import StructType
    try:
        return StructType.fromJson(delta_schema)
    except Exception as e:  # pyspark raises several types for unknown type names
        raise InvalidArgumentError(f"the table schema cannot be expressed in Spark: {e}") from None


def read_by_field_id(spark: "SparkSession") -> None:
    """Make Spark's Parquet reader match columns by field id where the read schema gives one.

    Spark reads this setting when a query runs, not when its DataFrame is built, and
    ignores it as a reader option, so it cannot be scoped to one DataFrame (a value
    restored after ``read_snapshot`` returns would be the one its query sees). It is
    turned on for the session and left on, as Delta Spark's session extension does for
    every session. Other reads keep matching by name: Spark uses ids only for
    read-schema fields that carry a ``parquet.field.id``. A data file with no field ids
    at all fails the read (Spark's ``...fieldId.read.ignoreMissing`` is left as is), as
    it does in Delta Spark: in mode ``id`` writers must write them.
    """
    if spark.conf.get(FIELD_ID_READ_CONF, "false").lower() != "true":
        spark.conf.set(FIELD_ID_READ_CONF, "true")


def _typed_partition_values(pinned: PinnedSnapshot) -> dict[str, list[Any]]:
    """Per partition column, the parsed Python value of every file (in file order)."""
    arrow = schema_to_arrow(pinned.schema)
    out: dict[str, list[Any]] = {}
    for col, key in zip(pinned.partition_columns, pinned.partition_keys):
        if col not in arrow.names:
            raise InvalidArgumentError(f"partition column {col!r} is not in the schema of {pinned.source}")
        raw = pa.array([f.partition_values.get(key) for f in pinned.files], pa.string())
        out[col] = partition_values_to_arrow(raw, arrow.field(col).type).to_pylist()
    return out


def partition_literal(value: Any, data_type: Any) -> Any:
    """A Spark column holding one partition value of ``data_type``.

    Dates and timestamps go in as ISO text cast by Spark, never as Python objects: Py4J hands
    those to the JVM as ``java.sql.Date``/``Timestamp``, whose hybrid Julian calendar shifts
    every value before 1582-10-15 by days (and refuses some), while Spark and Delta use the
    proleptic Gregorian calendar throughout.
    """
    from pyspark.sql import functions as F
    if isinstance(value, dt.datetime):
        text = value.astimezone(dt.timezone.utc).isoformat() if value.tzinfo is not None else value.isoformat()
        return F.lit(text).cast(data_type)
    if isinstance(value, dt.date):
        return F.lit(value.isoformat()).cast(data_type)
    return F.lit(value).cast(data_type)


def dataframe_of(spark: "SparkSession", pinned: PinnedSnapshot) -> "DataFrame":
    """The rows of ``pinned`` as a DataFrame with the table's columns in schema order."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = spark_schema(pinned.schema)
    physical = spark_schema(physical_schema(pinned.schema, pinned.configuration, pinned.source,
                                            field_id_key=SPARK_FIELD_ID_KEY))
    if column_mapping_mode(pinned.configuration) == "id":
        read_by_field_id(spark)
    pcols = list(pinned.partition_columns)
    data_schema = StructType([p for f, p in zip(schema.fields, physical.fields) if f.name not in pcols])
    if not pinned.files:
        return spark.createDataFrame([], schema)
    typed = _typed_partition_values(pinned)
    groups: "OrderedDict[tuple, list[str]]" = OrderedDict()
    with_dvs: list[tuple[tuple, int]] = []
    for i, f in enumerate(pinned.files):
        key = tuple(typed[c][i] for c in pcols)
        if f.deletion_vector:
            with_dvs.append((key, i))
        else:
            groups.setdefault(key, []).append(spark_uri(f.uri))
    mapped = {f.name: p.name for f, p in zip(schema.fields, physical.fields)}

    def logical(df: "DataFrame", key: tuple) -> "DataFrame":
        cols = []
        for f in schema.fields:
            if f.name in pcols:
                cols.append(partition_literal(key[pcols.index(f.name)], f.dataType).alias(f.name))
            elif mapped[f.name] != f.name:
                cols.append(F.col(f"`{mapped[f.name]}`").cast(f.dataType).alias(f.name))
            else:
                cols.append(F.col(f"`{f.name}`"))
        return df.select(*cols)

    frames = [logical(spark.read.schema(data_schema).parquet(*uris), key) for key, uris in groups.items()]
    if with_dvs:
        storage = DeltaTable(pinned.table_uri, storage_options=pinned.storage_options).storage
        cache: dict[str, bytes] = {}
        for key, i in with_dvs:
            f = pinned.files[i]
            deleted = read_deletion_vector(storage, f.deletion_vector, cache)
            frames.append(logical(_without_rows(spark, spark.read.schema(data_schema).parquet(spark_uri(f.uri)),
                                                deleted), key))
    return reduce(lambda a, b: a.unionByName(b), frames)


def _without_rows(spark: "SparkSession", df: "DataFrame", deleted: Any) -> "DataFrame":
    """``df`` (one file's scan) without the rows at the ``deleted`` row indexes."""
    from pyspark.sql import functions as F
    if len(deleted) == 0:
        return df
    gone = spark.createDataFrame(pa.table({"__row_index": pa.array(deleted.astype("int64"))}))
    scanned = df.select("*", F.col("_metadata.row_index").alias("__row_index"))
    return scanned.join(F.broadcast(gone), "__row_index", "left_anti").drop("__row_index")


def pin(manifest_uri: str | None = None, table_uri: str | None = None, version: int | None = None,
        storage_options: dict[str, Any] | None = None, commit_owner: Any = None) -> PinnedSnapshot:
    """Resolve the snapshot to read: from a manifest, or a table (and version) opened on the driver."""
    if (manifest_uri is None) == (table_uri is None):
        raise InvalidArgumentError("pass exactly one of manifest_uri or table_uri")
    if manifest_uri is not None:
        if version is not None:
            raise InvalidArgumentError("version comes from the manifest; do not pass it with manifest_uri")
        return from_manifest(manifest_uri, storage_options)
    return from_table(open_table(table_uri, storage_options, commit_owner), version)


def read_snapshot(spark: "SparkSession", manifest_uri: str | None = None, *, table_uri: str | None = None,
                  version: int | None = None, storage_options: dict[str, Any] | None = None,
                  commit_owner: Any = None) -> "DataFrame":
    """A DataFrame of exactly one table version.

    Pass ``manifest_uri`` (written by ``DeltaTimeTravelSnapshotOperator``), or
    ``table_uri`` with an optional ``version`` (default: the latest at call time).
    ``storage_options`` are fsspec options for reading the manifest or log; Spark
    reads the data files with its own (Hadoop) configuration.
    """
    return dataframe_of(spark, pin(manifest_uri, table_uri, version, storage_options, commit_owner))


def describe(pinned: PinnedSnapshot) -> str:
    """One log line about what is being read."""
    return json.dumps({"table": pinned.table_uri, "version": pinned.version, "files": len(pinned.files),
                       "records": pinned.num_records})
