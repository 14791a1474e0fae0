"""``DeltaRestoreOperator``: roll a table back to an earlier version (Delta Spark's RESTORE).

The rollback an orchestrator needs when a load turns out bad: every reader sees the
table as it was, in one new commit, and the bad version stays in the history for
inspection. Restoring to the version that is already the latest commits nothing, so a
rollback task that runs although the load never committed is harmless.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from airflow.providers.common.compat.sdk import AirflowFailException

from ..log import RestoreResult, UnexpectedVersionError, restore_table, restored_version_of
from ..hooks.arguments import NOT_GIVEN, check_flags, flag, given_value, optional_int
from ..spark.exactly_once import origin_of
from .base import (DeltaVersionAsOfOperator, earlier_try_commit, job_info, metrics_of, run_start_ms, same_dag_run,
                   same_task_run)

#: how far before its DAG run's ``run_after`` an unguarded retry searches for its earlier try's RESTORE
#: (commit timestamps come from the storage's or the writer's clock, ``run_after`` from Airflow's)
RUN_START_MARGIN_MS = 10 * 60 * 1000

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


class DeltaRollbackRefusedError(UnexpectedVersionError, AirflowFailException):
    """The restore's ``expected_version`` guard refused (other commits came after the run's own).

    Fails the task without retrying (a retry finds the same commits); also the log layer's
    :class:`~airflow_provider_delta.log.UnexpectedVersionError`.
    """


class DeltaRestoreOperator(DeltaVersionAsOfOperator):
    """Make the table's files those of ``version`` (or of the version as of ``timestamp``) again.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param version: the version to restore (templated, e.g.
        ``"{{ ti.xcom_pull(task_ids='remember_version') }}"``)
    :param timestamp: or the version as of this time (templated; epoch ms, datetime or ISO-8601);
        exactly one of ``version`` and ``timestamp``
    :param expected_version: the rollback guard (templated, e.g. the version the run's own load
        committed): restore only if this is still the table's latest version; otherwise the task
        fails with ``UnexpectedVersionError``, without retrying and with nothing written, so commits
        made after the run's own (another run's published load) are never undone. Given, it must
        render to a version: ``None``, ``""`` or ``"None"`` (an upstream that pushed none, also a
        mapped guard resolving to None) fails the task; leave it out for an unguarded restore
    :param enforce_retention: refuse a version older than ``delta.deletedFileRetentionDuration``
        (default True, as Delta Spark)
    :param delta_conn_id: ``delta`` connection

    Returns ``{"table_uri", "version", "restored_version", "committed", "metrics"}``: the table's
    version afterwards, the version restored, whether a commit was made, and Delta Spark's six
    RESTORE metrics (integers). A commit emits an asset event with ``operation: "RESTORE"``; a
    restore to the latest version (nothing to do) emits none. Concurrent blind appends stay in the
    table; other concurrent changes fail the task with ``ConcurrentModificationError``, nothing
    written (retrying the task restores on top of them). A retry whose earlier try's RESTORE of the
    same target landed reports it instead of restoring again, searched back to the DAG run's
    ``run_after`` (under commits of other DAGs, a streaming append say, which stay), and only while no
    upstream task of this DAG run committed after it: a rollback cleared together with its run's load
    restores the reloaded data away (guarded: the search runs where the guard refuses, and a refusal it
    does not explain fails the task as above).
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "version", "timestamp", "expected_version",
                                      "enforce_retention")

    def __init__(self, *, table_uri: str, version: int | str | None = None, timestamp: Any = None,
                 expected_version: Any = NOT_GIVEN, enforce_retention: bool = True, **kwargs: Any) -> None:
        super().__init__(table_uri=table_uri, version=version, timestamp=timestamp, **kwargs)
        #: built with a guard: a value rendering to nothing is refused, never read as "no guard"; a None
        #: given (a mapped guard that resolved to None) is such a value too (see NOT_GIVEN)
        self.guarded = expected_version is not NOT_GIVEN
        self.expected_version = expected_version if self.guarded else None
        self.enforce_retention = enforce_retention
        check_flags(enforce_retention=enforce_retention)

    def execute(self, context: "Context") -> dict[str, Any]:
        enforce_retention = flag(self.enforce_retention, "enforce_retention", deletes=True)
        version, timestamp = self.version_as_of(required="restore")
        expected_version = optional_int(given_value(
            self.expected_version, self.guarded, "expected_version",
            "the rollback guard came with no version (the load task pushed no XCom?); restoring without it "
            "could undo commits made after the load"), "expected_version")
        table = self.hook.get_table(self.table_uri)
        # a guarded retry finds its earlier try's RESTORE where the guard refuses; an unguarded one looks first
        result = None if self.guarded else self._earlier_try_restore_in_history(table, version, timestamp, context)
        earlier = result is not None        # a commit of an earlier try of this task run
        if result is None:
            try:
                result = restore_table(table, version, timestamp, enforce_retention=enforce_retention,
                                       expected_version=expected_version, job=job_info(context))
            except UnexpectedVersionError as e:
                # the run's own RESTORE: the latest commit, or under commits of others (another DAG's append)
                done = (self._earlier_try_restore(table, e.latest, version, timestamp, context)
                        or self._earlier_try_restore_in_history(table, version, timestamp, context))
                if done is None:
                    raise DeltaRollbackRefusedError(str(e), expected=e.expected, latest=e.latest) from e
                result, earlier = done, True
        out = {"table_uri": table.uri, "version": result.version, "restored_version": result.restored_version,
               "committed": result.committed, "metrics": dict(result.metrics)}
        event = {"version": result.version, "committed": True, "operation": "RESTORE",
                 "restored_version": result.restored_version}
        if result.committed and earlier:
            self.announce_earlier_try_commit(context, event, f"the RESTORE at version {result.version} of {table.uri}")
        elif result.committed:
            self.log.info("Restored %s to version %d as version %d: %s", table.uri, result.restored_version,
                          result.version, result.metrics)
            self.emit_asset_events(context, event)
        else:
            self.log.info("%s is at version %d already: nothing to restore", table.uri, result.version)
            self.record_lineage(result.version)
            self.drop_asset_events(f"version {result.version} is the latest already: nothing restored")
        return out

    def _earlier_try_restore_in_history(self, table: Any, version: int | None, timestamp: Any,
                                        context: "Context") -> Any:
        """A retry (unguarded: first; guarded: where the guard refuses): this task run's RESTORE of the same target that still stands (an earlier
        try committed it, then its worker died before reporting) is the rollback done, reported again;
        restoring a second time would undo what other writers committed after it.

        It still stands when no upstream task of this DAG run committed after it: a commit of the run's
        own load after it (the run cleared from the load down, the load committed again) means this try
        is asked to roll back that commit, so it restores. Commits of downstream tasks (built on the
        RESTORE), of other DAGs (streaming appends) or naming no run do not count: restoring again would
        undo them. Outside a DAG (``execute`` called directly) every other task of the run counts. The history is read backwards, one commit at
        a time, down to the DAG run's ``run_after`` (less :data:`RUN_START_MARGIN_MS` for clocks apart):
        no try of this run committed before it (without it, down to the oldest commit). None when there
        is no such RESTORE (a first try, one that failed before committing), when this run's RESTORE
        there restored another target, or when a commit of this run came after it."""
        ti = context.get("ti") or context.get("task_instance")
        try_number = getattr(ti, "try_number", None)
        if not isinstance(try_number, int) or try_number <= 1:
            return None
        start = run_start_ms(context)
        # in a DAG, only its upstream tasks re-make what it rolls back (a downstream task's commit after
        # the RESTORE was built on it); outside one (execute called directly), any task of the run counts
        upstream = self.get_flat_relative_ids(upstream=True) if self.has_dag() else None
        for info in table.history_back(since=None if start is None else start - RUN_START_MARGIN_MS):
            origin = origin_of(info)
            if not same_task_run(origin, context):
                if same_dag_run(origin, context) and (upstream is None or origin.get("task_id") in upstream):
                    self.log.info("Version %d of %s was committed by upstream task %s of this DAG run after any "
                                  "earlier RESTORE of this task: restoring as asked", info["version"], table.uri,
                                  origin.get("task_id"))     # type: ignore[union-attr]
                    return None
                continue
            if info.get("operation") != "RESTORE":
                continue
            restored = restored_version_of(table, info.get("operationParameters"), version, timestamp)
            if restored is None:
                return None                 # this run's restore of another target: do as this try asks
            self.log.info("Version %d of %s is this task run's RESTORE of version %d, committed by try %s, which "
                          "did not report it, or the run was cleared: the rollback is done, not restoring again",
                          info["version"], table.uri, restored, (origin or {}).get("try_number"))
            return RestoreResult(version=info["version"], restored_version=restored, committed=True,
                                 metrics=metrics_of(info))
        return None

    def _earlier_try_restore(self, table: Any, latest: Any, version: int | None, timestamp: Any,
                             context: "Context") -> Any:
        """The guard found the table past ``expected_version``: when the commit there is this task
        run's own RESTORE of the same version or timestamp (an earlier try committed it, then its worker died before
        reporting), the rollback is done: its result, to report and announce; else None (refuse)."""
        if not isinstance(latest, int):
            return None
        info = earlier_try_commit(table, latest, "RESTORE", context)
        if info is None:
            return None
        restored = restored_version_of(table, info.get("operationParameters"), version, timestamp)
        if restored is None:
            return None                     # that try restored another target than this one asks for
        self.log.info("Version %d of %s is this task run's RESTORE of version %d, committed by try %s, which did "
                      "not report it, or the run was cleared: the rollback is done", latest, table.uri, restored,
                      (info.get("job") or {}).get("try_number"))
        return RestoreResult(version=latest, restored_version=restored, committed=True, metrics=metrics_of(info))
