"""Spark entry point: read a pinned snapshot, transform, commit the output exactly once.

Run by ``spark-submit <path of this file> '<JSON arguments>'`` (what
``DeltaSparkSubmitOperator`` does) or ``python -m airflow_provider_delta.spark.job
'<JSON>'`` (a local Spark session). The arguments are described in
:mod:`.job_args`; the argument may also be ``@file.json``. On success the job
prints one line ``DELTA_SPARK_JOB_RESULT {"version": ..., "committed": ...}``
and exits 0; bad arguments exit 2, any failure exits 1 (nothing committed).
"""
from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any, Callable

if __name__ == "__main__" and __package__ in (None, ""):
    # Run as a file by spark-submit: this directory is sys.path[0], where its module
    # names could shadow others; the package itself is importable from site-packages.
    _here = os.path.dirname(os.path.abspath(__file__))
    sys.path[:] = [p for p in sys.path if os.path.abspath(p or ".") != _here]

from airflow_provider_delta.log import DeltaError, InvalidArgumentError, check_pair_not_undone  # noqa: E402
from airflow_provider_delta.spark.job_args import RESULT_MARK, JobSpec, read_secrets  # noqa: E402

log = logging.getLogger("airflow_provider_delta.spark.job")

MASTER_ENV = "DELTA_SPARK_MASTER"


def get_spark(app_name: str) -> Any:
    """The Spark session: spark-submit's, or a local one when run as a plain Python program."""
    from pyspark.sql import SparkSession
    builder = SparkSession.builder.appName(app_name)
    if "PYSPARK_GATEWAY_PORT" not in os.environ and "--master" not in os.environ.get("PYSPARK_SUBMIT_ARGS", ""):
        builder = builder.master(os.environ.get(MASTER_ENV, "local[*]"))
    return builder.getOrCreate()


