"""What the two Spark operators share: local mode, the exactly-once pair, reporting the commit.

``DeltaSparkSubmitOperator`` (our entry point commits on the driver) and
``DeltaSparkApplicationOperator`` (the user's application commits with Delta Spark)
both subclass the Spark provider's ``SparkSubmitOperator``, and both:

* run in local mode (``--master local[*]``, pyspark's bundled ``spark-submit`` when
  none is on PATH, the worker's Python as the driver's) when no Spark connection
  is defined, and hand the job its secrets by the route its master allows, never on the
  command line (:class:`LocalSparkMixin`, :mod:`.spark_secrets`);
* mark their commit with ``txn(app_id, app_version)``, defaulting to
  ``<dag_id>:<task_id>[<map_index>]@<data interval>`` and the interval's end (:func:`resolve_app`);
* report the version of the commit holding that pair in XCom and in the asset
  events of their outlets (:func:`report_commit`).
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from typing import TYPE_CHECKING, Any

from airflow.sdk.exceptions import AirflowNotFoundException

from ..hooks.run_identity import former_task_keys, run_app_id, run_app_version, task_key
from ..lineage import output_statistics
from ..hooks.undone_by_restore import DeltaPositionUndoneByRestoreError
from ..log import PositionUndoneByRestoreError
from ..spark import exactly_once
from ..spark.s3a import s3_bucket, s3a_bucket_conf
from ..hooks.arguments import optional_int, optional_value
from .base import named_another_task, same_task_run
from .pyspark_pair import require_matching_pyspark
from .spark_secrets import DriverSecrets

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context

    from ..log import ChangeRange, DeltaTable

LOCAL_MASTER = "local[*]"


def bundled_spark_submit() -> str | None:
    """pyspark's own ``bin/spark-submit`` (found without importing pyspark), if installed."""
    spec = importlib.util.find_spec("pyspark")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = os.path.join(list(spec.submodule_search_locations)[0], "bin", "spark-submit")
    return path if os.access(path, os.X_OK) else None


def default_app_version(context: "Context") -> int:
    """The default exactly-once version of a run (see :mod:`~..hooks.run_identity`)."""
    return run_app_version(context)


def resolve_app(app_id: Any, app_version: Any, context: "Context", task: Any) -> tuple[str, int]:
    """The exactly-once pair of this task instance from the (rendered) arguments and the context.

    Default ``app_id``: ``<dag_id>:<task_id>[<map_index>]@<data interval>`` and default
    ``app_version``: the interval's end, so every interval commits once, in any order
    (:mod:`~..hooks.run_identity`). An ``app_id`` given explicitly is used as it is.
    """
    app_id = optional_value(app_id)
    if app_id is None:
        app_id = run_app_id(task_app_id(context, task), context)
    version = optional_int(app_version, "app_version")
    if version is None:
        version = run_app_version(context)
    app_id, version = exactly_once.check_app(str(app_id), version)
    return app_id, version  # type: ignore[return-value]


def committed_pair_id(table: "DeltaTable", app_id: str, app_version: int, context: "Context", task: Any) -> str:
    """The id under which ``table`` holds this run's pair: ``app_id``, or, for the default id only, the
    run's id in a spelling of releases before 0.2.0 (``<dag>.<task>@<run key>``,
    :func:`~..hooks.run_identity.former_task_keys`) when the table holds the pair under that one.

    A run committed by an older release and cleared (or retried) after the upgrade must find its
    commit and skip, not write its interval a second time under the new id. An explicit ``app_id``
    is used as given."""
    if optional_value(task.app_id) is not None or exactly_once.already_committed(table, app_id, app_version):
        return app_id
    for former in former_task_keys(context, task):
        former_id = run_app_id(former, context)
        if exactly_once.already_committed(table, former_id, app_version):
            other = _another_tasks_commit(table, former_id, app_version, context)
            if other is not None:
                task.log.warning("%s holds version %s of %r, the id this task had before 0.2.0, but its commit was "
                                 "made by %s.%s: another task's, not taken as this run's", table.uri, app_version,
                                 former_id, other.get("dag_id"), other.get("task_id"))
                continue
            task.log.info("%s holds version %s of this run under its id before 0.2.0, %r (now %r): taking that "
                          "commit as this run's", table.uri, app_version, former_id, app_id)
            return former_id
    return app_id


def _another_tasks_commit(table: "DeltaTable", app_id: str, version: int, context: "Context") -> dict[str, Any] | None:
    """The recorded origin of the commit holding ``txn(app_id, version)`` when it names another DAG or task
    than this one (dotted ids before 0.2.0 were shared: DAG ``a.b`` task ``c``, DAG ``a`` task ``b.c``);
    None when it names this task, none at all, or the commit is not found."""
    found = exactly_once.find_txn_commit(table, app_id, version)
    origin = exactly_once.commit_origin(table, found) if found is not None else None
    return origin if named_another_task(origin, context) else None


