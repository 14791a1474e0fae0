r"""The exactly-once identity of a task's work: which ``txn(appId, version)`` marks one run's commit.

Delta keeps one number per ``appId`` and skips a write whose ``version`` is not above
it (``txn.version >= version`` means "already in"; Delta Spark's ``txnAppId`` /
``txnVersion`` follow the same rule). With one ``appId`` per task and the logical date
as the version, a backfill of an older interval after a newer one was committed is
silently skipped: nothing written, task green.

So the default identity names the *data* a run is responsible for, not just the task:

* ``appId`` = ``<dag_id>:<task_id>[<map_index>]@<run key>``: a colon between the DAG and the task,
  which no DAG or task id may contain (Airflow allows only ``[\w.-]``; a dot would make DAG
  ``sales.daily`` task ``load`` and DAG ``sales`` task ``daily.load`` one id); ``[<map_index>]`` only
  for a mapped task (brackets, so ``load`` at index 1 is never the task ``load.1``); the run key is the
  data interval (``20260101T000000Z-20260102T000000Z``), else the logical date, else
  (a manual run without one) the run id;
* ``version`` = the end of the data interval (else the logical date, else ``run_after``)
  in epoch seconds, else 0.

Every interval has its own ``appId``, so intervals commit in any order; a retry, a
cleared task or another run over the same interval finds its ``appId`` already recorded
and commits nothing. Each ``appId`` stays in the table's snapshot (one small ``txn`` row
per run) until ``delta.setTransactionRetentionDuration`` expires it, as Delta Spark does.

An ``app_id`` given by the DAG author is used as is: then the author chooses the rule.
Filters that wait for a task's commits (``app_id=`` of the sensor and the triggers) match
an ``appId`` itself and every per-run ``appId`` derived from it (:func:`app_id_matches`). The
spelling of releases before 0.2.0, ``dag.task``, still matches: a filter without a colon also
matches the ids whose colon stands at one of its dots (with dotted ids this is every DAG/task pair
that joins to the filter; ``dag:task`` names exactly one).
"""
from __future__ import annotations

import datetime as dt
import re
from typing import Any, Mapping

from airflow.sdk import get_current_context

from ..log import InvalidArgumentError

#: between the DAG id and the task id of a task key: outside Airflow's ``[\w.-]+`` ids, so unambiguous
TASK_SEPARATOR = ":"
#: between the task part and the run part of a default appId
RUN_SEPARATOR = "@"


