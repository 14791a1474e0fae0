"""A Spark DataFrame of a table's change feed, for jobs that process only what changed.

The driver reads the changes of the range with the log layer
(:meth:`DeltaTable.changes`: data columns plus ``_change_type``,
``_commit_version``, ``_commit_timestamp``) and hands them to Spark as one Arrow
table, so the range should be what a driver holds in memory: the changes between
two runs of a scheduled job, not a table's whole history. Jobs that read with
Delta Spark use its ``readChangeFeed`` instead (``DeltaSparkApplicationOperator``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .tables import open_table

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame, SparkSession


def changes_dataframe(spark: "SparkSession", table_uri: str, start: int, end: int,
                      storage_options: dict[str, Any] | None = None, commit_owner: Any = None) -> "DataFrame":
    """The change rows of versions ``start``..``end`` of ``table_uri`` as a DataFrame."""
    changes = open_table(table_uri, storage_options, commit_owner).changes(start, end)
    return spark.createDataFrame(changes)