def task_app_id(context: "Context", task: Any) -> str:
    """``<dag_id>:<task_id>``, plus ``[<map_index>]`` for a mapped task."""
    return task_key(context, task)  # type: ignore[return-value]


def resolve_incremental_app(app_id: Any, pinned: int, context: "Context", task: Any) -> tuple[str, int]:
    """The exactly-once pair of an incremental run: the consumer's id and the pinned input version.

    The id is the same for every run (``app_id`` as given, else :func:`task_app_id`, without a
    run key): the output's ``txn`` under it is the consumer's position, which each run reads and
    moves to the version it pinned.
    """
    app_id = optional_value(app_id)
    pair = exactly_once.check_app(str(app_id) if app_id is not None else task_app_id(context, task), pinned)
    return pair  # type: ignore[return-value]


def _own_former_ids(task: Any, context: "Context") -> tuple[str, ...]:
    """This task's ids before 0.2.0 whose position in the output was not recorded by another task: dotted
    ids were shared (DAG ``a.b`` task ``c`` and DAG ``a`` task ``b.c``), and the commit holding a position
    names its task (``commitInfo.job``); one naming no task is taken as this task's."""
    former = former_task_keys(context, task)
    if not former:
        return ()
    output = task.hook.get_table(task.output_table_uri)
    own = []
    for former_id in former:
        position = exactly_once.committed_txn_version(output, former_id)
        other = _another_tasks_commit(output, former_id, position, context) if position is not None else None
        if other is not None:
            task.log.warning("%s holds a position under %r, the id this task had before 0.2.0, recorded by %s.%s: "
                             "another task's, not resumed from", output.uri, former_id, other.get("dag_id"),
                             other.get("task_id"))
            continue
        own.append(former_id)
    return tuple(own)


def incremental_range(task: Any, context: "Context", input_uri: str, pinned: int) -> "ChangeRange":
    """The input versions an incremental run of ``task`` processes: after its position in the output
    (the output's ``txn`` under :func:`resolve_incremental_app`'s id) up to ``pinned``.

    With the default id, a consumer that has no position under it yet continues from the one it
    recorded under its id of releases before 0.2.0 (``<dag_id>.<task_id>``,
    :func:`~..hooks.run_identity.former_task_keys`) instead of starting again at ``initial_version``;
    it commits under the new id. An ``app_id`` given explicitly is used as it is. A position whose commit a
    later RESTORE of the output undid fails the task (:class:`DeltaPositionUndoneByRestoreError`).
    """
    app_id, _ = resolve_incremental_app(task.app_id, pinned, context, task)
    former = _own_former_ids(task, context) if optional_value(task.app_id) is None else ()
    try:
        rng = task.hook.pending_changes(input_uri, task.output_table_uri, app_id, pinned,
                                        optional_int(task.initial_version, "initial_version") or 0, former)
    except PositionUndoneByRestoreError as e:    # a retry finds the same position: fail, no retry
        raise DeltaPositionUndoneByRestoreError(
            str(e), version=e.version, restore_version=e.restore_version, restored_version=e.restored_version,
            app_id=e.app_id, position=e.position, restart_from=e.restart_from) from None
    if rng.resumed_from is not None:
        task.log.info("%s holds no position of %r yet: continuing from version %s recorded under %r (this "
                      "task's id before 0.2.0); the commit records the position under %r", task.output_table_uri,
                      app_id, rng.processed, rng.resumed_from, app_id)
    return rng


