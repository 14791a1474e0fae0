"""A task context for calling operators' ``execute(context)`` directly: a recording task instance."""
from __future__ import annotations

import datetime as dt
import importlib.util
import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
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


def load_dag(path: Path) -> Any:
    """The DAG ``dag`` of the file ``path``, put into this Airflow home's DAG folder (``dag.test()``
    runs a DAG its bundle holds) and loaded from there."""
    from airflow.configuration import conf
    folder = Path(conf.get("core", "dags_folder"))
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(path, folder / path.name)
    spec = importlib.util.spec_from_file_location(path.stem, folder / path.name)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module.dag
