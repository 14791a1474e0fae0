"""A task context for calling operators' ``execute(context)`` directly: a recording task instance."""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

LOGICAL = dt.datetime(2026, 1, 2, tzinfo=dt.timezone.utc)
#: the run part of default exactly-once app ids for this context (no data interval: the logical date)
RUN_KEY = "20260102T000000Z"


@dataclass
class RecordingTaskInstance:
    dag_id: str = "dag"
    task_id: str = "task"
    run_id: str = "scheduled__2026-01-02"
    try_number: int = 1
    map_index: int = -1
    xcoms: dict[str, Any] = field(default_factory=dict)

    def xcom_push(self, key: str, value: Any) -> None:
        json.dumps(value)     # XCom values must be JSON-serializable
        self.xcoms[key] = value


def task_context(**ti_fields: Any) -> dict[str, Any]:
    """``ti``, ``run_id``, the logical date and Airflow's real outlet-event accessors."""
    from airflow.sdk.execution_time.context import OutletEventAccessors
    ti = RecordingTaskInstance(**ti_fields)
    return {"ti": ti, "task_instance": ti, "run_id": ti.run_id, "logical_date": LOGICAL,
            "outlet_events": OutletEventAccessors()}
