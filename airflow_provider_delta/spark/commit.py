"""``commit_dataframe``: Spark writes the files, the log commits them exactly once.

The sequence, and why:

1. Ask the table whether ``txn(app_id) >= app_version`` already: a retried task
   whose first try committed stops here, before Spark does any work.
2. Validate everything the commit will need (mode, schema fit, partitioning,
   protocol, the transaction itself) so bad input fails before a file is written.
3. Let Spark write the parquet files into a private staging directory, then move
   them into the table's partition directories and collect size, partition
   values and footer statistics (:mod:`.staged_write`).
4. Commit once, through the log's :class:`Transaction`, with
   ``set_txn(app_id, app_version)``. If a concurrent writer (a zombie try of the
   same task) got there first with the same app id, the commit conflicts; when
   that writer recorded our ``app_version``, this is a skip, not a failure.

Whenever the commit does not happen the moved files are deleted again (unless a
commit owner left the outcome unknown), so no unreferenced data is left behind
by a skipped or failed write; the staging directory is always removed.
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from ..log import (ConcurrentModificationError, DeltaTable, InvalidArgumentError, PlannedWrite, TableNotFoundError,
                   check_mode, partition_arg, plan_write, schema_to_arrow)
from .exactly_once import already_committed, check_app
from .reader import spark_schema
from .staged_write import new_staging, publish, write_to_staging
from .tables import open_table

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame

log = logging.getLogger(__name__)

def _arrow_schema_of(df: "DataFrame") -> pa.Schema:
    """The DataFrame's schema in the log's terms (Spark's schema JSON is Delta's format)."""
    try:
        return schema_to_arrow(df.schema.jsonValue())
    except InvalidArgumentError as e:
        raise InvalidArgumentError(f"the DataFrame's schema cannot be stored in a Delta table: {e}") from None


def _conform(df: "DataFrame", table_schema_json: dict[str, Any], partition_columns: tuple[str, ...]) -> "DataFrame":
    """``df`` with exactly the table's columns, order and Spark types; NOT NULL checked while writing."""
    from pyspark.sql import functions as F
    target = spark_schema(table_schema_json)
    have = set(df.columns)
    cols = []
    for f in target.fields:
        ref = f"`{f.name}`"
        col = F.col(ref).cast(f.dataType) if f.name in have else F.lit(None).cast(f.dataType)
        if not f.nullable:
            msg = f"column {f.name!r} is NOT NULL in the Delta table but the data has a null"
            col = F.when(col.isNull(), F.raise_error(F.lit(msg))).otherwise(col)
        cols.append(col.alias(f.name))
    return df.select(*cols)


def _check_mode_args(mode: str, partition_by: Any, job: Any) -> tuple[str, ...] | None:
    check_mode(mode)
    if job is not None and not isinstance(job, dict):
        raise InvalidArgumentError("job must be a dict (e.g. dag_id, task_id, run_id, try_number)")
    return partition_arg(partition_by)


def commit_dataframe(df: "DataFrame", table_uri: "str | DeltaTable", mode: str = "append",
                     app_id: str | None = None, app_version: int | None = None,
                     partition_by: "Iterable[str] | str | None" = None, job: dict[str, Any] | None = None, *,
                     storage_options: dict[str, Any] | None = None, commit_owner: Any = None,
                     single_writer: bool = False, properties: dict[str, Any] | None = None,
                     operation: str = "WRITE", user_metadata: str | None = None,
                     max_retries: int = 10) -> int | None:
    """Write ``df`` into the Delta table at ``table_uri`` and commit it once; return the new version.

    ``mode="append"`` adds the rows, ``"overwrite"`` replaces all rows (schema and
    partitioning stay). ``app_id``/``app_version`` make the write idempotent: if the
    table already holds ``app_version`` (or a later one) of ``app_id``, nothing is
    written and None is returned. A table that does not exist is created from the
    DataFrame's schema, ``partition_by`` and ``properties`` in the same commit (if an identical
    create wins that commit first, the write goes on against the created table).
    ``job`` (dag_id, task_id, run_id, try_number) goes into commitInfo.
    """
    partition_by = _check_mode_args(mode, partition_by, job)
    app_id, app_version = check_app(app_id, app_version)
    table = table_uri if isinstance(table_uri, DeltaTable) else open_table(
        table_uri, storage_options, commit_owner, single_writer)
    try:
        snap = table.snapshot()
    except TableNotFoundError:
        snap = None
    if app_id is not None and snap is not None:
        current = snap.transaction_version(app_id)
        if current is not None and current >= app_version:  # type: ignore[operator]
            log.info("%s already holds version %s of app %r (asked for %s): nothing to write",
                     table.uri, current, app_id, app_version)
            return None
    plan = plan_write(table.uri, snap, _arrow_schema_of(df), mode, partition_by, properties)
    write = PlannedWrite(table, plan, app_id=app_id, app_version=app_version, operation=operation, job=job,
                         user_metadata=user_metadata, max_retries=max_retries)

    cols = plan.partition_columns
    out = _conform(df, json.loads(plan.schema_string), cols)
    data_schema = pa.schema([f for f in plan.schema if f.name not in cols])
    types = {c: plan.schema.field(c).type for c in cols}
    session_tz = df.sparkSession.conf.get("spark.sql.session.timeZone") or "UTC"
    staged = new_staging(table)
    try:
        write_to_staging(out, staged, cols)
        adds = publish(staged, data_schema, cols, types, plan.configuration, session_tz)
        version = write.commit(adds)
    except ConcurrentModificationError:
        staged.discard_published()
        if already_committed(table, app_id, app_version):
            log.info("a concurrent writer committed version %s of app %r to %s first: skipped",
                     app_version, app_id, table.uri)
            return None
        raise
    except BaseException:
        if not write.outcome_unknown:
            staged.discard_published()
        raise
    finally:
        staged.discard_staging()
    log.info("committed %d file(s) to %s as version %d", len(adds), table.uri, version)
    return version
