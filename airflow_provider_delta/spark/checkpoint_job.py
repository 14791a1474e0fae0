"""Spark entry point of the checkpoint engine: ``spark-submit checkpoint_job.py '<JSON>'``.

What ``DeltaCheckpointOperator(engine="spark")`` submits. The one argument (or
``@file.json``) is ``{"table_uri": ..., "version": 12 | null, "parts": 8 | null,
"actions_per_part": 1000000 | null, "now_ms": null}``; storage options and the commit owner
travel in the environment (:data:`.job_args.SECRETS_ENV`, side ``"table"``), as for
:mod:`.job`. On success it prints ``DELTA_SPARK_JOB_RESULT {<_last_checkpoint>}`` and
exits 0; bad arguments exit 2, a refused or failed checkpoint exits 1 (nothing published).
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
from airflow_provider_delta.spark.checkpoint_engine import spark_checkpoint  # noqa: E402
from airflow_provider_delta.spark.job import run_entry  # noqa: E402
from airflow_provider_delta.spark.job_args import table_job_arguments  # noqa: E402
from airflow_provider_delta.spark.tables import open_table  # noqa: E402


#: the keys of the argument document besides ``table_uri``; each an integer or null
OPTIONAL_INTS = ("version", "parts", "actions_per_part", "now_ms")


def parse_arguments(text: str) -> dict[str, Any]:
    """The argument document, checked: a table URI and optional non-negative integers."""
    doc = table_job_arguments(text, "checkpoint", OPTIONAL_INTS)
    for key in OPTIONAL_INTS:
        value = doc.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
            raise InvalidArgumentError(f"{key} must be a non-negative integer or null, got {value!r}")
    return doc


def run(spark: Any, doc: dict[str, Any], secrets: dict[str, Any] | None = None) -> dict[str, Any]:
    """Checkpoint the table the document names; returns the ``_last_checkpoint`` content."""
    side = (secrets or {}).get("table") or {}
    table = open_table(doc["table_uri"], side.get("storage_options"), side.get("commit_owner"),
                       bool(side.get("single_writer", False)))
    return spark_checkpoint(spark, table, doc.get("version"), doc.get("parts"), now_ms=doc.get("now_ms"),
                            actions_per_part=doc.get("actions_per_part"))


def main(argv: list[str] | None = None) -> int:
    return run_entry(argv, "checkpoint_job.py", parse_arguments, lambda doc: f"delta-checkpoint:{doc['table_uri']}",
                     run)


if __name__ == "__main__":
    sys.exit(main())