def run(spark: Any, spec: JobSpec, secrets: dict[str, Any] | None = None) -> dict[str, Any]:
    """Do the job in ``spark``; returns ``{"version", "committed", "app_id", "app_version", ...}``."""
    # Imported here, not above: the other entry points (checkpoint_job, optimize_job) import this module
    # for run_entry and need none of these (group_write brings SQLAlchemy); no import circle.
    from airflow_provider_delta.spark import exactly_once
    from airflow_provider_delta.spark.changes import changes_dataframe
    from airflow_provider_delta.spark.commit import commit_dataframe
    from airflow_provider_delta.spark.group_write import GroupWrite
    from airflow_provider_delta.spark.reader import dataframe_of, describe, pin
    from airflow_provider_delta.spark.s3a import apply_s3a
    from airflow_provider_delta.spark.tables import open_table
    from airflow_provider_delta.spark.transforms import resolve

    secrets = secrets or {}
    inp, outp = secrets.get("input") or {}, secrets.get("output") or {}
    transform = resolve(spec.transform)
    # Spark reaches S3 tables through s3a with the same credentials as the log (set before first use)
    apply_s3a(spark, spec.output_table_uri, outp.get("storage_options"))
    group = None
    if spec.transaction_id is not None:       # stage into the catalog group instead of committing
        group = GroupWrite(outp.get("catalog"), outp.get("storage_options"), spec.transaction_id,
                           spec.output_table_uri, spec.writer)
        output = group.table
    else:
        output = open_table(spec.output_table_uri, outp.get("storage_options"), outp.get("commit_owner"),
                            bool(outp.get("single_writer", False)))
    result: dict[str, Any] = {"table_uri": output.uri, "app_id": spec.app_id, "app_version": spec.app_version}
    if group is not None:
        result["transaction_id"] = spec.transaction_id
        staged = group.staged_version()
        if staged is not None:    # an earlier try staged this writer's commit: stage nothing again
            log.info("%s already has this writer's staged commit in transaction %s: skipping", output.uri,
                     spec.transaction_id)
            return {**result, "committed": False, "staged": True, "version": staged}
    recorded = exactly_once.skip_basis(output, spec.app_id, spec.app_version)
    if recorded is not None:
        # checked before reading or transforming anything: a retried task costs nothing
        if not spec.incremental:        # a skip must not report a write a later RESTORE undid
            check_pair_not_undone(output, spec.app_id, spec.app_version, recorded=recorded)  # type: ignore[arg-type]
        log.info("version %s of %r is already committed to %s: skipping", spec.app_version, spec.app_id, output.uri)
        return {**result, "committed": False,
                "version": exactly_once.find_txn_commit(output, spec.app_id, spec.app_version)}  # type: ignore[arg-type]
    source = None
    if spec.incremental:
        apply_s3a(spark, spec.input_table_uri, inp.get("storage_options"))  # type: ignore[arg-type]
        source = changes_dataframe(spark, spec.input_table_uri, spec.input_starting_version,  # type: ignore[arg-type]
                                   spec.input_version, inp.get("storage_options"), inp.get("commit_owner"))
        log.info("reading the changes of %s, versions %s..%s", spec.input_table_uri, spec.input_starting_version,
                 spec.input_version)
        result.update(input_version=spec.input_version, input_starting_version=spec.input_starting_version)
    elif spec.has_input:
        pinned = pin(spec.input_manifest_uri, spec.input_table_uri, spec.input_version,
                     inp.get("storage_options"), inp.get("commit_owner"))
        log.info("reading pinned snapshot %s", describe(pinned))
        apply_s3a(spark, pinned.table_uri, inp.get("storage_options"))
        source = dataframe_of(spark, pinned)
        result["input_version"] = pinned.version
    df = transform(spark, source, **spec.params)
    if df is None or not hasattr(df, "write"):
        raise InvalidArgumentError(f"transform {spec.transform!r} returned {type(df).__name__}, not a DataFrame")
    write_args = dict(mode=spec.mode, app_id=spec.app_id, app_version=spec.app_version,
                      partition_by=spec.partition_by, job=spec.job, properties=spec.properties)
    if group is not None:
        version = group.stage(df, **write_args)
        if version is not None:
            return {**result, "committed": True, "staged": True, "version": version}
    else:
        version = commit_dataframe(df, output, **write_args)
    if version is None:
        version = exactly_once.find_txn_commit(output, spec.app_id, spec.app_version)  # type: ignore[arg-type]
        return {**result, "committed": False, "version": version}
    return {**result, "committed": True, "version": version}


def main(argv: list[str] | None = None) -> int:
    return run_entry(argv, "job.py", JobSpec.parse, lambda spec: f"delta:{spec.app_id or spec.transform}", run)


def run_entry(argv: list[str] | None, program: str, parse: Callable[[str], Any], app_name: Callable[[Any], str],
              work: Callable[[Any, Any, dict[str, Any]], dict[str, Any]]) -> int:
    """The life of an entry point: one JSON argument, secrets from the environment, a session, a result line.

    ``parse`` turns the argument into the job's document (InvalidArgumentError: exit 2), ``work``
    does the job in the session (a DeltaError: exit 1); on success the result is printed after
    :data:`RESULT_MARK` and the exit code is 0. The session is stopped in every case.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    if len(argv) != 1:
        print(f"usage: {program} '<JSON arguments>' | @arguments.json", file=sys.stderr)
        return 2
    try:
        doc = parse(argv[0])
        secrets = read_secrets()
    except (InvalidArgumentError, OSError) as e:
        print(f"ERROR: {e}", file=sys.stderr)
        return 2
    spark = get_spark(app_name(doc))
    try:
        result = work(spark, doc, secrets)
    except DeltaError as e:
        log.error("%s: %s", type(e).__name__, e)
        return 1
    finally:
        spark.stop()
    print(RESULT_MARK + json.dumps(result, default=str), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
