"""What every Delta task shares: the hook, commit job info, asset events (arguments: :mod:`..hooks.arguments`).

Kept in a mixin so the sensor (a ``BaseSensorOperator``) and the operators (plain
``BaseOperator``) behave the same way without duplicating code.
"""
from __future__ import annotations

from datetime import datetime, timezone
from functools import cached_property
from typing import TYPE_CHECKING, Any

from airflow.sdk import Asset, BaseOperator

try:    # what ``inlet_events`` uses; not exported by airflow.sdk, so a later Airflow may move it
    from airflow.sdk.execution_time.context import InletEventsAccessor
except ImportError:     # pragma: no cover - then a cleared task announces its commit again
    InletEventsAccessor = None

from ..assets import asset_uri_for_table
from ..hooks.delta_table import DeltaTableHook
from ..lineage import operator_lineage
from ..log import DeltaError, to_epoch_ms
from ..hooks.arguments import version_or_timestamp
from ..hooks.run_identity import job_info
from ..spark.exactly_once import commit_info_at

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


def same_task_run(origin: dict[str, Any] | None, context: "Context") -> bool:
    """Whether a commit's recorded origin (its ``commitInfo.job``) is this task instance (its map index
    too) in this DAG run (any try)."""
    if not origin:
        return False
    mine = job_info(context)
    return (all(origin.get(k) == mine[k] and mine[k] is not None for k in ("dag_id", "task_id", "run_id"))
            and origin.get("map_index", -1) == mine.get("map_index", -1))


def same_dag_run(origin: dict[str, Any] | None, context: "Context") -> bool:
    """Whether a commit's recorded origin is a task (any, this one included) of this DAG run."""
    if not origin:
        return False
    mine = job_info(context)
    return all(origin.get(k) == mine[k] and mine[k] is not None for k in ("dag_id", "run_id"))


def run_start_ms(context: "Context") -> int | None:
    """The earliest time any try of this task in this DAG run can have started (epoch ms), else None.

    The DAG run's ``run_after``: the scheduler starts no run before it, and clearing tasks leaves
    it as it is (it resets the run's ``start_date`` and ``queued_at``: after a clear they are later
    than the earlier tries). Without it, the earliest of the run's logical date and start date.
    """
    dag_run = context.get("dag_run")
    run_after = getattr(dag_run, "run_after", None)
    found = [run_after] if run_after is not None else [
        t for t in (getattr(dag_run, "logical_date", None), context.get("logical_date"),
                    getattr(dag_run, "start_date", None)) if t is not None]
    try:
        return min(to_epoch_ms(t) for t in found) if found else None
    except DeltaError:          # a value that is no time: the bound is unknown
        return None


def named_another_task(origin: dict[str, Any] | None, context: "Context") -> bool:
    """Whether a commit's recorded origin names a task other than this one (another DAG, task or map
    index; any run). False when it names none: such a commit cannot be told apart."""
    if not origin or origin.get("dag_id") is None or origin.get("task_id") is None:
        return False
    mine = job_info(context)
    if (origin.get("dag_id"), origin.get("task_id")) != (mine["dag_id"], mine["task_id"]):
        return True
    # 0.1.0 recorded no map index: such a commit of this task may be any of its instances'
    return "map_index" in origin and origin.get("map_index", -1) != mine.get("map_index", -1)


def earlier_try_commit(table: Any, version: int, operation: str, context: "Context") -> dict[str, Any] | None:
    """The ``commitInfo`` of commit ``version`` when an earlier try of this task run made it with
    ``operation``, else None.

    A try can commit and then die before reporting (its worker lost): the retry must recognise the
    commit as its own and succeed (announcing it), not fail on the state its own commit created.
    """
    info = commit_info_at(table, version)
    if info is not None and info.get("operation") == operation and same_task_run(info.get("job"), context):
        return info
    return None


#: how long before the DAG run's ``run_after`` an earlier try's asset event is looked for (clocks apart)
EVENT_SEARCH_MARGIN_MS = 10 * 60 * 1000
#: at most this many of an outlet's newest events since then are read (a very busy asset: announce again)
EVENT_SEARCH_LIMIT = 1000


