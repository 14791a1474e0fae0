"""``DeltaOptimizeOperator``: OPTIMIZE a table (compaction, Z-order, deletion-vector purge).

The scheduled half of table maintenance: many small appends leave many small files, and
every reader pays for each one; OPTIMIZE rewrites them into files near the target size
(``dataChange=false``: downstream consumers of the table's changes see nothing new). Run it
before vacuum, which then deletes the replaced files once they are past the retention.

Two engines run the same log-layer OPTIMIZE: ``local`` (this worker; memory about the target
file size per concurrent bin) and ``spark`` (``spark/optimize_job.py`` through the Spark
provider's ``SparkSubmitHook``: one Spark task per bin, one commit on the driver).
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Sequence

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from ..log import InvalidTableStateError, plan_optimize
from ..spark.job_args import SECRETS_ENV
from ..hooks.arguments import (check_flags, choice, column_names, flag, is_template, mapping, optional_positive_int,
                               optional_value, refused_without_retry)
from .base import DeltaBaseOperator, job_info
from .spark_base import job_secrets, resolve_master
from .spark_secrets import DriverSecrets

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context

#: what ``spark-submit`` runs for ``engine="spark"``
OPTIMIZE_APPLICATION = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spark",
                                    "optimize_job.py")
ENGINES = ("local", "spark")
#: the keys of the log layer's metrics this operator returns (bounded: no file lists)
RESULT_KEYS = ("version", "operation", "numFilesAdded", "numFilesRemoved", "filesAdded", "filesRemoved",
               "partitionsOptimized", "numBins", "totalConsideredFiles", "totalFilesSkipped",
               "numDeletionVectorsRemoved", "numDeletionVectorRowsRemoved", "zOrderBy", "readVersion")


def _size(value: Any) -> Any:
    value = optional_value(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return value


class DeltaOptimizeOperator(DeltaBaseOperator):
    """Compact small files, optionally Z-order by columns, and purge deleted rows.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param partition_filter: only these partitions: ``[(column, op, value), ...]`` on partition columns
    :param target_size: bytes of the new files (templated; int or ``"128mb"``); default the table's
        ``delta.targetFileSize``, else Delta Spark's 1 GiB
    :param min_file_size: files below this size are compacted (templated); default the target size
    :param z_order_by: columns to cluster by on a Z-order curve (templated; list, ``"x,y"``, a JSON list or a
        list param rendered as Python text, ``"['x', 'y']"``)
    :param purge: ``REORG TABLE ... APPLY (PURGE)``: rewrite only files with deletion vectors
    :param max_concurrent: ``local`` engine: bins rewritten at once (default up to 4)
    :param engine: ``local`` (default) or ``spark``
    :param spark_conn_id: Spark connection of the ``spark`` engine (local mode when not defined)
    :param master: Spark master, overriding the connection's (templated)
    :param spark_submit_kwargs: more ``SparkSubmitHook`` arguments (``conf``, ``executor_memory``...)
    :param delta_conn_id: ``delta`` connection

    An argument the log layer refuses (a size, a filter, a column) fails the task with
    :class:`~..hooks.arguments.DeltaArgumentError`, without retry, before anything is written.

    Returns the metrics (``version`` None when there was nothing to do, files and bytes added and
    removed, partitions, deletion vectors removed) plus ``table_uri`` and ``engine``: a bounded dict,
    never a file list. The commit records this task in commitInfo ``job``.
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "partition_filter", "target_size", "min_file_size",
                                      "z_order_by", "purge", "max_concurrent", "engine", "spark_conn_id", "master",
                                      "spark_submit_kwargs")

    def __init__(self, *, table_uri: str, partition_filter: list[tuple[str, str, Any]] | None = None,
                 target_size: int | str | None = None, min_file_size: int | str | None = None,
                 z_order_by: list[str] | str | None = None, purge: bool = False, max_concurrent: int | None = None,
                 engine: str = "local", spark_conn_id: str = "spark_default", master: str | None = None,
                 spark_submit_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        if not is_template(engine):
            choice(engine, "engine", ENGINES)
        check_flags(purge=purge)
        super().__init__(table_uri=table_uri, **kwargs)
        self.partition_filter = partition_filter
        self.target_size = target_size
        self.min_file_size = min_file_size
        self.z_order_by = z_order_by
        self.purge = purge
        self.max_concurrent = max_concurrent
        self.engine = engine
        self.spark_conn_id = spark_conn_id
        self.master = master
        self.spark_submit_kwargs = spark_submit_kwargs

    def _arguments(self) -> dict[str, Any]:
        args: dict[str, Any] = {"partition_filter": self.partition_filter, "target_size": _size(self.target_size),
                                "min_file_size": _size(self.min_file_size),
                                "z_order_by": column_names(self.z_order_by, "z_order_by"),
                                "purge": flag(self.purge, "purge")}
        return {k: v for k, v in args.items() if v is not None}

    def execute(self, context: "Context") -> dict[str, Any]:
        self.engine = choice(self.engine, "engine", ENGINES)
        self.spark_submit_kwargs = mapping(self.spark_submit_kwargs, "spark_submit_kwargs")
        args = self._arguments()
        max_concurrent = optional_positive_int(self.max_concurrent, "max_concurrent")   # checked for both engines
        table = self.hook.get_table(self.table_uri)
        if self.engine == "spark":
            metrics = self._spark_optimize(table, args, context)
        else:
            with refused_without_retry("OPTIMIZE refused its arguments"):
                metrics = table.optimize(max_concurrent=max_concurrent, job=job_info(context), **args)
        result = {k: metrics.get(k) for k in RESULT_KEYS}
        result.update({"table_uri": table.uri, "engine": self.engine})
        self.log.info("%s of %s (%s engine): %s file(s) -> %s file(s), version %s", metrics.get("operation"),
                      table.uri, self.engine, result["numFilesRemoved"], result["numFilesAdded"], result["version"])
        version = result["version"]
        if version is None:
            self.record_lineage(table.latest_version())
            self.drop_asset_events("OPTIMIZE had nothing to do")
            return result
        self.record_lineage(version, statistics={"rowCount": 0, "size": int(result["filesAdded"]["totalSize"])})
        # a new version, but no data change: consumers of the table's changes may ignore it
        self.emit_asset_events(context, {"version": version, "committed": True, "dataChange": False,
                                         "maintenance": "optimize", "num_files_added": result["numFilesAdded"],
                                         "num_files_removed": result["numFilesRemoved"]})
        return result

    def _spark_optimize(self, table: Any, args: dict[str, Any], context: "Context") -> dict[str, Any]:
        """Submit the optimize job; its commit is found in the history by this task's ``job``."""
        # the gate and the argument checks first: a refusal is a typed error and nothing is submitted
        with refused_without_retry("OPTIMIZE refused its arguments"):
            bins = plan_optimize(table, **args).bins
        if not bins:
            return {"version": None, "operation": "REORG" if args.get("purge") else "OPTIMIZE", "numFilesAdded": 0,
                    "numFilesRemoved": 0, "filesAdded": {"totalSize": 0}}
        job = job_info(context)
        doc = {"table_uri": table.uri, **args, "job": job}
        if "partition_filter" in doc:
            doc["partition_filter"] = [list(a) for a in doc["partition_filter"]]
        kwargs = dict(self.spark_submit_kwargs)
        env = dict(kwargs.pop("env_vars", None) or {})
        secrets = job_secrets(self.hook, self.table_uri)
        if secrets:
            env[SECRETS_ENV] = json.dumps({"table": secrets})
        kwargs.setdefault("name", f"delta-optimize-{self.task_id}")
        before = table.latest_version()
        hook = SparkSubmitHook(conn_id=self.spark_conn_id, application_args=[json.dumps(doc, default=str)],
                               env_vars=env, **kwargs)
        hook = resolve_master(hook, optional_value(self.master), self.spark_conn_id, self.log)
        self.log.info("Submitting the Spark OPTIMIZE job for %s", table.uri)
        with DriverSecrets(self.log) as driver_secrets:   # never on the command line
            driver_secrets.route(hook)
            hook.submit(OPTIMIZE_APPLICATION)
        return _committed_metrics(table, before, job)


def _committed_metrics(table: Any, before: int, job: dict[str, Any]) -> dict[str, Any]:
    """The metrics of the OPTIMIZE the job committed after ``before`` (version None: it had nothing to do)."""
    for entry in table.history(limit=max(1, table.latest_version() - before)):
        if entry["version"] <= before:
            break
        if entry.get("operation") in ("OPTIMIZE", "REORG") and entry.get("job") == job:
            m = entry.get("operationMetrics") or {}
            added, removed = int(m.get("numAddedFiles", 0)), int(m.get("numRemovedFiles", 0))
            return {"version": entry["version"], "operation": entry["operation"], "numFilesAdded": added,
                    "numFilesRemoved": removed,
                    "filesAdded": {"totalFiles": added, "totalSize": int(m.get("numAddedBytes", 0)),
                                   "min": int(m.get("minFileSize", 0)), "max": int(m.get("maxFileSize", 0))},
                    "filesRemoved": {"totalFiles": removed, "totalSize": int(m.get("numRemovedBytes", 0))},
                    "numDeletionVectorsRemoved": int(m.get("numDeletionVectorsRemoved", 0)),
                    "zOrderBy": json.loads((entry.get("operationParameters") or {}).get("zOrderBy") or "[]"),
                    "readVersion": entry.get("readVersion")}
    if table.latest_version() < before:
        raise InvalidTableStateError(f"{table.uri} went back from version {before}")
    return {"version": None, "numFilesAdded": 0, "numFilesRemoved": 0, "filesAdded": {"totalSize": 0},
            "operation": "OPTIMIZE"}
