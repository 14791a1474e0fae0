"""Example DAG ``delta_test_copy``: try a change on a zero-copy clone of ``orders``; orders never changes.

``clone_orders`` (``DeltaCloneOperator``) creates a shallow clone of orders, at its latest
version, in a new folder per run under ``<base>/test_copies/``: a table whose files are
orders' own, referenced where they are, so it costs one commit whatever the size of orders.
The source is read through the ``delta_example`` connection (the managed table's commit
owner); the clone is a plain filesystem table. ``try_change`` appends to the clone (the
change under test) and reports both tables' versions: writes to a clone never touch its
source. ``drop_old_copies`` then deletes this DAG's older copies, keeping the newest
``KEEP_COPIES`` (this run's among them): only folders named ``orders_*`` directly under
``test_copies/`` whose first commit is a ``CLONE`` made by this DAG's ``clone_orders`` task;
anything else there is left alone. (A clone reads orders' files: a vacuum of orders may
delete files an old copy still reads, one more reason not to keep copies around.)
Not scheduled: ``airflow dags trigger delta_test_copy``.
"""
from __future__ import annotations

import os
from datetime import datetime

from airflow.sdk import DAG, task

from airflow_provider_delta.operators import DeltaCloneOperator
from example_settings import BASE, ORDERS, ORDERS_CONN_ID

DAG_ID = "delta_test_copy"
CLONE_TASK = "clone_orders"
TEST_COPIES = os.path.join(BASE, "test_copies")
#: the naming rule of this DAG's copies (one folder per run: a clone is created in a new or empty location)
COPY_PREFIX = "orders_"
TEST_COPY = os.path.join(TEST_COPIES, COPY_PREFIX + "{{ run_id | replace(':', '-') | replace('+', '-') }}")
#: how many copies stay after a run (the newest, this run's included)
KEEP_COPIES = 3


@task
def try_change(copy: dict) -> dict:
    """Append the clone's first rows to it again (a stand-in for the change under test)."""
    from airflow_provider_delta.hooks import DeltaTableHook

    hook = DeltaTableHook()
    rows = hook.snapshot(copy["table_uri"]).to_pyarrow().slice(0, 10)
    copy_version = hook.write_table(copy["table_uri"], rows)
    return {"copy_version": copy_version, "rows_added": rows.num_rows,
            "orders_version": DeltaTableHook(ORDERS_CONN_ID).latest_version(ORDERS)}


def made_here(path: str) -> int | None:
    """When this DAG's clone task created the copy at ``path`` (its CLONE commit's timestamp, ms), or
    None for anything else: another table, a folder that is no table, a link, an unreadable log."""
    from airflow_provider_delta.log import DeltaError, DeltaTable

    if os.path.islink(path) or not os.path.isdir(path):
        return None
    try:
        first = DeltaTable(path).history()[-1]              # newest first: the last entry is version 0
    except (DeltaError, OSError, ValueError):
        return None
    job = first.get("job") or {}
    if (first.get("version") == 0 and first.get("operation") == "CLONE" and job.get("dag_id") == DAG_ID
            and job.get("task_id") == CLONE_TASK):
        return int(first["timestamp"])
    return None


@task
def drop_old_copies(copy: dict) -> dict:
    """Delete this DAG's copies but the newest ``KEEP_COPIES``; never this run's, never anything else."""
    import shutil

    current = os.path.realpath(copy["table_uri"].removeprefix("file://"))
    made: dict[str, int] = {}
    left_alone: list[str] = []
    for name in sorted(os.listdir(TEST_COPIES)):
        path = os.path.join(TEST_COPIES, name)
        created = made_here(path) if name.startswith(COPY_PREFIX) else None
        if created is None:
            left_alone.append(name)
        else:
            made[path] = created
    newest = sorted(made, key=lambda p: (made[p], p), reverse=True)
    keep = [p for p in newest if os.path.realpath(p) == current]
    keep += [p for p in newest if p not in keep][:KEEP_COPIES - len(keep)]
    dropped = [p for p in newest if p not in keep]
    for path in dropped:
        shutil.rmtree(path)
    return {"kept": sorted(os.path.basename(p) for p in keep),
            "dropped": sorted(os.path.basename(p) for p in dropped), "left_alone": left_alone}


with DAG(DAG_ID, schedule=None, start_date=datetime(2026, 1, 1), catchup=False, max_active_runs=1,
         tags=["delta", "example"], doc_md=__doc__):
    # [START howto_operator_delta_clone]
    clone = DeltaCloneOperator(
        task_id=CLONE_TASK,
        source_uri=ORDERS,
        source_conn_id=ORDERS_CONN_ID,     # the source's connection (its commit owner); the clone needs none
        table_uri=TEST_COPY,               # version= or timestamp= clone an earlier version
    )
    # [END howto_operator_delta_clone]
    try_change(clone.output) >> drop_old_copies(clone.output)
