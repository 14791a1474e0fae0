"""Run one DAG of ``$AIRFLOW__CORE__DAGS_FOLDER`` with ``dag.test()`` and print a JSON report.

Used by the integration tests as a subprocess, so that each run gets the Airflow
home, database and connections its environment names (Airflow reads them at
import). ``dag.test()`` does not raise when a task fails; the report carries the
run's state, each task's state, all XComs and all asset events for the tests to check.
``DELTA_DAG_RUN_CONF`` (JSON) is passed as the run's conf; ``DELTA_DAG_RUN_NO_LOGICAL_DATE`` makes
the run a manual one without a logical date (what ``airflow dags trigger`` makes in Airflow 3);
``DELTA_DAG_RUN_LOGICAL_DATE`` (ISO) fixes the logical date and ``run_after``: a second run with the same
one is the same run (run id) with its tasks cleared, as ``airflow tasks clear`` leaves it.
"""
from __future__ import annotations

import json
import os
import sys

REPORT_MARK = "@@DAG_TEST_REPORT@@"


def main(dag_id: str) -> int:
    from airflow.dag_processing.dagbag import DagBag

    bag = DagBag(dag_folder=os.environ["AIRFLOW__CORE__DAGS_FOLDER"])
    if dag_id not in bag.dags:
        print(f"DAG {dag_id!r} not found; import errors: {bag.import_errors}", file=sys.stderr)
        return 2
    dag = bag.dags[dag_id]
    conf = os.environ.get("DELTA_DAG_RUN_CONF")        # the run's conf, as JSON (optional)
    kwargs: dict = {"run_conf": json.loads(conf)} if conf else {}
    if os.environ.get("DELTA_DAG_RUN_NO_LOGICAL_DATE"):  # as `airflow dags trigger` / the UI's Trigger make it
        kwargs["logical_date"] = None
    if os.environ.get("DELTA_DAG_RUN_LOGICAL_DATE"):     # run again with it: dag.test clears the run's tasks
        from datetime import datetime
        when = datetime.fromisoformat(os.environ["DELTA_DAG_RUN_LOGICAL_DATE"])
        kwargs["logical_date"] = kwargs["run_after"] = when
    dr = dag.test(**kwargs)

    from sqlalchemy import select

    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.models.taskinstance import TaskInstance
    from airflow.models.xcom import XComModel
    from airflow.utils.session import create_session

    with create_session() as session:
        tis = session.scalars(select(TaskInstance).where(TaskInstance.dag_id == dag_id,
                                                         TaskInstance.run_id == dr.run_id)).all()
        tasks = {ti.task_id: str(ti.state) for ti in tis}
        xcoms: dict[str, dict] = {}
        for x in session.scalars(select(XComModel).where(XComModel.dag_id == dag_id,
                                                         XComModel.run_id == dr.run_id)).all():
            value = x.value
            if isinstance(value, (str, bytes)):
                try:
                    value = json.loads(value)
                except ValueError:
                    pass
            xcoms.setdefault(x.task_id, {})[x.key] = value
        events = []
        for ev, uri in session.execute(select(AssetEvent, AssetModel.uri).join(
                AssetModel, AssetModel.id == AssetEvent.asset_id)).all():
            events.append({"uri": uri, "extra": ev.extra, "source_task_id": ev.source_task_id,
                           "source_run_id": ev.source_run_id})
        state = str(session.get(type(dr), dr.id).state) if hasattr(dr, "id") else str(dr.state)
    print(REPORT_MARK + json.dumps({"state": state, "tasks": tasks, "xcoms": xcoms,
                                    "asset_events": events}, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