def report_commit(task: Any, context: "Context", table: "DeltaTable", app_id: str, app_version: int,
                  committed: bool, anonymous_commits_of_run_pair: bool = False, **more: Any) -> int | None:
    """Find the commit holding ``txn(app_id, app_version)``; push XCom ``commit``; fill the asset events.

    Returns that commit's version (None when the table holds a newer version of ``app_id``
    instead, which is logged). XCom ``commit`` is ``{"version", "committed", "table_uri",
    "app_id", "app_version"}`` plus ``more``; the asset events get the same without the URI.

    A try that committed nothing (``committed=False``) announces the commit all the same when
    that commit was made by an earlier try of this same task run (its ``commitInfo`` says so,
    :func:`~..spark.exactly_once.commit_origin`), or, with ``anonymous_commits_of_run_pair``
    (Delta Spark applications, which can replace the run marker in ``userMetadata``), when its
    ``commitInfo`` names no run and the pair is this run's own default pair (the txn pair is the
    run's identity; the marker only a hint): that try died
    after committing and before it could report, so no asset event was recorded for the data.
    The event then carries the payload of a fresh commit (``committed`` true, the input recorded
    with the commit when known). A task run cleared after it succeeded finds its commit the same
    way, but its earlier try's asset event for that version is there: it stays silent
    (:meth:`~.base.DeltaTaskMixin.announce_earlier_try_commit`). Data committed by another run
    stays silent too: downstream DAGs must not start again for it.
    """
    version = exactly_once.find_txn_commit(table, app_id, app_version)
    current = exactly_once.committed_txn_version(table, app_id)
    if version is None and current is not None and current > app_version:
        task.log.warning("%s holds version %s of %r, newer than this run's %s: this run was skipped. If "
                         "runs are processed out of order (backfills), give each run its own app_id",
                         table.uri, current, app_id, app_version)
    ours = committed
    earlier = None          # what the earlier try of this task run that made the commit was
    if not committed and version is not None:
        origin = exactly_once.commit_origin(table, version)
        if same_task_run(origin, context):
            ours = True
            more = {**more, **{k: origin[k] for k in more if k in origin}}   # the input it really read
            earlier = (f"version {version} of {table.uri}, this task run's commit made by try "
                       f"{origin.get('try_number')}")  # type: ignore[union-attr]
        elif origin is None and anonymous_commits_of_run_pair and _is_run_pair(app_id, app_version, context, task):
            ours = True
            earlier = (f"version {version} of {table.uri}, holding this run's own txn pair ({app_id!r}, {app_version}) "
                       "but naming no run (its userMetadata was replaced)")
    info = {"version": version, "committed": committed, "table_uri": table.uri,
            "app_id": app_id, "app_version": app_version, **more}
    ti = context.get("ti")
    if ti is not None:
        ti.xcom_push(key="commit", value=info)
    inputs = [(more["input_table_uri"], more.get("input_version"))] if more.get("input_table_uri") else []
    task.record_lineage(version, inputs, output_statistics(table, version) if ours and version is not None
                        else None)
    if ours and earlier is not None:      # a try that died before reporting, or a cleared run: which one?
        task.announce_earlier_try_commit(context, {**{k: v for k, v in info.items() if k != "table_uri"},
                                                   "committed": True}, earlier)
    elif ours:
        task.emit_asset_events(context, {**{k: v for k, v in info.items() if k != "table_uri"}, "committed": True})
    else:   # the data was there before this run: downstream DAGs must not start again for it
        task.drop_asset_events(f"{table.uri} already held version {app_version} of {app_id!r}")
    return version


def _is_run_pair(app_id: str, app_version: int, context: "Context", task: Any) -> bool:
    """Whether ``(app_id, app_version)`` is the pair that identifies this task run's interval (the
    default of :func:`resolve_app`): a commit holding it can only be this run's, whatever its
    ``commitInfo`` says. A pair given by the user may be shared by runs, so it identifies none."""
    return app_id == run_app_id(task_app_id(context, task), context) and app_version == run_app_version(context)


def job_secrets(hook: Any, uri: str) -> dict[str, Any]:
    """Storage options, commit owner and catalog of the delta connection for ``uri``: a job's secrets.

    They travel in the job's environment (``SECRETS_ENV``), never on its command line: the operator
    puts them in ``env_vars`` and :class:`~.spark_secrets.DriverSecrets` routes them for the master.
    """
    cfg = hook.get_config(uri)
    resolved = cfg.resolve(uri)
    side: dict[str, Any] = {}
    options = cfg.storage_options_for(resolved)
    if options:
        side["storage_options"] = options
    if cfg.commit_owner is not None:
        side["commit_owner"] = {"type": cfg.commit_owner.type, "url": cfg.commit_owner.url,
                                "options": dict(cfg.commit_owner.options)}
    if cfg.single_writer:
        side["single_writer"] = True
    if cfg.catalog_url is not None:     # a job staging into a multi-table transaction opens the catalog
        side["catalog"] = {"url": cfg.catalog_url}
    return side


def s3a_job_conf(hook: Any, uris: "list[str | None]") -> dict[str, str]:
    """Per-bucket S3A settings (``fs.s3a.bucket.<b>.*``) for the S3 tables among ``uris``, from the
    delta connection's storage options; ``uris`` may be in fsspec (``s3://``) or Spark (``s3a://``) form.

    They hold credentials: they travel in the job's environment, never in ``conf``.
    """
    conf: dict[str, str] = {}
    for uri in uris:
        if uri is None or s3_bucket(uri) is None:
            continue
        fsspec_uri = "s3://" + str(uri).split("://", 1)[1]
        conf.update(s3a_bucket_conf(fsspec_uri, job_secrets(hook, fsspec_uri).get("storage_options")))
    return conf