def _stamp(value: dt.datetime) -> str:
    return value.astimezone(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")


def _from_run(context: Mapping[str, Any], key: str) -> Any:
    value = context.get(key)
    if value is None and context.get("dag_run") is not None:
        value = getattr(context["dag_run"], key, None)
    return value


def run_key(context: Mapping[str, Any]) -> str:
    """The data this run covers: its data interval, else its logical date, else its run id."""
    start, end = _from_run(context, "data_interval_start"), _from_run(context, "data_interval_end")
    if isinstance(start, dt.datetime) and isinstance(end, dt.datetime):
        return f"{_stamp(start)}-{_stamp(end)}"
    logical = _from_run(context, "logical_date")
    if isinstance(logical, dt.datetime):
        return _stamp(logical)
    run_id = _from_run(context, "run_id")
    if run_id:
        return str(run_id)
    raise InvalidArgumentError("cannot derive the run's exactly-once id: the context has no data interval, "
                               "logical date or run id; pass app_id and app_version explicitly")


def run_app_id(task_app_id: str, context: Mapping[str, Any]) -> str:
    """The default appId of this run: the task's id plus the run key."""
    return f"{task_app_id}{RUN_SEPARATOR}{run_key(context)}"


def run_app_version(context: Mapping[str, Any]) -> int:
    """A number that grows with the schedule: the interval end (else logical date, run_after), epoch s."""
    for key in ("data_interval_end", "logical_date", "run_after"):
        value = _from_run(context, key)
        if isinstance(value, dt.datetime):
            return int(value.timestamp())
    return 0


def app_id_matches(wanted: str, app_id: Any) -> bool:
    """Whether a commit's ``appId`` is ``wanted`` or one of the per-run ids derived from it, those of
    its mapped instances (``wanted[<map_index>]@<run key>``) included.

    A ``wanted`` without a colon is also read in the ``dag.task`` spelling of releases before 0.2.0:
    it matches the task keys ``dag:task`` whose colon stands at one of its dots (dots of its task
    part only: a run key after ``@``, a manual run id, may hold colons and dots of its own)."""
    if not isinstance(app_id, str):
        return False
    if _derived_from(wanted, app_id):
        return True
    # only the task part (before the run key) is read in the old spelling: a run key (a manual run's id)
    # may hold colons and dots of its own
    task_part = wanted.partition(RUN_SEPARATOR)[0]
    if TASK_SEPARATOR in task_part or TASK_SEPARATOR not in app_id:
        return False
    return any(_derived_from(f"{wanted[:i]}{TASK_SEPARATOR}{wanted[i + 1:]}", app_id)
               for i, char in enumerate(task_part) if char == ".")


def _derived_from(wanted: str, app_id: str) -> bool:
    if not app_id.startswith(wanted):
        return False
    rest = app_id[len(wanted):]
    return re.fullmatch(r"(\[\d+\])?(" + re.escape(RUN_SEPARATOR) + r".*)?", rest, re.DOTALL) is not None


def task_key(context: Mapping[str, Any] | None, task: Any = None) -> str | None:
    """``<dag_id>:<task_id>`` (``[<map_index>]`` appended for a mapped task) of the running task instance (the same in every try; the
    ids from ``task`` where the context lacks them), or None outside a task: the default exactly-once
    task id, and the writer key that makes a write-audit-publish writer's retry stage once."""
    ti = (context or {}).get("ti")
    dag_id = getattr(ti, "dag_id", None) or getattr(task, "dag_id", None)
    task_id = getattr(ti, "task_id", None) or getattr(task, "task_id", None)
    if not dag_id or not task_id:
        return None
    key = f"{dag_id}{TASK_SEPARATOR}{task_id}"
    map_index = getattr(ti, "map_index", -1)
    if isinstance(map_index, int) and map_index >= 0:
        key += f"[{map_index}]"     # brackets: no task id holds them (a '.1' suffix could be a task's own)
    return key


def former_task_keys(context: Mapping[str, Any] | None, task: Any = None) -> tuple[str, ...]:
    """The spellings :func:`task_key` had before 0.2.0 for this task instance: ``<dag_id>.<task_id>``;
    for a mapped task ``<dag_id>.<task_id>[<map_index>]`` (development builds of 0.2.0) and
    ``<dag_id>.<task_id>.<map_index>`` (0.1.0). Empty outside a task.

    Only to find what a task recorded under its former id (an incremental consumer's position,
    :func:`~..log.incremental.pending_changes`); nothing is written under them. A dot-joined key
    may be another task's as well (DAG ``a.b`` task ``c`` and DAG ``a`` task ``b.c``): they shared
    it before 0.2.0."""
    key = task_key(context, task)
    if key is None:
        return ()
    dag_id, _, task_part = key.partition(TASK_SEPARATOR)
    dotted = f"{dag_id}.{task_part}"
    if not task_part.endswith("]"):
        return (dotted,)
    unmapped, _, index = dotted[:-1].rpartition("[")
    return dotted, f"{unmapped}.{index}"


def run_task_key(context: Mapping[str, Any], task: Any = None) -> str:
    """``<dag_id>:<task_id>[<map_index>]@<run_id>``: one task instance of one DAG run, the same in
    every try (what makes a retried write-audit-publish begin return the group it began)."""
    key, run_id = task_key(context, task), _from_run(context, "run_id")
    if key is None or not run_id:
        raise InvalidArgumentError("cannot name this task instance: the context has no dag_id, task_id or run_id")
    return f"{key}{RUN_SEPARATOR}{run_id}"


def current_task_key() -> str | None:
    """:func:`task_key` of the task instance running in this process, or None outside one."""
    try:
        return task_key(get_current_context())
    except Exception:  # noqa: BLE001 - no task is running here (a script, a test): no writer key
        return None


def job_info(context: Mapping[str, Any]) -> dict[str, Any]:
    """commitInfo ``job`` of a commit made by this task: which DAG run and try made it."""
    ti = context.get("ti") or context.get("task_instance")
    dag_run = context.get("dag_run")
    job = {
        "dag_id": getattr(ti, "dag_id", None) or getattr(dag_run, "dag_id", None),
        "task_id": getattr(ti, "task_id", None),
        "run_id": getattr(ti, "run_id", None) or context.get("run_id"),
        "try_number": getattr(ti, "try_number", None),
    }
    map_index = getattr(ti, "map_index", -1)
    if isinstance(map_index, int) and not isinstance(map_index, bool) and map_index >= 0:
        job["map_index"] = map_index        # mapped instances share dag, task and run: this tells them apart
    return job


def current_job() -> dict[str, Any] | None:
    """:func:`job_info` of the task instance running in this process (Airflow's task runner sets its
    context), or None outside one (a script, a notebook, a test calling a hook directly)."""
    try:
        context = get_current_context()
    except Exception:  # noqa: BLE001 - no task is running here: no identity to record
        return None
    job = job_info(context)
    return job if job.get("dag_id") and job.get("task_id") and job.get("run_id") else None
