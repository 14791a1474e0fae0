"""``DeltaCheckpointOperator``: write a checkpoint, then optionally clean up old log files.

Checkpoints bound how much of the log every reader (and every sensor poke that
opens a snapshot) has to replay. On a managed-commit table a checkpoint may only
cover backfilled commits, so the default version is the latest backfilled one.

Two engines write the same checkpoint: ``local`` (this worker, pyarrow) and ``spark``
(``spark/checkpoint_job.py`` through the Spark provider's ``SparkSubmitHook``), for logs
too large for one process: executors read and reconcile the parts, the driver publishes.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Sequence

from airflow.providers.apache.spark.hooks.spark_submit import SparkSubmitHook

from ..log import InvalidTableStateError, plan_checkpoint
from ..spark.job_args import SECRETS_ENV
from ..hooks.arguments import (check_flags, choice, flag, is_template, mapping, optional_int, optional_positive_int,
                        optional_value)
from .base import DeltaBaseOperator
from .maintenance import bounded_report
from .spark_base import job_secrets, resolve_master
from .spark_secrets import DriverSecrets

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context

#: what ``spark-submit`` runs for ``engine="spark"``
CHECKPOINT_APPLICATION = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spark",
                                      "checkpoint_job.py")
ENGINES = ("local", "spark")


class DeltaCheckpointOperator(DeltaBaseOperator):
    """Checkpoint a table at ``version`` (default: latest backfilled), single or multi-part.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param version: version to checkpoint (templated); None means the latest backfilled version
    :param parts: number of checkpoint parts (templated); None or 1 writes a single file with the
        local engine; with the Spark engine None means about ``actions_per_part`` actions per part
        (sidecars of a V2 checkpoint on ``v2Checkpoint`` tables)
    :param cleanup: afterwards run metadata cleanup (log files older than the retention); a bool or
        true/false/1/0/yes/no
    :param cleanup_dry_run: that cleanup only reports what it would delete (default True: like every
        Delta operator, nothing is deleted unless you say so; pass False to delete); same spellings
    :param delta_conn_id: ``delta`` connection
    :param engine: ``local`` (default: this worker writes it) or ``spark`` (a Spark application
        reads and reconciles the log on its executors; for logs of many millions of files)
    :param spark_conn_id: Spark connection of the ``spark`` engine (local mode, ``local[*]``, when it
        is not defined)
    :param master: Spark master, overriding the connection's (templated)
    :param actions_per_part: ``spark`` engine, ``parts=None``: checkpoint actions per part (default 1,000,000)
    :param spark_submit_kwargs: more ``SparkSubmitHook`` arguments (``conf``, ``executor_memory``,
        ``num_executors``, ``py_files``...). The job needs no Delta Spark jars: it reads and writes
        the log with this package (installed on the cluster's Python, or shipped with ``py_files``).

    All arguments are templated; the flags are parsed strictly before anything is written (an
    unclear ``cleanup`` or ``cleanup_dry_run`` fails the task without retry).

    Returns ``{"table_uri", "version", "parts", "cleanup"}`` (either engine) where ``cleanup`` is the
    metadata cleanup report, bounded like the cleanup operator's (or None when not asked for).
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "version", "parts", "cleanup",
                                      "cleanup_dry_run", "engine", "spark_conn_id", "master", "actions_per_part",
                                      "spark_submit_kwargs")

    def __init__(self, *, table_uri: str, version: int | str | None = None, parts: int | str | None = None,
                 cleanup: bool = False, cleanup_dry_run: bool = True, engine: str = "local", spark_conn_id: str = "spark_default",
                 master: str | None = None, actions_per_part: int | None = None,
                 spark_submit_kwargs: dict[str, Any] | None = None, **kwargs: Any) -> None:
        check_flags(cleanup=cleanup, cleanup_dry_run=cleanup_dry_run)
        if not is_template(engine):                 # checked here when it can be, again after rendering
            choice(engine, "engine", ENGINES)
        if not is_template(actions_per_part):
            optional_positive_int(actions_per_part, "actions_per_part")
        super().__init__(table_uri=table_uri, **kwargs)
        self.version = version
        self.parts = parts
        self.cleanup = cleanup
        self.cleanup_dry_run = cleanup_dry_run
        self.engine = engine
        self.spark_conn_id = spark_conn_id
        self.master = master
        self.actions_per_part = actions_per_part
        self.spark_submit_kwargs = spark_submit_kwargs if is_template(spark_submit_kwargs) else \
            dict(spark_submit_kwargs or {})

    def execute(self, context: "Context") -> dict[str, Any]:
        # every rendered argument first: nothing is written (or deleted) on a value that means nothing
        version = optional_int(self.version, "version")
        parts = optional_int(self.parts, "parts")
        cleanup = flag(self.cleanup, "cleanup")
        cleanup_dry_run = flag(self.cleanup_dry_run, "cleanup_dry_run", deletes=True)
        engine = choice(self.engine, "engine", ENGINES)
        actions_per_part = optional_positive_int(self.actions_per_part, "actions_per_part")
        submit_kwargs = mapping(self.spark_submit_kwargs, "spark_submit_kwargs")
        table = self.hook.get_table(self.table_uri)
        if engine == "spark":
            written, parts = self._spark_checkpoint(table, version, parts, actions_per_part, submit_kwargs)
        else:
            written = self.hook.checkpoint(self.table_uri, version=version, parts=parts)
        self.log.info("Wrote a %s checkpoint of %s at version %s (%s engine)",
                      f"{parts}-part" if parts and parts > 1 else "single-file", table.uri, written, engine)
        report = self.hook.cleanup_metadata(self.table_uri, dry_run=cleanup_dry_run) if cleanup else None
        if report is not None:
            self.log.info("Metadata cleanup of %s: %s", table.uri, _summary(report))
        cleanup_result = bounded_report(report, self.log, "metadata cleanup") if report is not None else None
        result = {"table_uri": table.uri, "version": int(written), "parts": parts or 1, "cleanup": cleanup_result}
        # a checkpoint adds no table version: the event says so, for DAGs scheduled on the table
        self.emit_asset_events(context, {"version": int(written), "checkpoint_version": int(written),
                                         "committed": False})
        return result

    def _spark_checkpoint(self, table: Any, version: int | None, parts: int | None, actions_per_part: int | None,
                          submit_kwargs: dict[str, Any]) -> tuple[int, int]:
        """Submit the checkpoint job and check its outcome: (version, parts) of the published checkpoint."""
        if version is None:
            version = table.latest_backfilled_version()
        # the gate and the argument checks, here, so a refusal is a typed error and nothing is submitted
        plan = plan_checkpoint(table, version, parts, **({"actions_per_part": actions_per_part}
                                                          if actions_per_part else {}))
        doc = {"table_uri": table.uri, "version": version, "parts": parts, "actions_per_part": actions_per_part}
        kwargs = dict(submit_kwargs)
        env = dict(kwargs.pop("env_vars", None) or {})
        secrets = job_secrets(self.hook, self.table_uri)
        if secrets:
            env[SECRETS_ENV] = json.dumps({"table": secrets})
        kwargs.setdefault("name", f"delta-checkpoint-{self.task_id}")
        hook = SparkSubmitHook(conn_id=self.spark_conn_id, application_args=[json.dumps(doc)], env_vars=env,
                               **kwargs)
        hook = resolve_master(hook, optional_value(self.master), self.spark_conn_id, self.log)
        self.log.info("Submitting the Spark checkpoint job for %s at version %s (%d sources, %d parts planned)",
                      table.uri, version, len(plan.sources), plan.parts)
        with DriverSecrets(self.log) as driver_secrets:   # never on the command line
            driver_secrets.route(hook)
            hook.submit(CHECKPOINT_APPLICATION)
        files = table.snapshot(version=version).segment.checkpoint_files
        if not files or files[0].version != version:
            raise InvalidTableStateError(f"the Spark checkpoint job finished but {table.uri} has no complete "
                                         f"checkpoint at version {version}; see the spark-submit output above")
        return version, files[0].num_parts or 1


def _summary(report: dict[str, Any]) -> str:
    return ", ".join(f"{k}={len(v) if isinstance(v, (list, tuple)) else v}" for k, v in report.items())
