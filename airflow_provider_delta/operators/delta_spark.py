"""``DeltaSparkApplicationOperator``: your PySpark application, reading and writing with Delta Spark.

The sibling of ``DeltaSparkSubmitOperator`` for applications that use Delta Spark
(``format("delta")``) themselves: Delta Spark commits, and this operator supplies
what makes the run reproducible and exactly-once, and checks the outcome:

* it pins the input version before submitting (``input_version``, or the version as
  of ``input_timestamp``, or the one a ``DeltaTimeTravelSnapshotOperator`` manifest
  names, or the latest), for the application's ``versionAsOf``;
* it computes the exactly-once pair ``(app_id, app_version)`` for Delta Spark's
  idempotent writes (``txnAppId`` / ``txnVersion``) and does not submit at all when
  the output table already records it;
* after the application, the output table must record the pair: the version of the
  commit holding it is the task's XCom ``return_value`` and goes into the asset events
  (unless another run committed the pair meanwhile: then Delta Spark skipped this run's
  write and nothing is announced). An application that made no commit at all (a DELETE
  that matched nothing) succeeds with ``None``. Any other data-changing commit to the output
  while the application ran fails the task (:class:`CommitOutsidePairError`, no retry) unless
  it names another origin (run marker or ``commitInfo.job``): one made without the pair, or
  one whose origin the log cannot tell. An application that made a second Delta write, refused by
  Delta (the first used the pair up), fails the task without retry as well
  (:class:`SecondDeltaWriteError`): a retry would find the pair and announce the output without it.

spark-submit runs :func:`airflow_provider_delta.spark.delta_job.run_application`, which runs
``application`` and sets ``txnVersion`` on the session it creates, so the pair is in the
application's session only; ``SparkConf`` has the app id without a version, and a Delta write
in any other session (``spark.newSession()``) fails instead of being skipped. In cluster deploy
modes the application goes to the driver with ``files``.

Incremental jobs (``input_changes=True``) read "what changed since the last run": the
operator pins the input version, takes the last version this job processed from the
output table's ``txn(app_id)`` record (Delta Spark writes it with the output, so it is
durable and exact), and hands the application the range in between for
``readChangeFeed`` (``startingVersion`` / ``endingVersion``); the pinned version is the
new ``txnVersion``. A retry after a commit finds nothing left and submits nothing; a
retry after a failure reads the same range again.

The application gets these values from
:func:`airflow_provider_delta.spark.delta_job.delta_job_context` (one
``--delta-job-context=<JSON>`` argument, and ``DELTA_JOB_*`` environment variables).

Output tables whose commits are coordinated (managed commits, catalog-managed
tables) are refused before submitting: Delta Spark does not know their commit
owner and must not write around it. ``DeltaSparkSubmitOperator`` commits to them.

Delta Spark itself comes from you: ``packages="io.delta:delta-spark_<scala>:<version>"``,
``jars=...`` or your cluster's classpath. The Delta SQL extension and catalog are set
in ``conf`` unless you set them (or pass ``delta_sql_conf=False``).
"""
from __future__ import annotations

import json
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator, Sequence

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
from airflow.providers.common.compat.sdk import AirflowFailException

from ..hooks.manifest import read_manifest
from ..log import CommitFailedError, InvalidArgumentError, TableNotFoundError, UnsupportedFeatureError
from ..spark import exactly_once
from ..spark import delta_job
from ..spark.delta_job import APPLICATION_ARG, CONTEXT_ARG, ENV_HADOOP_CONF, ENV_VARS, DeltaJobContext
from ..spark.uris import spark_uri
from ..hooks.arguments import (NOT_GIVEN, DeltaArgumentError, flag, input_manifest, is_template, manifest_argument,
                               optional_value, version_or_timestamp)
from .base import DeltaTaskMixin, job_info
from ..hooks.undone_by_restore import refuse_undone_pair
from .spark_base import (LocalSparkMixin, committed_pair_id, StopDriverOnKillMixin, incremental_range,
                         report_commit, resolve_app,
                         s3a_job_conf)

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context

    from ..log import DeltaTable, Snapshot

__all__ = ["DeltaSparkApplicationOperator", "CoordinatedCommitsError", "CommitOutsidePairError",
           "SecondDeltaWriteError", "DELTA_SQL_CONF"]

#: Spark settings that turn Delta Spark on in a session (set unless the user set them)
DELTA_SQL_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


class CoordinatedCommitsError(UnsupportedFeatureError):
    """The output table's commits go through a commit owner or catalog, which Delta Spark cannot use."""


