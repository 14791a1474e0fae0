"""What spark-submit and ``delta_job.run_application`` give a Delta Spark application, in this process.

The in-process stand-ins for ``SparkSubmitOperator.execute`` (tests that run the application in
the test's Spark session instead of a spark-submit) use this, so that they see what a real
submit gives: ``SparkConf``'s Delta settings (the operator's ``--conf``: the app id, autoReset,
the run marker) in the session, which the entry then arms with ``txnVersion``. The real entry
runs in the spark-submit tests (tests/spark/test_delta_spark_operator.py).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Any, Iterator, Mapping

from airflow_provider_delta.spark.delta_job import APPLICATION_ARG, DeltaJobContext, delta_job_context


def application_args(op: Any) -> list[str]:
    """The arguments the user's application sees (the entry takes its own one away)."""
    return [a for a in op.application_args or [] if not str(a).startswith(APPLICATION_ARG + "=")]


@contextmanager
def submitted_session(op: Any, session: Any, environ: Mapping[str, str] | None = None) -> Iterator[DeltaJobContext]:
    """``session`` as the application's: the operator's Delta ``--conf`` settings, armed as the entry
    arms it; the settings are taken away afterwards. Yields the application's job context."""
    job = delta_job_context(application_args(op), environ={} if environ is None else environ)
    delta_conf = {k: v for k, v in (op.conf or {}).items() if k.startswith("spark.databricks.delta.")}
    for key, value in delta_conf.items():
        session.conf.set(key, value)
    job.arm_session(session)
    try:
        yield job
    finally:
        for key in {*delta_conf, *job.session_conf}:
            session.conf.unset(key)
