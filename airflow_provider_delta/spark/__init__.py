"""Code that runs inside a PySpark application: read pinned snapshots, commit output exactly once.

Public API (pyspark is imported only when these are first used, so the Airflow
side can import the Spark-free helpers of this package)::

    from airflow_provider_delta.spark import read_snapshot, commit_dataframe
    df = read_snapshot(spark, manifest_uri)                   # or table_uri=..., version=...
    version = commit_dataframe(df, "/data/out", mode="append", app_id="dag.task", app_version=42)

A Delta Spark job run by ``DeltaSparkApplicationOperator`` reads its context instead
(standard library only; see :mod:`.delta_job`)::

    from airflow_provider_delta.spark import delta_job_context
    ctx = delta_job_context()      # input_table_uri, input_version, output_table_uri, write_options...
    apply_hadoop_conf(spark)       # tables on S3: the delta connection's credentials, per bucket

No Airflow import here: this layer sits below hooks and operators.
"""
from __future__ import annotations

from typing import Any

__all__ = ["read_snapshot", "commit_dataframe", "pin", "PinnedSnapshot", "JobSpec", "delta_job_context",
           "DeltaJobContext", "DeltaJobContextError", "apply_hadoop_conf"]


def __getattr__(name: str) -> Any:
    if name == "read_snapshot":
        from .reader import read_snapshot
        return read_snapshot
    if name == "pin":
        from .reader import pin
        return pin
    if name == "commit_dataframe":
        from .commit import commit_dataframe
        return commit_dataframe
    if name == "PinnedSnapshot":
        from .pinned import PinnedSnapshot
        return PinnedSnapshot
    if name in ("delta_job_context", "DeltaJobContext", "DeltaJobContextError", "apply_hadoop_conf"):
        from . import delta_job
        return getattr(delta_job, name)
    if name == "JobSpec":
        from .job_args import JobSpec
        return JobSpec
    raise AttributeError(name)
