"""Spark entry point of the OPTIMIZE engine: ``spark-submit optimize_job.py '<JSON>'``.

What ``DeltaOptimizeOperator(engine="spark")`` submits. The one argument (or ``@file.json``) is
``{"table_uri": ..., "partition_filter": [[col, op, value], ...] (or a list of such lists: OR) | null,
"target_size": 134217728 | "128mb" | null, "min_file_size": ... | null, "z_order_by": ["x", "y"] | null, "purge": false,
"max_deleted_rows_ratio": null, "job": {...} | null}``; storage options and the commit owner travel
in the environment (:data:`.job_args.SECRETS_ENV`, side ``"table"``), as for :mod:`.job`. On success
it prints ``DELTA_SPARK_JOB_RESULT {<metrics>}`` and exits 0; bad arguments exit 2, a refused or
conflicting OPTIMIZE exits 1 (nothing committed).
"""
from __future__ import annotations

import os
import sys
from typing import Any

if __name__ == "__main__" and __package__ in (None, ""):
    # Run as a file by spark-submit: keep this directory's module names from shadowing others.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from airflow_provider_delta.log import InvalidArgumentError  # noqa: E402
from airflow_provider_delta.spark.job import run_entry  # noqa: E402
from airflow_provider_delta.spark.job_args import table_job_arguments  # noqa: E402
from airflow_provider_delta.spark.optimize_engine import spark_optimize  # noqa: E402
from airflow_provider_delta.spark.tables import open_table  # noqa: E402

#: the keys of the argument document besides ``table_uri``
OPTIONAL_KEYS = ("partition_filter", "target_size", "min_file_size", "z_order_by", "purge",
                 "max_deleted_rows_ratio", "job")


def _conjunction(atoms: Any) -> list[tuple]:
    if not isinstance(atoms, list) or not all(isinstance(a, list) and len(a) == 3 for a in atoms):
        raise InvalidArgumentError("partition_filter must be a list of [column, op, value] triples, or a list of "
                                   "such lists (OR)")
    return [tuple(a) for a in atoms]


def parse_arguments(text: str) -> dict[str, Any]:
    """The argument document, checked for shape (the log layer checks the values against the table)."""
    doc = table_job_arguments(text, "optimize", OPTIONAL_KEYS)
    pf = doc.get("partition_filter")
    if pf is not None:
        # AND of [column, op, value] triples, or (OR) a list of such lists: an atom starts with its column name
        is_or = isinstance(pf, list) and bool(pf) and all(isinstance(c, list) and c and isinstance(c[0], list)
                                                         for c in pf)
        doc["partition_filter"] = [_conjunction(c) for c in pf] if is_or else _conjunction(pf)
    if doc.get("job") is not None and not isinstance(doc["job"], dict):
        raise InvalidArgumentError("job must be an object (dag_id, task_id, run_id, try_number)")
    return doc


def run(spark: Any, doc: dict[str, Any], secrets: dict[str, Any] | None = None) -> dict[str, Any]:
    """OPTIMIZE the table the document names; returns the metrics."""
    side = (secrets or {}).get("table") or {}
    table = open_table(doc["table_uri"], side.get("storage_options"), side.get("commit_owner"),
                       bool(side.get("single_writer", False)))
    kwargs = {k: doc[k] for k in OPTIONAL_KEYS if doc.get(k) is not None}
    return spark_optimize(spark, table, **kwargs)


def main(argv: list[str] | None = None) -> int:
    return run_entry(argv, "optimize_job.py", parse_arguments, lambda doc: f"delta-optimize:{doc['table_uri']}", run)


if __name__ == "__main__":
    sys.exit(main())
