"""One try of the failure matrix's Airflow task, as its own process: ``python matrix_task.py '<JSON>'``.

Runs ``DeltaSparkSubmitOperator.execute`` (real spark-submit) and writes what the try produced
to the ``result`` file: its return value, or its error, and the asset event Airflow would
record (the extra of the outlet, only when the try succeeds). SIGTERM does what Airflow's task
runner does when a task is killed: ``on_kill``, then exit.
"""
from __future__ import annotations

import json
import os
import signal
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from task_context import task_context  # noqa: E402


def main() -> None:
    cfg = json.loads(sys.argv[1])
    from airflow_provider_delta.assets import to_asset
    from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
    asset = to_asset(table_uri=cfg["out"])
    op = DeltaSparkSubmitOperator(outlets=[asset], **cfg["operator"])

    def killed(signum, frame):
        op.on_kill()
        os._exit(143)
    signal.signal(signal.SIGTERM, killed)
    ctx = task_context(task_id=cfg["operator"]["task_id"], try_number=cfg["try_number"])
    result: dict = {"try_number": cfg["try_number"]}
    try:
        result["return"] = op.execute(ctx)
        result["event"] = dict(ctx["outlet_events"][asset].extra) if op.outlets else None
    except BaseException as e:  # recorded for the test
        result["error"] = f"{type(e).__name__}: {e}"[:2000]
        result["event"] = None
    with open(cfg["result"], "w") as f:
        json.dump(result, f)


if __name__ == "__main__":
    main()
