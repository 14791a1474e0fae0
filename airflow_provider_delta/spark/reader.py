"""``read_snapshot``: a Spark DataFrame of exactly one pinned table version.

Spark reads the listed parquet files and nothing else (no directory listing, so
files added or removed later are invisible). Partition columns are not stored in
Delta data files; their values come from the log, parsed with the log layer's
rules (so a timestamp partition means the same instant here as everywhere else),
and are added as typed literal columns, one scan per distinct partition.
"""
from __future__ import annotations

import json
from collections import OrderedDict
from functools import reduce
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from ..log import InvalidArgumentError
from ..log import partition_values_to_arrow, schema_to_arrow
from .pinned import PinnedSnapshot, from_manifest, from_table
from .tables import open_table
from .uris import spark_uri

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


def spark_schema(delta_schema: dict[str, Any]) -> Any:
    """The Spark StructType of a Delta schema (Delta's schema JSON is Spark's own format)."""
    from pyspark.sql.types import StructType
    try:
        return StructType.fromJson(delta_schema)
    except Exception as e:  # pyspark raises several types for unknown type names
        raise InvalidArgumentError(f"the table schema cannot be expressed in Spark: {e}") from None


def _typed_partition_values(pinned: PinnedSnapshot) -> dict[str, list[Any]]:
    """Per partition column, the parsed Python value of every file (in file order)."""
    arrow = schema_to_arrow(pinned.schema)
    out: dict[str, list[Any]] = {}
    for col in pinned.partition_columns:
        if col not in arrow.names:
            raise InvalidArgumentError(f"partition column {col!r} is not in the schema of {pinned.source}")
        raw = pa.array([f.partition_values.get(col) for f in pinned.files], pa.string())
        out[col] = partition_values_to_arrow(raw, arrow.field(col).type).to_pylist()
    return out


def dataframe_of(spark: "SparkSession", pinned: PinnedSnapshot) -> "DataFrame":
    """The rows of ``pinned`` as a DataFrame with the table's columns in schema order."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import StructType

    schema = spark_schema(pinned.schema)
    pcols = list(pinned.partition_columns)
    data_schema = StructType([f for f in schema.fields if f.name not in pcols])
    if not pinned.files:
        return spark.createDataFrame([], schema)
    typed = _typed_partition_values(pinned)
    groups: "OrderedDict[tuple, list[str]]" = OrderedDict()
    for i, f in enumerate(pinned.files):
        key = tuple(typed[c][i] for c in pcols)
        groups.setdefault(key, []).append(spark_uri(f.uri))
    types = {f.name: f.dataType for f in schema.fields}
    frames = []
    for key, uris in groups.items():
        df = spark.read.schema(data_schema).parquet(*uris)
        if pcols:
            df = df.select("*", *[F.lit(v).cast(types[c]).alias(c) for c, v in zip(pcols, key)])
        frames.append(df.select(*[F.col(f"`{n}`") for n in schema.fieldNames()]))
    return reduce(lambda a, b: a.unionByName(b), frames)


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
