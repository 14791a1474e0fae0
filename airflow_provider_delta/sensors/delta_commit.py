"""``DeltaCommitSensor``: wait for commits on a Delta table.

The rules of what counts (range, filters, end condition) live in
:class:`~airflow_provider_delta.hooks.commits.CommitWatch`; this class adds the
Airflow side: modes ``poke`` and ``reschedule``, deferral to
:class:`~airflow_provider_delta.triggers.DeltaCommitTrigger`, XComs and asset events.

Baseline without ``after_version``/``target_version``: the table's version when the
sensor started. In ``reschedule`` mode each poke is a new process, so "when the
sensor started" is the first reschedule's start date, turned into a version by the
table's commit timestamps; passing ``after_version`` (e.g. from an upstream XCom)
is exact and cheaper.
"""
from __future__ import annotations

import datetime
from typing import TYPE_CHECKING, Any, Sequence

from airflow.sdk import BaseSensorOperator, PokeReturnValue, conf

from ..hooks.commits import CommitWatch
from ..log import TableNotFoundError, TimestampOutOfRangeError
from ..operators.base import DeltaTaskMixin
from ..triggers.delta_commit import DeltaCommitTrigger

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


#: below this poke interval, reschedule mode risks apache/airflow#71172 (see DeltaCommitSensor)
RESCHEDULE_SAFE_POKE_SECONDS = 300


class DeltaCommitSensor(DeltaTaskMixin, BaseSensorOperator):
    """Wait until a Delta table reaches a version, or has a commit after a baseline.

    :param table_uri: table location: absolute path/URL, or relative to the connection's base URI
    :param target_version: done when a (matching) commit at or above this version exists
    :param after_version: only commits after this version count; default: the version the
        table had when the sensor started (or ``target_version`` when that is given)
    :param operation: only commits with this commitInfo.operation count (name or list of names,
        e.g. ``"WRITE"``, ``["MERGE", "DELETE"]``)
    :param app_id: only commits with a ``txn`` action of this appId count (idempotent writers); a
        task's id (``"dag.task"``) also matches the per-interval ids its Spark commits carry
        (``"dag.task@<interval>"``, see :mod:`~airflow_provider_delta.hooks.run_identity`)
    :param delta_conn_id: ``delta`` connection; optional for absolute table URIs
    :param deferrable: wait in the triggerer (default: ``[operators] default_deferrable``)

    Waiting long: use ``deferrable=True`` (the triggerer polls; no worker slot, no reschedule).
    ``mode="reschedule"`` is exposed to an Airflow core race (apache/airflow#71172, open in
    3.2 and 3.3): when the executor's report of one poke is processed after the next poke
    was queued, the scheduler marks the sensor failed. The race needs the report to lag by
    more than ``poke_interval``; it was seen at 60 s under load, so in reschedule mode keep
    ``poke_interval`` at several minutes (the sensor warns below 300 s) or defer instead.

    Returns (XCom ``return_value``) every matching commit in the range, oldest first, as
    dicts with ``version``, ``timestamp`` (epoch ms), ``operation``,
    ``operationParameters``, ``operationMetrics`` and, when present, ``appId``/``txnVersion``
    and ``job``; pushes the newest table version seen as XCom ``version``; outlet assets
    get an event with extra ``{"version": ..., "commits": [...]}``.
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "target_version", "after_version",
                                      "operation", "app_id")
    ui_color = "#00add4"

    def __init__(self, *, table_uri: str, target_version: int | str | None = None,
                 after_version: int | str | None = None, operation: str | list[str] | None = None,
                 app_id: str | None = None, delta_conn_id: str | None = None,
                 deferrable: bool = conf.getboolean("operators", "default_deferrable", fallback=False),
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table_uri = table_uri
        self.target_version = target_version
        self.after_version = after_version
        self.operation = operation
        self.app_id = app_id
        self.delta_conn_id = delta_conn_id
        self.deferrable = deferrable
        self._watch: CommitWatch | None = None

    # ------------------------------------------------------------------ state
    def _new_watch(self, context: "Context") -> CommitWatch:
        watch = CommitWatch(target_version=self.target_version, after_version=self.after_version,
                            operation=self.operation, app_id=self.app_id)
        if not watch.started:
            table = self.hook.get_table(self.table_uri)
            watch.start(table, self._baseline_from_first_reschedule(context))
        return watch

    def _baseline_from_first_reschedule(self, context: "Context") -> int | None:
        """In reschedule mode, the version the table had when the first poke ran."""
        if not self.reschedule or self.deferrable:
            return None
        ti = context.get("ti")
        first = ti.get_first_reschedule_date(context) if ti is not None else None
        if first is None:
            return None
        try:
            return self.hook.resolve_version(self.table_uri, timestamp=first)
        except (TimestampOutOfRangeError, TableNotFoundError):
            return -1  # every commit the table has came after the first poke

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
        done = self._watch.poll(self.hook.get_table(self.table_uri))
        self.log.info("Delta table %s at version %s: %d matching commit(s) so far",
                      self.table_uri, self._watch.latest, len(self._watch.commits))
        return done

    def execute_complete(self, context: "Context", event: dict[str, Any] | None = None) -> Any:
        """Resume after the trigger fired: fail on its error, else return the commits it saw."""
        from airflow.sdk.exceptions import AirflowException
        if not event or event.get("status") != "success":
            message = (event or {}).get("message", "the trigger returned no event")
            raise AirflowException(f"waiting for commits on {self.table_uri} failed: "
                                   f"{(event or {}).get('error_type', 'error')}: {message}")
        return self._finish(context, {"version": event.get("version"), "commits": event.get("commits") or []})

    def _finish(self, context: "Context", result: dict[str, Any]) -> list[dict[str, Any]]:
        commits = list(result.get("commits") or [])
        ti = context.get("ti")
        if ti is not None:
            ti.xcom_push(key="version", value=result.get("version"))
        self.emit_asset_events(context, {"version": result.get("version"), "commits": commits})
        self.log.info("Done: %d matching commit(s), versions %s", len(commits), [c["version"] for c in commits])
        return commits