def announced_by_task_run(task: Any, context: "Context", version: Any) -> bool:
    """Whether every asset outlet of ``task`` holds an event of this task run (DAG, run, task, map index)
    for table version ``version``: an earlier try of the run succeeded and announced that commit.

    Asset events survive a clear; a try that died before reporting recorded none. They are read through
    the Task SDK's asset-event access (what ``inlet_events`` uses; the execution API answers it), newest
    first, from the DAG run's ``run_after`` on (:func:`run_start_ms`, less a margin). False when the task
    has no asset outlet, when the events cannot be read (outside a task runner: ``execute`` called
    directly) or when too many events came since: then the commit is announced (perhaps again)."""
    outlets = [o for o in (getattr(task, "outlets", None) or []) if isinstance(o, Asset)]
    if not outlets or not isinstance(version, int):
        return False
    mine = job_info(context)
    if None in (mine["dag_id"], mine["run_id"], mine["task_id"]):
        return False
    start = run_start_ms(context)
    try:
        if InletEventsAccessor is None:
            raise ImportError("airflow.sdk.execution_time.context.InletEventsAccessor is not in this Airflow")
        for asset in outlets:
            events = InletEventsAccessor(asset_name=asset.name, asset_uri=asset.uri).ascending(False)
            events = events.limit(EVENT_SEARCH_LIMIT)
            if start is not None:
                events = events.after(datetime.fromtimestamp((start - EVENT_SEARCH_MARGIN_MS) / 1000, timezone.utc))
            if not any(_event_of_task_run(event, mine, version) for event in events):
                return False
    except Exception as e:  # noqa: BLE001 - no answer is "not announced": announcing twice beats never
        task.log.info("Could not read the asset events of %s (%s: %s): taking the commit as not announced",
                      [a.uri for a in outlets], type(e).__name__, e)
        return False
    return True


def _event_of_task_run(event: Any, mine: dict[str, Any], version: int) -> bool:
    extra = getattr(event, "extra", None) or {}
    source_map_index = getattr(event, "source_map_index", None)
    return (getattr(event, "source_dag_id", None) == mine["dag_id"] and getattr(event, "source_run_id", None) ==
            mine["run_id"] and getattr(event, "source_task_id", None) == mine["task_id"]
            and (source_map_index if source_map_index is not None else -1) == mine.get("map_index", -1)
            and extra.get("version") == version)


def metrics_of(info: dict[str, Any]) -> dict[str, int]:
    """A commit's ``operationMetrics`` as integers (Delta Spark writes them as strings)."""
    out = {}
    for k, v in (info.get("operationMetrics") or {}).items():
        try:
            out[k] = int(v)
        except (TypeError, ValueError):
            continue
    return out


