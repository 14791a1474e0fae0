"""``DeltaCommitSensor``: wait for commits on a Delta table.

The rules of what counts (range, filters, end condition) live in
:class:`~airflow_provider_delta.hooks.commits.CommitWatch`; this class adds the
Airflow side: modes ``poke`` and ``reschedule``, deferral to
:class:`~airflow_provider_delta.triggers.DeltaCommitTrigger`, XComs and asset events.

Baseline without ``after_version``/``target_version`` (``baseline``):

* ``"run_start"`` (default): the table's version when the DAG run started, found from
  the commit timestamps, so a commit made by an upstream task of the same run (or by
  anyone after the run started) counts, however soon before the sensor that commit
  landed. A sensor placed right after the task that writes never misses its commit.
  The rule compares the writer's commit time with the run's start time, so it
  trusts the clocks of the machines involved to agree to within the time between the
  run's start and the commit (in-commit timestamps use the writer's clock, file
  times the storage's). It compares at the timestamps' resolution
  (:func:`timestamp_resolution_ms`): on an object store without in-commit timestamps,
  whole seconds, so a commit in the second the run started counts even if it came
  just before the start, and none made after the start is missed;
* ``"sensor_start"``: the table's version when the sensor started (in ``reschedule``
  mode the first poke's date, turned into a version the same way): only commits
  made while the sensor waits count.

Without a DAG run in the context (``execute(context)`` from a test), ``run_start``
falls back to ``sensor_start``. Passing ``after_version`` (e.g. an upstream task's
XCom) is exact and cheaper.
"""
from __future__ import annotations

import datetime
import time
from typing import TYPE_CHECKING, Any, Sequence

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf

from .. import log as delta_log
from ..hooks.commits import CommitWatch, as_names
from ..log import DeltaError, InvalidArgumentError, TableNotFoundError, TimestampOutOfRangeError, to_epoch_ms
from ..hooks.arguments import DeltaArgumentError, choice, is_template, optional_int, optional_value
from ..operators.base import DeltaTaskMixin
from ..triggers.delta_commit import DeltaCommitTrigger

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


#: below this poke interval, reschedule mode risks apache/airflow#71172 (see DeltaCommitSensor)
RESCHEDULE_SAFE_POKE_SECONDS = 300
#: where the range starts when neither after_version nor target_version is given (module docstring)
BASELINES = ("run_start", "sensor_start")


class DeltaCommitWaitError(DeltaError):
    """The deferred wait ended with an error the trigger reported (its type and message are kept)."""


