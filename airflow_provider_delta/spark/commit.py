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

When the commit call fails, the log decides what happened, never the error: a
commit the store reported as failed but that landed (found by its ``txnId``) is
ours and succeeds; the moved files are deleted only when the log shows the
commit did not land and its outcome is known, so a skipped or failed write
leaves no unreferenced data, and a commit of unknown outcome never loses its
files. The staging directory is always removed; staging folders that killed
writes left behind are removed when they are a week old (:mod:`.staging_cleanup`).
"""
from __future__ import annotations

import json
import logging
from typing import TYPE_CHECKING, Any, Callable, Iterable

import pyarrow as pa

from ..log import (CommitFailedError, ConcurrentModificationError, DeltaTable, InvalidArgumentError, PlannedWrite,
                   check_pair_not_undone,
                   TableNotFoundError, check_mode, partition_arg, plan_write, schema_to_arrow)
from .exactly_once import already_committed, check_app
from .reader import spark_schema
from .staged_write import new_staging, partition_frame, publish, write_to_staging
from .staging_cleanup import clean_stale_staging
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


def _not_null_paths(field: Any) -> list[tuple[str, ...]]:
    """Paths of the NOT NULL fields in ``field`` (itself included), through structs only.

    Delta Spark's invariant rule: a NOT NULL struct field must be non-null in every row (a
    null parent struct violates it too); inside arrays and maps it is not enforced.
    """
    from pyspark.sql.types import StructType
    paths: list[tuple[str, ...]] = [()] if not field.nullable else []
    if isinstance(field.dataType, StructType):
        for child in field.dataType.fields:
            paths += [(child.name, *p) for p in _not_null_paths(child)]
    return paths


def _conform(df: "DataFrame", table_schema_json: dict[str, Any], partition_columns: tuple[str, ...]) -> "DataFrame":
    """``df`` with exactly the table's columns, order and Spark types; NOT NULL (nested ones too)
    checked while writing."""
    from pyspark.sql import functions as F
    target = spark_schema(table_schema_json)
    have = set(df.columns)
    cols = []
    for f in target.fields:
        ref = f"`{f.name}`"
        col = F.col(ref).cast(f.dataType) if f.name in have else F.lit(None).cast(f.dataType)
        checked = None
        for path in _not_null_paths(f):
            value = col
            for name in path:
                value = value.getField(name)
            msg = f"column {'.'.join((f.name, *path))!r} is NOT NULL in the Delta table but the data has a null"
            fail = F.raise_error(F.lit(msg))
            checked = F.when(value.isNull(), fail) if checked is None else checked.when(value.isNull(), fail)
        cols.append((col if checked is None else checked.otherwise(col)).alias(f.name))
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
                     max_retries: int = 10, enlist: Callable[[Any], None] | None = None) -> int | None:
    """Write ``df`` into the Delta table at ``table_uri`` and commit it once; return the new version.

    ``mode="append"`` adds the rows, ``"overwrite"`` replaces all rows (schema and
    partitioning stay). ``app_id``/``app_version`` make the write idempotent: if the
    table already holds ``app_version`` (or a later one) of ``app_id``, nothing is
    written and None is returned. A table that does not exist is created from the
    DataFrame's schema, ``partition_by`` and ``properties`` in the same commit (if an identical
    create wins that commit first, the write goes on against the created table). ``properties``
    are for the create only: given for a table that exists (or that another writer created first,
    with the same schema and partitioning), they are checked, not applied, and a warning names
    those the table holds otherwise, as Delta Spark's ``df.write.option("delta.x", ...)`` ignores them.
    ``job`` (dag_id, task_id, run_id, try_number) goes into commitInfo. ``enlist`` (a multi-table
    transaction participant's, see :mod:`.group_write`): the commit is handed to that group instead
    (the returned version is the proposed one; the group stages it).
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
            check_pair_not_undone(table, app_id, app_version, recorded=current)  # type: ignore[arg-type]
            log.info("%s already holds version %s of app %r (asked for %s): nothing to write",
                     table.uri, current, app_id, app_version)
            return None
    if snap is not None:
        _clean_staging_quietly(table)
    plan = plan_write(table.uri, snap, _arrow_schema_of(df), mode, partition_by, properties,
                      create_only_properties=True)
    grouped = {"enlist": enlist} if enlist is not None else {}
    write = PlannedWrite(table, plan, create_only_properties=True, app_id=app_id, app_version=app_version,
                         operation=operation, job=job,
                         user_metadata=user_metadata, max_retries=max_retries, **grouped)

    cols = plan.partition_columns
    out = _conform(df, json.loads(plan.schema_string), cols)
    data_schema = pa.schema([f for f in plan.schema if f.name not in cols])
    types = {c: plan.schema.field(c).type for c in cols}
    staged = new_staging(table)
    try:
        write_to_staging(partition_frame(out, cols, types), staged, cols)
        adds = publish(staged, data_schema, cols, types, plan.configuration)
        _check_application_alive(df)
        version = write.commit(adds)         # goes on after losing a create to an identical one
    except BaseException as e:
        version = _resolve_failed_commit(write.txn, staged, e, table, app_id, app_version)
        if version is None:
            return None
    finally:
        staged.discard_staging()
    log.info("%s %d file(s) to %s as version %d", "enlisted" if enlist else "committed", len(adds), table.uri,
             version)
    _warn_unapplied(table.uri, write.plan.unapplied_properties)
    return version


def _warn_unapplied(uri: str, unapplied: dict[str, str]) -> None:
    """Properties given for a table that existed (or was created first by another writer) are not
    applied, as Delta Spark's DataFrame writes ignore ``delta.*`` options then; say which differ."""
    if unapplied:
        log.warning("%s existed: the table properties %s apply only when the write creates the table and were "
                    "not applied (the table keeps its own; change them with ALTER TABLE ... SET TBLPROPERTIES "
                    "or a transaction's set_properties)", uri, unapplied)


def _check_application_alive(df: "DataFrame") -> None:
    """Refuse to commit when the Spark application around this driver is gone.

    The commit itself is pure Python: a driver whose spark-submit JVM was killed (the task was
    killed, or a kill -9) would otherwise commit after its task failed. One call into the JVM
    right before the commit tells; the staged files are then deleted (nothing was committed).
    """
    try:
        df.sparkSession.conf.get("spark.app.id", None)
    except Exception as e:
        raise CommitFailedError(f"the Spark application is gone ({type(e).__name__}); not committing",
                                retryable=True) from e


def _clean_staging_quietly(table: DeltaTable) -> None:
    """Remove staging folders of dead writes (:mod:`.staging_cleanup`); never fails the write."""
    try:
        clean_stale_staging(table)
    except Exception as e:  # housekeeping only
        log.warning("could not clean stale staging folders of %s: %s: %s", table.uri, type(e).__name__, e)


def _resolve_failed_commit(txn: Any, staged: Any, error: BaseException, table: DeltaTable,
                           app_id: str | None, app_version: int | None) -> int | None:
    """After ``txn.commit()`` (or the write before it) raised: the version if it is ours after all,
    None for a skip (a zombie try of the same run committed this app version first), else re-raise.

    The log decides, never the error: a commit that landed but was reported failed is found by
    its ``txnId`` and kept; the moved files are deleted only when the log shows the commit did
    not land and its outcome is known. On doubt they stay (unreferenced files are vacuum's).
    """
    try:
        own = txn.landed_version()
    except Exception:   # the log cannot be read now: keep the files, report the original error
        own = None
    if own is not None:
        log.warning("committing to %s reported %s: %s, but version %d holds this write's commit: committed",
                    table.uri, type(error).__name__, error, own)
        return own
    if not txn.surely_not_committed():
        log.error("the outcome of the commit to %s is unknown (%s: %s): its %d data file(s) are kept; if the "
                  "commit did not land, VACUUM removes them", table.uri, type(error).__name__, error,
                  len(staged.published))
        raise error
    staged.discard_published()
    if isinstance(error, ConcurrentModificationError) and already_committed(table, app_id, app_version):
        log.info("another writer (a zombie try of this run?) committed version %s of app %r to %s first: skipped",
                 app_version, app_id, table.uri)
        return None
    raise error