class DeltaTaskMixin:
    """Hook access and asset events for tasks that work on one Delta table.

    Expects ``table_uri`` and ``delta_conn_id`` attributes (template fields of the task).
    """

    table_uri: str
    delta_conn_id: str | None
    outlets: list[Any]

    #: this task's table in its OpenLineage: "output" (the task changes it) or "input" (it only reads it)
    lineage_role = "output"
    #: (table version, [(input table URI, version)], output statistics), set by execute
    _lineage: tuple[int | None, list[tuple[str, int | None]], dict[str, int] | None] | None = None

    @cached_property
    def hook(self) -> DeltaTableHook:
        return DeltaTableHook(delta_conn_id=self.delta_conn_id or None)

    def record_lineage(self, version: int | None, inputs: list[tuple[str, int | None]] | None = None,
                       statistics: dict[str, int] | None = None) -> None:
        """What :meth:`get_openlineage_facets_on_complete` reports: this table's version, other inputs."""
        self._lineage = (version, list(inputs or []), statistics)

    def add_lineage_input(self, table_uri: str | None, version: int | None) -> None:
        """One more table this task read (nothing when ``table_uri`` is None)."""
        if table_uri is not None:
            version_, inputs, statistics = self._lineage or (None, [], None)
            self.record_lineage(version_, inputs + [(str(table_uri), version)], statistics)

    def get_openlineage_facets_on_complete(self, task_instance: Any) -> Any:
        """OpenLineage (when its provider is installed): the table at the version this task saw or made."""
        version, others, statistics = self._lineage or (None, [], None)
        table = self.hook.get_table(self.table_uri)
        inputs = [(self.hook.get_table(uri), v) for uri, v in others]
        if self.lineage_role == "input":
            return operator_lineage([(table, version)] + inputs, [])
        return operator_lineage(inputs, [(table, version, statistics)])

    def emit_asset_events(self, context: "Context", extra: dict[str, Any]) -> None:
        """Attach ``extra`` (JSON-ready; at least ``version``) to the events of this task's asset outlets.

        Airflow records an event per outlet asset when the task succeeds; this only adds
        what the table looks like now, so consumers see which version they are handed.
        """
        if self._lineage is None and isinstance(extra.get("version"), int):
            self.record_lineage(extra["version"])
        outlets = [o for o in (getattr(self, "outlets", None) or []) if isinstance(o, Asset)]
        if not outlets:
            return
        events = context.get("outlet_events")
        if events is None:
            return
        try:
            mine = asset_uri_for_table(self.hook.resolve_uri(self.table_uri))
        except Exception:  # an asset URI is a convenience: never fail the task over it
            mine = None
        for asset in outlets:
            if mine and asset.uri.startswith("delta") and asset.uri != mine:
                self.log.warning("outlet %s is not the table this task works on (%s)",  # type: ignore[attr-defined]
                                 asset.uri, mine)
            events[asset].extra.update(extra)

    def announce_earlier_try_commit(self, context: "Context", extra: dict[str, Any], what: str) -> bool:
        """Announce ``extra["version"]``, a commit an earlier try of this task run made (:meth:`emit_asset_events`),
        unless that try announced it already; True when announced now.

        A try that committed and died before reporting recorded no asset event: the commit is announced
        now, or consumers never hear of the data. A task run cleared after it succeeded finds the same
        commit, but its earlier try's event is there: announcing again would start every consumer again
        for data they had. Which of the two it is, the asset events tell (:func:`announced_by_task_run`).
        """
        version = extra.get("version")
        announced = announced_by_task_run(self, context, version)
        if announced:
            self.drop_asset_events(f"{what} was announced by an earlier try of this task run (its asset event "
                                   f"for version {version} exists): the run was cleared, not announcing it again")
            return False
        self.log.info(  # type: ignore[attr-defined]
            "%s: no earlier try of this task run announced version %s: announcing it now", what, version)
        self.emit_asset_events(context, extra)
        return True

    def drop_asset_events(self, reason: str) -> None:
        """Emit no asset event for this try: it changed nothing its outlets stand for.

        Airflow records an event for every asset outlet of a task that succeeds, taken from
        the task's ``outlets`` when it finishes; removing them for this try (the operator
        object lives for one try only) is how a task that had nothing to do stays silent.
        """
        outlets = list(getattr(self, "outlets", None) or [])
        kept = [o for o in outlets if not isinstance(o, Asset)]
        if len(kept) != len(outlets):
            self.log.info("No asset event: %s", reason)  # type: ignore[attr-defined]
            self.outlets = kept


class DeltaBaseOperator(DeltaTaskMixin, BaseOperator):
    """Base of the Delta operators (subclass it for an operator of your own on one table; ``self.hook``
    is its :class:`~airflow_provider_delta.hooks.DeltaTableHook`).

    :param table_uri: table location (templated): absolute path or URL, or relative to the connection's
        base URI
    :param delta_conn_id: ``delta`` connection (templated); None: none for an absolute ``table_uri``,
        ``delta_default`` for a relative one
    """

    template_fields: tuple[str, ...] = ("table_uri", "delta_conn_id")
    ui_color = "#00add4"

    def __init__(self, *, table_uri: str, delta_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.table_uri = table_uri
        self.delta_conn_id = delta_conn_id


class DeltaVersionAsOfOperator(DeltaBaseOperator):
    """Base of the operators that take a table version as of ``version`` or ``timestamp`` (both templated).

    What those two mean after rendering is the same for each (a version number, or a time as
    epoch ms, datetime or ISO-8601; ``"None"`` and ``""`` mean not given): :meth:`version_as_of`.
    """

    def __init__(self, *, table_uri: str, version: int | str | None = None, timestamp: Any = None,
                 **kwargs: Any) -> None:
        super().__init__(table_uri=table_uri, **kwargs)
        self.version = version
        self.timestamp = timestamp

    def version_as_of(self, required: str | None = None) -> tuple[int | None, Any]:
        """The rendered ``(version, timestamp)``: a version number or None, a time or None; both given, a
        value that is neither, or neither when ``required`` (what needs one), fail without retry
        (:func:`~..hooks.arguments.version_or_timestamp`)."""
        return version_or_timestamp(self.version, self.timestamp, required)