class DeltaCommitSensor(DeltaTaskMixin, BaseSensorOperator):
    """Wait until a Delta table reaches a version, or has a commit after a baseline.

    :param table_uri: table location: absolute path/URL, or relative to the connection's base URI
    :param target_version: done when a (matching) commit at or above this version exists
    :param after_version: only commits after this version count; default: see ``baseline``, or, with
        ``target_version`` given, commits from ``target_version`` on count
    :param baseline: without either version: ``"run_start"`` (default; commits made since the DAG
        run started count, so a sensor right after the writing task sees its commit) or
        ``"sensor_start"`` (commits made since the sensor started)
    :param operation: only commits with this commitInfo.operation count (name or list of names,
        e.g. ``"WRITE"``, ``["MERGE", "DELETE"]`` or ``"MERGE,DELETE"``; compared without regard to case)
    :param app_id: only commits with a ``txn`` action of this appId count (idempotent writers); a
        task's id (``"dag:task"``) also matches the per-interval ids its Spark commits carry
        (``"dag:task@<interval>"``, see :mod:`~airflow_provider_delta.hooks.run_identity`); the
        spelling of earlier releases, ``"dag.task"``, matches too
    :param delta_conn_id: ``delta`` connection; optional for absolute table URIs
    :param deferrable: wait in the triggerer (default: ``[operators] default_deferrable``)

    Waiting long: use ``deferrable=True`` (the triggerer polls; no worker slot, no reschedule).
    ``mode="reschedule"`` is exposed to an Airflow core race (apache/airflow#71172, open in
    3.2 and 3.3): when the executor's report of one poke is processed after the next poke
    was queued, the scheduler marks the sensor failed. The race needs the report to lag by
    more than ``poke_interval``; it was seen at 60 s under load, so in reschedule mode keep
    ``poke_interval`` at several minutes (the sensor warns below 300 s) or defer instead.

    Every argument but ``deferrable`` is templated.

    Returns (XCom ``return_value``, and the extra of the outlet assets' events) a bounded
    summary: ``version`` (the newest table version seen), ``count`` (matching commits in the
    range), ``first_version`` / ``last_version`` (oldest and newest of them), ``commits`` (the
    newest 20 as dicts with ``version``, ``timestamp`` (epoch ms), ``operation``,
    ``operationParameters``, ``operationMetrics`` and, when present, ``appId``/``txnVersion``
    and ``job``, oldest first; long values clipped and fewer summaries when they would pass
    :data:`~..hooks.payloads.MAX_LISTED_BYTES`) and ``truncated`` (whether older ones were
    left out; every matching commit is in the task log, whole). Pushes the newest table version as XCom ``version``.
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "target_version", "after_version",
                                      "operation", "app_id", "baseline")
    ui_color = "#00add4"
    lineage_role = "input"      # waiting for a commit reads the log; the writer reports the table as output

    def __init__(self, *, table_uri: str, target_version: int | str | None = None,
                 after_version: int | str | None = None, operation: str | list[str] | None = None,
                 app_id: str | None = None, delta_conn_id: str | None = None, baseline: str = "run_start",
                 deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
                 **kwargs: Any) -> None:
        if not is_template(baseline):
            choice(baseline, "baseline", BASELINES)
        super().__init__(**kwargs)
        self.table_uri = table_uri
        self.target_version = target_version
        self.after_version = after_version
        self.operation = operation
        self.app_id = app_id
        self.delta_conn_id = delta_conn_id
        self.baseline = baseline
        self.deferrable = deferrable
        self._watch: CommitWatch | None = None

    # ------------------------------------------------------------------ state
    def _new_watch(self, context: "Context") -> CommitWatch:
        """The watch of the rendered arguments (refused without retry when they mean nothing)."""
        baseline = choice(self.baseline, "baseline", BASELINES)
        try:
            watch = CommitWatch(target_version=optional_int(self.target_version, "target_version"),
                                after_version=optional_int(self.after_version, "after_version"),
                                operation=as_names(optional_value(self.operation)),
                                app_id=optional_value(self.app_id))
        except InvalidArgumentError as e:
            raise DeltaArgumentError(str(e)) from None
        if not watch.started:
            table = self.hook.get_table(self.table_uri)
            start = self._run_start(context) if baseline == "run_start" else None
            if start is None and baseline == "run_start":
                self.log.info("No DAG run start date in the context: counting commits made after the sensor "
                              "started")
            if start is None:
                start = self._first_reschedule(context)
            watch.start(table, self._version_before(start) if start is not None else None)
        return watch

    @staticmethod
    def _run_start(context: "Context") -> Any:
        dag_run = context.get("dag_run")
        return getattr(dag_run, "start_date", None)

    def _first_reschedule(self, context: "Context") -> Any:
        """In reschedule mode, when the first poke ran (each poke is a new process)."""
        if not self.reschedule or self.deferrable:
            return None
        ti = context.get("ti")
        return ti.get_first_reschedule_date(context) if ti is not None else None

    def _version_before(self, when: Any) -> int:
        """The newest version committed before ``when`` (-1: every commit the table has came at or after it),
        compared at the resolution of the table's commit timestamps (:func:`timestamp_resolution_ms`)."""
        start = to_epoch_ms(when)
        try:
            table = self.hook.get_table(self.table_uri)
            step = timestamp_resolution_ms(table)
            before = start - start % step - 1    # a commit in the start's millisecond (or second) counts as after
            before = min(before, int(time.time() * 1000))   # a scheduler clock ahead of this worker's
            return self.hook.resolve_version(self.table_uri, timestamp=before)
        except (TimestampOutOfRangeError, TableNotFoundError):
            return -1

    # ------------------------------------------------------------ execution
    def execute(self, context: "Context") -> Any:
        if self.reschedule and not self.deferrable and self.poke_interval < RESCHEDULE_SAFE_POKE_SECONDS:
            self.log.warning("reschedule mode with poke_interval=%ss: Airflow's scheduler may mark this sensor "
                             "failed (apache/airflow#71172); use deferrable=True, or poke_interval >= %ss",
                             self.poke_interval, RESCHEDULE_SAFE_POKE_SECONDS)
        self._watch = self._new_watch(context)
        self.log.info("Waiting for commits on %s (range after version %s, done at version >= %s, "
                      "operation=%s, app_id=%s)", self.table_uri, self._watch.last_seen,
                      self._watch.threshold, self._watch.operation, self._watch.app_id)
        if not self.deferrable:
            super().execute(context)
            return self._finish(context, self._watch.result())
        table = self.hook.get_table(self.table_uri)
        if self._watch.poll(table):
            return self._finish(context, self._watch.result())
        self.defer(
            trigger=DeltaCommitTrigger(table_uri=self.table_uri, delta_conn_id=self.delta_conn_id,
                                       poke_interval=self.poke_interval, **self._watch.to_dict()),
            method_name="execute_complete",
            timeout=datetime.timedelta(seconds=self.timeout),
        )

    def poke(self, context: "Context") -> bool | PokeReturnValue:
        if self._watch is None:
            self._watch = self._new_watch(context)
        watch = self._watch
        done = watch.poll(self.hook.get_table(self.table_uri))
        if watch.latest is None:
            self.log.info("Delta table %s does not exist yet (no commit in its _delta_log): waiting for it to "
                          "be created", self.hook.resolve_uri(self.table_uri))
        else:
            self.log.info("Delta table %s at version %s: %d matching commit(s) so far",
                          self.table_uri, watch.latest, watch.count)
        if not watch.count and watch.skipped_operations:
            self.log.info("Commits with other operations were left out: %s (the filter is %s)",
                          watch.skipped_operations, list(watch.operation or ()))
        return done

    def execute_complete(self, context: "Context", event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: fail on its error, else return what it saw.

        The trigger's error comes back as its own type where it is one of the log layer's
        (``TableNotFoundError``, ``CorruptLogError``...), an invalid argument as
        :class:`~..hooks.arguments.DeltaArgumentError` (no retry), anything else as
        :class:`DeltaCommitWaitError`.
        """
        if not event or event.get("status") != "success":
            event = event or {}
            error_type = str(event.get("error_type") or "")
            message = (f"waiting for commits on {self.table_uri} failed: {error_type or 'error'}: "
                       f"{event.get('message', 'the trigger returned no event')}")
            raise _trigger_error(error_type)(message)
        return self._finish(context, {k: v for k, v in event.items() if k != "status"})

    def _finish(self, context: "Context", result: dict[str, Any]) -> dict[str, Any]:
        result.setdefault("commits", [])
        ti = context.get("ti")
        if ti is not None:
            ti.xcom_push(key="version", value=result.get("version"))
        self.emit_asset_events(context, result)
        self.log.info("Done: %s matching commit(s), versions %s..%s (latest table version %s)%s",
                      result.get("count"), result.get("first_version"), result.get("last_version"),
                      result.get("version"), "; XCom lists the newest only" if result.get("truncated") else "")
        return result


def timestamp_resolution_ms(table: Any) -> int:
    """How finely the commit timestamps of ``table`` tell commits apart, in ms.

    In-commit timestamps and local file times have milliseconds. Without in-commit
    timestamps, a table on an object store is dated by its commit objects' Last-Modified,
    which S3 and Azure keep in whole seconds: a commit made just after the run started,
    in the same second, is dated before the start. Comparing at whole seconds there
    counts every commit of the start's second as after the start, so none made after it
    is missed; the price is that a commit in that second just before the start counts too
    (GCS keeps milliseconds but is treated the same: one rule for object stores).
    """
    if table.storage.is_local:
        return 1
    try:
        ict = table.snapshot().in_commit_timestamps_enabled
    except TableNotFoundError:
        ict = False
    return 1 if ict else 1000


def _trigger_error(error_type: str) -> type[Exception]:
    """The error class that stands for a trigger error named ``error_type``."""
    if error_type in ("InvalidArgumentError", DeltaArgumentError.__name__):
        return DeltaArgumentError
    cls = getattr(delta_log, error_type, None) if error_type in delta_log.__all__ else None
    if isinstance(cls, type) and issubclass(cls, DeltaError):
        return cls
    return DeltaCommitWaitError