class StopDriverOnKillMixin:
    """``on_kill`` of a ``SparkSubmitOperator`` that also stops what spark-submit started.

    In local and client mode the PySpark driver is a child process of the spark-submit JVM;
    the Spark provider's ``on_kill`` ends only the JVM, and the orphaned Python driver would
    go on and commit after the task was killed. The driver and the JVM's other children are
    killed first, and only when they are gone the provider's ``on_kill`` ends the JVM (and,
    in YARN client mode, runs ``yarn application -kill``, which takes seconds): killed the
    other way round, the driver would be re-parented, out of reach, and free to commit
    during those seconds. Put it before ``SparkSubmitOperator`` in the bases.
    """

    _hook: Any
    log: Any

    def on_kill(self) -> None:
        process = getattr(getattr(self, "_hook", None), "_submit_sp", None)
        try:
            if process is not None and process.poll() is None:
                stop_processes(descendants(process.pid), self.log)
        finally:
            super().on_kill()  # type: ignore[misc]


def descendants(pid: int) -> list[Any]:
    """The processes started (directly or not) by ``pid``, as psutil processes (none if it is gone)."""
    import psutil   # only a killed task needs it
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.Error:
        return []


def stop_processes(processes: list[Any], log: Any, timeout_s: float = 10.0) -> None:
    """SIGKILL ``processes`` (those still alive) and wait for them to be gone."""
    import psutil   # only a killed task needs it
    for p in processes:
        try:
            log.info("Killing process %s (%s) started by spark-submit", p.pid, " ".join(p.cmdline()[:3]))
            p.kill()
        except psutil.Error:
            continue
    psutil.wait_procs(processes, timeout=timeout_s)


class LocalSparkMixin:
    """``_get_hook`` of a ``SparkSubmitOperator`` that falls back to local mode and routes the secrets.

    Expects ``master`` (an optional template field overriding the connection's) and the
    operator's ``_conn_id``. The job's secrets in ``env_vars`` (:data:`~.spark_secrets.SECRET_ENV_NAMES`)
    are moved to the route the master allows (:class:`~.spark_secrets.DriverSecrets`); the
    operator calls :meth:`_close_driver_secrets` when the submission has ended. Put it before
    ``SparkSubmitOperator`` in the bases.
    """

    master: str | None
    _conn_id: str
    log: Any
    _driver_secrets: DriverSecrets | None = None

    def _get_hook(self) -> Any:
        hook = resolve_master(super()._get_hook(), self.master, self._conn_id, self.log)  # type: ignore[misc]
        if self._driver_secrets is None:
            self._driver_secrets = DriverSecrets(self.log)
        return self._driver_secrets.route(hook)

    def _close_driver_secrets(self) -> None:
        """Remove the secrets files of this try's submission (if any)."""
        if self._driver_secrets is not None:
            self._driver_secrets.close()


def resolve_master(hook: Any, master: Any, conn_id: str, log: Any) -> Any:
    """A built SparkSubmitHook pointed at ``master``, else its connection's, else local mode.

    Local mode (``local[*]``) applies when ``master`` is not given and ``conn_id`` is not
    defined; then pyspark's own ``spark-submit`` and this worker's Python are used. A mixed
    pyspark / pyspark-client install fails here first, naming both versions.
    """
    require_matching_pyspark()                     # before anything is submitted (see .pyspark_pair)
    master = optional_value(master)
    if master is None and not _connection_exists(hook, conn_id):
        master = LOCAL_MASTER
        log.info("Spark connection %r is not defined: running in local mode (%s)", conn_id, master)
    if master is not None:
        set_master(hook, str(master))
    if hook._connection["master"].startswith("local"):
        prepare_local(hook)
    return hook


def _connection_exists(hook: Any, conn_id: str) -> bool:
    try:
        hook.get_connection(conn_id)
        return True
    except AirflowNotFoundException:
        return False


def set_master(hook: Any, master: str) -> None:
    """Point a built SparkSubmitHook at ``master`` (and refresh what it derived from the old one)."""
    hook._connection["master"] = master
    hook._is_yarn = "yarn" in master
    hook._is_yarn_cluster_mode = hook._is_yarn and hook._connection.get("deploy_mode") == "cluster"
    hook._is_kubernetes = "k8s" in master
    hook._should_track_driver_status = hook._resolve_should_track_driver_status()


def prepare_local(hook: Any) -> None:
    """Local mode: a spark-submit that exists, and the driver on this worker's Python."""
    binary = hook._connection.get("spark_binary") or "spark-submit"
    env = dict(hook._env_vars or {})
    if not (os.path.isabs(binary) and os.access(binary, os.X_OK)) and shutil.which(binary) is None:
        bundled = bundled_spark_submit()
        if bundled is not None:
            hook._connection["spark_binary"] = bundled
            if "SPARK_HOME" not in env and "SPARK_HOME" not in os.environ:
                env["SPARK_HOME"] = os.path.dirname(os.path.dirname(bundled))
    for key in ("PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON"):
        if key not in env and key not in os.environ:
            env[key] = sys.executable
    hook._env_vars = env