class CommitOutsidePairError(CommitFailedError, AirflowFailException):
    """While the application ran, the output got data-changing commits the exactly-once pair does not
    account for (this try's, or of unknown origin). Fails the task without retrying: a retry that
    runs the application again would write that data twice if it was the application's."""


class SecondDeltaWriteError(CommitFailedError, AirflowFailException):
    """The application wrote the output with the exactly-once pair, then made another Delta write, which
    Delta refused (the pair was used up): that write did not happen. Fails the task without retrying: a
    retry finds the pair committed and would announce the output without that write's rows."""


class DeltaSparkApplicationOperator(DeltaTaskMixin, StopDriverOnKillMixin, LocalSparkMixin, SparkSubmitOperator):
    """Run a PySpark application that reads a pinned Delta version and appends exactly once with Delta Spark.

    :param application: your PySpark program (``.py``); it calls ``delta_job_context()``. A path
        where spark-submit runs: spark-submit runs the operator's entry
        (:func:`~airflow_provider_delta.spark.delta_job.run_application`), which runs it (cluster
        deploy modes: it is added to ``files``, and found in the driver's working directory)
    :param output_table_uri: the table the application writes (absolute, or relative to the delta
        connection's base URI); it must not use managed commits
    :param input_table_uri: table the application reads; pinned at ``input_version``, or at the version as
        of ``input_timestamp``, or at its latest version when the task runs
    :param input_version: the input version (templated)
    :param input_timestamp: or a time (epoch ms, datetime or ISO string, e.g. ``{{ data_interval_end }}``):
        the newest version committed at or before it (the latest one if the table has not changed since)
    :param input_manifest_uri: or a manifest written by ``DeltaTimeTravelSnapshotOperator``
        (its table and version; one that renders to ``"None"`` fails the task:
        :func:`~..hooks.arguments.input_manifest`)
    :param app_id: Delta Spark ``txnAppId`` (default ``<dag_id>:<task_id>[<map_index>]@<run key>``:
        ``[<map_index>]`` only when mapped; the run key is the data interval, else the logical date, else
        the run id; see :mod:`~airflow_provider_delta.hooks.run_identity`). One given is used as it is
    :param app_version: Delta Spark ``txnVersion`` (templated; default: the data interval's end, else the
        logical date, else ``run_after``, in epoch seconds)
    :param delta_conn_id: ``delta`` connection for both tables (this operator's own reads; for
        tables on S3 its credentials and endpoint also go to the application as per-bucket S3A
        settings in ``DELTA_JOB_HADOOP_CONF``, applied by ``apply_hadoop_conf(spark)``)
    :param delta_sql_conf: set ``spark.sql.extensions`` / ``spark.sql.catalog.spark_catalog`` to
        Delta's in ``conf`` where not set already (default True)
    :param master: Spark master; overrides the Spark connection's (default: the connection's,
        or ``local[*]`` when ``conn_id`` is not defined)
    :param conn_id: Spark connection (as for ``SparkSubmitOperator``)
    :param name: the Spark application's name (default ``delta-<task_id>``)
    :param input_changes: incremental mode: the input is the change feed of the input table from the
        version after the one this job last committed (the output's ``txn(app_id)``) to the pinned
        version, which becomes ``app_version`` (so ``app_version`` must not be given); ``app_id`` is then the
        same for every run (default ``<dag_id>:<task_id>[<map_index>]``, no run key). A bool or
        true/false/1/0/yes/no (default False)
    :param initial_version: incremental mode: where the first run starts (default 0)

    Other keywords go to ``SparkSubmitOperator`` (``jars``, ``packages``, ``conf``, ``py_files``,
    ``application_args``...). Returns (XCom ``return_value``) the version of the commit holding
    this run's output; XCom ``commit`` holds ``{"version", "committed", "table_uri", "app_id",
    "app_version", "input_table_uri", "input_version"}`` (``committed`` is False, and the input
    None, when an earlier try had already committed and nothing was submitted); incremental runs
    add ``input_starting_version``.
    """

    template_fields: Sequence[str] = tuple(SparkSubmitOperator.template_fields) + (
        "output_table_uri", "input_table_uri", "input_version", "input_timestamp", "input_manifest_uri",
        "app_id", "app_version", "delta_conn_id", "master",
        "input_changes", "initial_version", "delta_sql_conf")
    ui_color = "#00add4"

    def __init__(self, *, application: str, output_table_uri: str, input_table_uri: str | None = None,
                 input_version: int | str | None = None, input_timestamp: Any = None,
                 input_manifest_uri: Any = NOT_GIVEN, app_id: str | None = None,
                 app_version: int | str | None = None, delta_conn_id: str | None = None,
                 delta_sql_conf: bool = True, master: str | None = None, conn_id: str = "spark_default",
                 name: str | None = None, input_changes: bool = False, initial_version: int = 0,
                 **kwargs: Any) -> None:
        input_manifest_uri, reads_manifest = manifest_argument(input_manifest_uri, input_table_uri)
        if not is_template(input_changes) and flag(input_changes, "input_changes") and app_version is not None:
            raise InvalidArgumentError("input_changes=True uses the pinned input version as app_version: "
                                       "do not pass app_version")
        super().__init__(application=application, conn_id=conn_id,
                         name=name or f"delta-{kwargs.get('task_id', 'spark')}", **kwargs)
        self.output_table_uri = output_table_uri
        self.input_table_uri = input_table_uri
        self.input_version = input_version
        self.input_timestamp = input_timestamp
        self.input_manifest_uri = input_manifest_uri
        self.reads_manifest = reads_manifest   # then a manifest that renders to None is an error
        self.app_id = app_id
        self.app_version = app_version
        self.delta_conn_id = delta_conn_id
        self.delta_sql_conf = delta_sql_conf
        self.master = master
        self.input_changes = input_changes     # a flag: parsed when the task runs (templated)
        self.initial_version = initial_version

    # DeltaTaskMixin works on ``table_uri``: here, the table the application writes.
    @property
    def table_uri(self) -> str:  # type: ignore[override]
        return self.output_table_uri

    # ------------------------------------------------------------------ inputs
    def resolve_input(self) -> tuple[str | None, int | None]:
        """(input table URI, pinned version), or (None, None) for an application without input.

        Refuses contradicting arguments, a version the table does not have yet, and a version
        of a managed-commit input table that is not backfilled (Delta Spark reads only
        ``_delta_log``, not the commit owner's tail).
        """
        manifest = input_manifest(self.input_manifest_uri, self.reads_manifest)
        table_uri = optional_value(self.input_table_uri)
        version, timestamp = version_or_timestamp(self.input_version, self.input_timestamp,
                                                  version_name="input_version", timestamp_name="input_timestamp")
        if manifest is not None and table_uri is not None:
            raise DeltaArgumentError("pass input_manifest_uri or input_table_uri, not both")
        if manifest is not None:
            if version is not None or timestamp is not None:
                raise DeltaArgumentError("input_manifest_uri pins the version itself: do not pass "
                                         "input_version or input_timestamp with it")
            manifest = str(manifest)
            doc = read_manifest(manifest, self.hook.get_config(manifest).storage_options_for(manifest))
            table_uri, version = doc.get("table_uri"), doc.get("version")
            if not isinstance(table_uri, str) or isinstance(version, bool) or not isinstance(version, int):
                raise DeltaArgumentError(f"the manifest {manifest} names no table_uri and version")
        if table_uri is None:
            if version is not None or timestamp is not None:
                raise DeltaArgumentError("input_version and input_timestamp need input_table_uri")
            return None, None
        table_uri = self.hook.resolve_uri(str(table_uri))
        table = self.hook.get_table(table_uri)
        if version is None:
            version = self.hook.resolve_version(table_uri, timestamp=timestamp, allow_after_latest=True)
        latest = table.latest_version()
        if version > latest:
            raise InvalidArgumentError(f"input_version {version} of {table.uri} does not exist yet "
                                       f"(latest: {latest})")
        snap = table.snapshot()
        if snap.commits_are_coordinated:
            backfilled = table.latest_backfilled_version()
            if backfilled is None or version > backfilled:
                raise InvalidArgumentError(
                    f"version {version} of the managed-commit table {table.uri} is not backfilled yet "
                    f"(backfilled up to {backfilled}); Delta Spark reads only _delta_log: backfill first "
                    "(DeltaBackfillOperator) or use a commit owner with backfill_batch_size=1")
        return table_uri, version

    def _refuse_coordinated(self, table: "DeltaTable", snap: "Snapshot") -> None:
        features = sorted(set(snap.protocol.writer_features or ()) | set(snap.protocol.reader_features or ()))
        raise CoordinatedCommitsError(
            f"{table.uri} uses managed commits (a commit owner or catalog ratifies its commits; table features "
            f"{features}): Delta Spark does not know its commit owner and must not write around it, so "
            f"{type(self).__name__} does not submit. Commit to it from Spark with DeltaSparkSubmitOperator "
            "(driver-side commit through the commit owner)")

    def build_context(self, context: "Context", app: tuple[str, int] | None = None) -> DeltaJobContext:
        """The application's context: pinned input, output and txn pair (``app``, else resolved), Spark URIs."""
        app_id, app_version = app or resolve_app(self.app_id, self.app_version, context, self)
        in_uri, in_version = self.resolve_input()
        return DeltaJobContext(
            input_table_uri=spark_uri(in_uri) if in_uri is not None else None, input_version=in_version,
            output_table_uri=spark_uri(self.hook.resolve_uri(self.output_table_uri)),
            txn_app_id=app_id, txn_version=app_version, job=job_info(context))

    def spark_conf(self, ctx: DeltaJobContext | None = None) -> dict[str, Any]:
        """``conf`` with the Delta SQL extension and catalog where the user did not set them and, for
        ``ctx``, the exactly-once settings for ``SparkConf`` (:attr:`DeltaJobContext.submit_conf`:
        the app id, which overrides the user's, without ``txnVersion``, and the run marker in
        ``userMetadata`` unless set). A ``txnVersion`` of the user's is dropped: in ``SparkConf``
        every new session would get it."""
        conf = dict(self.conf or {})
        if self.delta_sql_conf:
            for key, value in DELTA_SQL_CONF.items():
                conf.setdefault(key, value)
        if ctx is not None:
            submit = ctx.submit_conf
            user_metadata = submit.pop(delta_job.USER_METADATA_CONF)
            conf.pop(delta_job.TXN_VERSION_CONF, None)
            conf.update(submit)
            conf.setdefault(delta_job.USER_METADATA_CONF, user_metadata)
        return conf

    @contextmanager
    def _submitting_entry(self) -> Iterator[None]:
        """For the spark-submit: the entry (:func:`~..spark.delta_job.run_application`) as the
        application, the user's application as its first argument (and in ``files``, which ships
        it in cluster deploy modes); the user's values are back afterwards."""
        application, args, files = self.application, self.application_args, self.files
        shipped = [f for f in str(files or "").split(",") if f]
        if application not in shipped:
            shipped.append(application)
        self.application = delta_job.__file__
        self.application_args = [f"{APPLICATION_ARG}={application}", *(args or [])]
        self.files = ",".join(shipped)
        try:
            yield
        finally:
            self.application, self.application_args, self.files = application, args, files

    # --------------------------------------------------------------- execution
    def execute(self, context: "Context") -> int | None:
        self.input_changes = flag(self.input_changes, "input_changes")
        self.delta_sql_conf = flag(self.delta_sql_conf, "delta_sql_conf")
        table = self.hook.get_table(self.output_table_uri)
        try:
            snap = table.snapshot()
        except TableNotFoundError:
            snap = None                       # the application creates it
        if snap is not None and snap.commits_are_coordinated:
            self._refuse_coordinated(table, snap)
        if self.input_changes:
            return self._execute_incremental(context, table)
        app_id, app_version = resolve_app(self.app_id, self.app_version, context, self)
        app_id = committed_pair_id(table, app_id, app_version, context, self)
        recorded = exactly_once.skip_basis(table, app_id, app_version)
        if recorded is not None:
            refuse_undone_pair(table, app_id, app_version, recorded=recorded)
            self.log.info("%s already holds txn version %s of %r: not submitting the Spark application",
                          table.uri, app_version, app_id)
            return report_commit(self, context, table, app_id, app_version, committed=False,
                                 anonymous_commits_of_run_pair=True, input_table_uri=None, input_version=None)
        return self._submit(context, table, self.build_context(context, (app_id, app_version)))

    def _execute_incremental(self, context: "Context", table: "DeltaTable") -> int | None:
        """Submit for the changes between the last processed version and the pinned one (if any)."""
        in_uri, pinned = self.resolve_input()
        if in_uri is None or pinned is None:
            raise DeltaArgumentError("input_changes=True needs an input: input_table_uri or input_manifest_uri")
        rng = incremental_range(self, context, in_uri, pinned)
        app_id = rng.app_id
        if rng.empty:
            self.log.info("%s already holds the changes of %s up to version %s for %r (pinned: %s): "
                          "nothing to process, not submitting", table.uri, in_uri, rng.processed, app_id, pinned)
            # a position resumed from a pre-0.2.0 id is held under that id: report the commit holding it
            return report_commit(self, context, table, rng.resumed_from or app_id, rng.processed if rng.processed is not None else pinned,
                                 committed=False, input_table_uri=None, input_version=None,
                                 input_starting_version=None)
        ctx = DeltaJobContext(
            input_table_uri=spark_uri(in_uri), input_version=rng.end, input_starting_version=rng.start,
            output_table_uri=spark_uri(self.hook.resolve_uri(self.output_table_uri)),
            txn_app_id=app_id, txn_version=rng.end, job=job_info(context))
        return self._submit(context, table, ctx)

    def _submit(self, context: "Context", table: "DeltaTable", ctx: DeltaJobContext) -> int | None:
        """Run the application with ``ctx``; then the output must record its txn pair."""
        app_id, app_version = ctx.txn_app_id, ctx.txn_version
        self.log.info("Submitting %s: input %s at version %s, output %s with txnAppId=%r txnVersion=%s",
                      self.application, ctx.input_table_uri, ctx.input_version, ctx.output_table_uri,
                      ctx.txn_app_id, ctx.txn_version)
        user_args = [str(a) for a in (self.application_args or [])      # not our own of a previous execute
                     if not str(a).startswith((CONTEXT_ARG + "=", APPLICATION_ARG + "="))]
        self.application_args = user_args + [ctx.to_argument()]
        env = {k: v for k, v in (self.env_vars or {}).items() if k not in ENV_VARS and k != ENV_HADOOP_CONF}
        env.update(ctx.to_env())
        hadoop = s3a_job_conf(self.hook, [ctx.input_table_uri, ctx.output_table_uri])
        if hadoop:      # the connection's S3 credentials, for the application's apply_hadoop_conf(spark)
            env[ENV_HADOOP_CONF] = json.dumps(hadoop)
        self.env_vars = env
        self.conf = self.spark_conf(ctx)
        self._hook = None                     # built from the settings above
        before = _latest_version(table)
        with self._submitting_entry():
            try:
                super().execute(context)  # the secrets routed for the master by LocalSparkMixin._get_hook
            except Exception as e:
                self._refuse_retry_after_second_write(table, ctx, e)
                raise
            finally:
                self._close_driver_secrets()
        self._check_commits_outside_pair(context, table, ctx, before)
        more = {"input_starting_version": ctx.input_starting_version} if ctx.incremental else {}
        if not exactly_once.already_committed(table, app_id, app_version):
            return self._no_commit(context, table, ctx, more)
        version = exactly_once.find_txn_commit(table, app_id, app_version)
        origin = exactly_once.commit_origin(table, version) if version is not None else None
        committed = not origin or _same_run_and_try(origin, job_info(context))
        if not committed:        # another run committed the same pair meanwhile: Delta Spark skipped ours
            self.log.info("version %s of %s holds txnAppId=%r txnVersion=%s, committed by another run (%s) while "
                          "this application ran: Delta Spark skipped this run's write", version, table.uri,
                          app_id, app_version, origin)
        return report_commit(self, context, table, app_id, app_version, committed=committed,
                             input_table_uri=ctx.input_table_uri, input_version=ctx.input_version, **more)

    def _refuse_retry_after_second_write(self, table: "DeltaTable", ctx: DeltaJobContext, error: Exception) -> None:
        """The application failed: when the entry says a Delta write was refused after the pair was used
        up (its exit code :data:`~..spark.delta_job.EXIT_SECOND_WRITE_REFUSED`; local and client mode,
        where spark-submit exits with the driver's code) and the output records the pair, raise
        :class:`SecondDeltaWriteError`. Otherwise the error stands (a retry runs the application again,
        or finds the pair committed by a try that died after its one write and announces it)."""
        process = getattr(getattr(self, "_hook", None), "_submit_sp", None)
        code = getattr(process, "returncode", None)
        if code != delta_job.EXIT_SECOND_WRITE_REFUSED:
            return
        if not exactly_once.already_committed(table, ctx.txn_app_id, ctx.txn_version):
            self.log.warning("the application's second Delta write was refused, and %s does not record "
                             "txnAppId=%r txnVersion=%s: nothing of this try is in the output, a retry runs the "
                             "application again", table.uri, ctx.txn_app_id, ctx.txn_version)
            return
        version = exactly_once.find_txn_commit(table, ctx.txn_app_id, ctx.txn_version)
        raise SecondDeltaWriteError(
            f"the Spark application wrote {table.uri} with txnAppId={ctx.txn_app_id!r} txnVersion={ctx.txn_version} "
            f"(version {version}), then made another Delta write (to the output or another table, in its "
            "session or a new one), which Delta refused (the first write used the pair up): that write did not "
            "happen. The task fails without retrying: a retry would find the pair committed, not run the "
            "application, and announce the output without that write's rows. Make the application make one "
            f"Delta write (one DataFrame, one write); then either write the refused write's rows yourself (version "
            f"{version} holds the first write's), or restore the output to the version before {version} and run the "
            "fixed application with a higher app_version (a version up to the recorded one counts as committed): "
            "a restore keeps the pair, so clearing the task alone "
            "would not run the application (it fails: DeltaPairUndoneByRestoreError) (docs: spark-failures)") from error

    def _check_commits_outside_pair(self, context: "Context", table: "DeltaTable", ctx: DeltaJobContext,
                                    before: int) -> None:
        """After the application: every data-changing commit to the output since ``before`` must be
        the one holding the pair, or name an origin that is not this try (another run, try or task).

        This try's commits are known by the run marker only while the application keeps it; a
        write with its own ``userMetadata`` (and its own ``txnAppId``/``txnVersion``, which Delta
        Spark lets a write pass) leaves a commit that names nobody. The log cannot tell it from a
        concurrent writer that names nobody either, so both fail the task
        (:class:`CommitOutsidePairError`, no retry: if it was the application's, running it again
        would write it twice). The price is a false alarm when such a writer changes the output
        while the application runs; docs/spark-failures.md says what to do then.
        """
        mine = job_info(context)
        found = exactly_once.commits_outside_pair(table, before, ctx.txn_app_id, ctx.txn_version,
                                                  lambda origin: _same_run_and_try(origin, mine))
        if not found:
            return
        ours = [v for v, marked in found if marked]
        unknown = [v for v, marked in found if not marked]
        parts = []
        if ours:
            parts.append(f"the Spark application committed version {', '.join(map(str, ours))} of {table.uri} "
                         f"without txnAppId={ctx.txn_app_id!r} txnVersion={ctx.txn_version} (its run marker "
                         "says this try made it)")
        if unknown:
            parts.append(f"version {', '.join(map(str, unknown))} of {table.uri} changed data while the "
                         f"application ran, without txnAppId={ctx.txn_app_id!r} txnVersion={ctx.txn_version} "
                         "and without a run marker: the application's own write (its own txnAppId/txnVersion "
                         "or userMetadata options), or another writer's; the log cannot tell which")
        raise CommitOutsidePairError(
            "; ".join(parts) + ". Written outside the exactly-once pair: the task fails without retrying, "
            "because running the application again would write it twice. Write the output once, from the "
            "application's session, with no txnAppId/txnVersion/userMetadata options of your own. If the "
            "commit is another writer's, clear the task to run it again (docs: spark-failures)")

    def _no_commit(self, context: "Context", table: "DeltaTable", ctx: DeltaJobContext,
                   more: dict[str, Any]) -> None:
        """The application exited 0, the output does not record the pair and
        :meth:`_check_commits_outside_pair` found no commit of this try: the application changed
        nothing (a DELETE or MERGE that matched no row commits nothing in Delta Spark, so the pair
        is not recorded either). The task succeeds with "no commit" (XCom ``commit`` has
        ``version`` None), announces nothing, and a retry or re-run runs the application again,
        which is safe because nothing was written.
        """
        self.log.warning("the Spark application finished without committing to %s (no commit of this try, "
                         "txnAppId=%r txnVersion=%s not recorded): nothing changed, no asset event. If the "
                         "application should have written, check the spark-submit output above",
                         table.uri, ctx.txn_app_id, ctx.txn_version)
        ti = context.get("ti")
        if ti is not None:
            ti.xcom_push(key="commit", value={
                "version": None, "committed": False, "table_uri": table.uri, "app_id": ctx.txn_app_id,
                "app_version": ctx.txn_version, "input_table_uri": ctx.input_table_uri,
                "input_version": ctx.input_version, **more})
        self.drop_asset_events(f"the application made no commit to {table.uri}")
        return None


def _latest_version(table: "DeltaTable") -> int:
    """The table's latest version, -1 when it does not exist yet."""
    try:
        return table.latest_version()
    except TableNotFoundError:
        return -1


def _same_run_and_try(origin: dict[str, Any], mine: dict[str, Any]) -> bool:
    """Whether a commit's recorded origin is this very try of this task run."""
    return all(origin.get(k) == mine[k] for k in ("dag_id", "task_id", "run_id", "try_number"))
