"""``DeltaSparkSubmitOperator``: a PySpark job that reads a pinned snapshot and commits exactly once.

A thin layer over the Spark provider's ``SparkSubmitOperator``. It runs our entry
point (:mod:`airflow_provider_delta.spark.job`, or your own ``application``) with
one JSON argument naming input, output, transform and the exactly-once marker
``(app_id, app_version)``, and uses the output table itself as the channel back:

* before submitting, if the table already records ``app_version`` (or later) for
  ``app_id``, the job is not submitted at all (a retry of a task whose first try
  committed costs no Spark time);
* after the job, the table must record it; the version of the commit that did
  is the task's XCom ``return_value`` and goes into the asset events.

With ``transaction_id`` (write-audit-publish) the driver stages its commit into that
multi-table transaction of the delta connection's catalog instead of committing: nothing
is visible until ``DeltaPublishTransactionOperator`` publishes the group. The channel back is
then the group itself: a try whose writer (``<dag_id>:<task_id>[<map_index>]``) already
staged the table is not submitted, and after the job the group must hold its member.

Without a Spark connection (``conn_id`` not defined) the job runs in local mode,
``--master local[*]``, with pyspark's bundled ``spark-submit`` when none is on
PATH and the worker's Python as the driver's.
"""
from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Sequence

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from ..hooks.arguments import (NOT_GIVEN, DeltaArgumentError, column_names, flag, input_manifest, is_template,
                               checked_table_properties, manifest_argument, mapping, optional_int,
                               optional_value, parse_transaction_id, refused_without_retry, string_map)
from ..hooks.manifest import read_manifest
from ..hooks.run_identity import task_key
from ..log import CommitFailedError, InvalidArgumentError, check_mode
from ..spark import exactly_once
from ..spark.job_args import SECRETS_ENV, JobSpec
from .base import DeltaTaskMixin, job_info
from ..hooks.undone_by_restore import refuse_undone_pair
from .spark_base import (LOCAL_MASTER, LocalSparkMixin, StopDriverOnKillMixin, bundled_spark_submit,
                         committed_pair_id, default_app_version, job_secrets, incremental_range,
                         report_commit,
                         resolve_app)

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context

__all__ = ["DeltaSparkSubmitOperator", "DEFAULT_APPLICATION", "LOCAL_MASTER", "bundled_spark_submit",
           "default_app_version"]

#: the entry point run when no ``application`` is given
DEFAULT_APPLICATION = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "spark", "job.py")


def write_mode(value: object) -> str:
    """The rendered ``mode``, spelled exactly as ``DeltaTable.write`` takes it (the log layer's rule);
    anything else (``"None"``, ``"Overwrite"``) fails the task without retry."""
    try:
        return check_mode(value)
    except InvalidArgumentError as e:
        raise DeltaArgumentError(f"{e} (a rendered template? the mode is spelled exactly)") from None


class DeltaSparkSubmitOperator(DeltaTaskMixin, StopDriverOnKillMixin, LocalSparkMixin, SparkSubmitOperator):
    """Run a PySpark transform from a pinned Delta snapshot into a Delta table, committing once.

    :param output_table_uri: table to commit to (absolute, or relative to the delta connection's base URI)
    :param transform: ``package.module:function`` (importable on the driver, e.g. via ``py_files``)
        or a builtin (``identity``, ``sql``); called as ``func(spark, source, **transform_params)``
    :param input_manifest_uri: manifest written by ``DeltaTimeTravelSnapshotOperator`` (templated; one that
        renders to ``"None"``, a snapshot that wrote no manifest, fails the task: see
        :func:`~..hooks.arguments.input_manifest`)
    :param input_table_uri: or a table to read, at ``input_version`` (default: latest when the job runs)
    :param input_version: the version of ``input_table_uri`` to read (templated; ``""``/``"None"``: the
        latest when the job runs)
    :param mode: ``append`` or ``overwrite`` (spelled exactly)
    :param partition_by: partition columns when the job creates the output table (a list, ``"a,b"``
        a JSON list, or a list param rendered as Python text, ``"['a', 'b']"``; other bracketed text is refused)
    :param table_properties: table properties when the job creates the output table (a dict of strings),
        checked before anything is submitted (a misspelt ``delta.*`` name or a value Delta Spark refuses
        fails the task without retry). For a table that exists (or that another writer creates first)
        they are not applied: the job writes, and its log warns about those the table holds otherwise
    :param transform_params: JSON-serializable keyword arguments of the transform (templated)
    :param app_id: exactly-once id (default ``<dag_id>:<task_id>[<map_index>]@<run key>``: ``[<map_index>]``
        only when mapped; the run key is the data interval, else the logical date, else the run id; see
        :mod:`~airflow_provider_delta.hooks.run_identity`). One given is used as it is
    :param app_version: exactly-once version (templated; default: the data interval's end, else the
        logical date, else ``run_after``, in epoch seconds)
    :param delta_conn_id: ``delta`` connection for both tables (storage options, commit owner)
    :param master: Spark master; overrides the Spark connection's (default: the connection's,
        or ``local[*]`` when ``conn_id`` is not defined)
    :param conn_id: Spark connection (as for ``SparkSubmitOperator``)
    :param application: the PySpark program (default: this package's entry point)
    :param name: the Spark application's name (default ``delta-<task_id>``)
    :param input_changes: incremental mode: the input is the change feed of ``input_table_uri`` from the
        version after the one this job last committed (the output's ``txn(app_id)``) to the pinned
        ``input_version`` (default: the latest), which becomes ``app_version``, so neither ``app_version``
        nor a manifest may be given; ``app_id`` is then the same for every run (default
        ``<dag_id>:<task_id>[<map_index>]``, no run key). A bool or true/false/1/0/yes/no (default False)
    :param initial_version: incremental mode: where the first run starts (default 0)
    :param transaction_id: a multi-table transaction of the delta connection's catalog (templated,
        e.g. ``{{ ti.xcom_pull(task_ids='begin') }}``): stage the commit into it instead of committing;
        the output must be a catalog-managed table of that catalog. Returns the proposed version.
        Given, it must render to an id: ``"None"``/``""`` (a missing XCom) fails the task with
        ``DeltaArgumentError`` before anything is submitted (no retry), never a plain commit

    Other keywords go to ``SparkSubmitOperator`` (``conf``, ``py_files``, ``driver_memory``...).
    Returns (XCom ``return_value``) the version holding this run's output; XCom ``commit`` holds
    ``{"version", "committed", "table_uri", "app_id", "app_version"}`` (``committed`` is False
    when an earlier try had already committed).
    """

    template_fields: Sequence[str] = tuple(SparkSubmitOperator.template_fields) + (
        "output_table_uri", "input_manifest_uri", "input_table_uri", "input_version", "transform",
        "transform_params", "app_id", "app_version", "delta_conn_id", "mode", "master",
        "partition_by", "table_properties", "input_changes", "initial_version", "transaction_id")
    template_fields_renderers = {"transform_params": "json"}
    ui_color = "#00add4"

    def __init__(self, *, output_table_uri: str, transform: str, input_manifest_uri: Any = NOT_GIVEN,
                 input_table_uri: str | None = None, input_version: int | str | None = None,
                 mode: str = "append", partition_by: list[str] | None = None,
                 table_properties: dict[str, Any] | None = None, transform_params: dict[str, Any] | None = None,
                 app_id: str | None = None, app_version: int | str | None = None,
                 delta_conn_id: str | None = None, master: str | None = None, conn_id: str = "spark_default",
                 application: str | None = None, name: str | None = None, input_changes: bool = False,
                 initial_version: int = 0, transaction_id: str | None = None, **kwargs: Any) -> None:
        input_manifest_uri, reads_manifest = manifest_argument(input_manifest_uri, input_table_uri)
        if not is_template(input_changes) and flag(input_changes, "input_changes") and (
                app_version is not None or input_manifest_uri is not None):
            raise InvalidArgumentError("input_changes=True reads input_table_uri's changes and uses the pinned "
                                       "input version as app_version: pass neither app_version nor a manifest")
        # plain values are checked now (the DAG fails to import); templates once rendered, in build_spec
        if not is_template(mode):
            write_mode(mode)
        if not is_template(partition_by):
            column_names(partition_by, "partition_by")
        if not is_template(table_properties):
            if any(is_template(x) for item in mapping(table_properties, "table_properties").items() for x in item):
                string_map(table_properties, "table_properties")      # the rest once the entries are rendered
            else:
                checked_table_properties(table_properties, "table_properties")
        super().__init__(application=application or DEFAULT_APPLICATION, conn_id=conn_id,
                         name=name or f"delta-{kwargs.get('task_id', 'spark')}", **kwargs)
        self.output_table_uri = output_table_uri
        self.transform = transform
        self.input_manifest_uri = input_manifest_uri
        self.reads_manifest = reads_manifest   # then a manifest that renders to None is an error
        self.input_table_uri = input_table_uri
        self.input_version = input_version
        self.mode = mode
        self.partition_by = partition_by
        self.table_properties = table_properties
        self.transform_params = transform_params or {}
        self.app_id = app_id
        self.app_version = app_version
        self.delta_conn_id = delta_conn_id
        self.master = master
        self.input_changes = input_changes     # a flag: parsed when the task runs (templated)
        self.initial_version = initial_version
        self.transaction_id = transaction_id
        self.stages = transaction_id is not None     # then an id that renders to nothing is an error

    # DeltaTaskMixin works on ``table_uri``: here, the table the job commits to.
    @property
    def table_uri(self) -> str:  # type: ignore[override]
        return self.output_table_uri

    # ------------------------------------------------------------------ inputs
    def _app(self, context: "Context") -> tuple[str, int]:
        return resolve_app(self.app_id, self.app_version, context, self)

    def _incremental(self, context: "Context", input_table: Any) -> tuple[str, int, int]:
        """(app_id, pinned input version = app_version, first unprocessed version) of an incremental run."""
        if input_table is None:
            raise DeltaArgumentError("input_changes=True needs input_table_uri")
        uri = self.hook.resolve_uri(str(input_table))
        pinned = optional_int(self.input_version, "input_version")
        if pinned is None:
            pinned = self.hook.latest_version(uri)
        rng = incremental_range(self, context, uri, pinned)
        if rng.empty and rng.resumed_from is not None:
            return rng.resumed_from, pinned, rng.start      # nothing to do: the commit holding the position
        return rng.app_id, pinned, rng.start

    def _side(self, uri: str) -> dict[str, Any]:
        return job_secrets(self.hook, uri)

    def build_spec(self, context: "Context") -> tuple[JobSpec, dict[str, Any]]:
        """The job's arguments and its secrets, from the rendered fields and the connections."""
        manifest = input_manifest(self.input_manifest_uri, self.reads_manifest)
        input_table = optional_value(self.input_table_uri)
        starting = None
        if self.input_changes:   # the changes after the output's txn(app_id) up to the pinned version
            app_id, app_version, starting = self._incremental(context, input_table)
            input_version: int | None = app_version
        else:
            app_id, app_version = self._app(context)
            input_version = optional_int(self.input_version, "input_version")
        params = self.transform_params
        if isinstance(params, str):
            try:
                params = json.loads(params) if params.strip() else {}
            except ValueError as e:
                raise DeltaArgumentError(f"transform_params must be a JSON object, got {params!r}: {e}") from None
        spec = JobSpec(
            output_table_uri=self.hook.resolve_uri(self.output_table_uri), transform=str(self.transform),
            mode=write_mode(self.mode),
            partition_by=column_names(self.partition_by, "partition_by"),
            properties=checked_table_properties(self.table_properties, "table_properties") or None,
            input_manifest_uri=str(manifest) if manifest is not None else None,
            input_table_uri=self.hook.resolve_uri(input_table) if input_table is not None else None,
            input_version=input_version, input_starting_version=starting, app_id=app_id,
            app_version=app_version, params=params, job=job_info(context),
            transaction_id=self._transaction(),
            writer=task_key(context, self) if self._transaction() else None)
        with refused_without_retry("the Spark job's arguments"):     # a retry renders the same values
            spec.validate()
        secrets: dict[str, Any] = {}
        out_side = self._side(self.output_table_uri)
        if out_side:
            secrets["output"] = out_side
        in_uri = input_table if input_table is not None else manifest
        if in_uri is not None:
            in_side = self._side(str(in_uri))
            if in_side:
                secrets["input"] = in_side
        return spec, secrets

    def _transaction(self) -> str | None:
        """The transaction to stage into; a task built with one whose id renders to nothing (a missing
        XCom) is refused before anything is submitted, rather than turned into a plain commit."""
        return parse_transaction_id(self.transaction_id, "transaction_id", required=self.stages)

    # --------------------------------------------------------------- execution
    def execute(self, context: "Context") -> int | None:
        self.input_changes = flag(self.input_changes, "input_changes")
        spec, secrets = self.build_spec(context)
        if spec.transaction_id is not None:
            return self._stage(context, spec, secrets)
        table = self.hook.get_table(spec.output_table_uri)
        if not spec.incremental:
            spec.app_id = committed_pair_id(table, spec.app_id, spec.app_version, context, self)  # type: ignore[arg-type]
        recorded = exactly_once.skip_basis(table, spec.app_id, spec.app_version)
        if recorded is not None:
            if not spec.incremental:    # an incremental position's commit undone: open (see the Spark jobs guide)
                refuse_undone_pair(table, spec.app_id, spec.app_version, recorded=recorded)  # type: ignore[arg-type]
            self.log.info("%s already holds version %s of %r: not submitting the Spark job",
                          table.uri, spec.app_version, spec.app_id)
            return self._finish(context, table, spec, committed=False)
        if spec.incremental and spec.input_starting_version > spec.input_version:  # type: ignore[operator]
            self.log.info("no changes of %s to process (next version %s, pinned %s): not submitting",
                          spec.input_table_uri, spec.input_starting_version, spec.input_version)
            return self._finish(context, table, spec, committed=False)
        self._submit(context, spec, secrets)
        if not exactly_once.already_committed(table, spec.app_id, spec.app_version):
            raise CommitFailedError(
                f"the Spark job finished but {table.uri} holds no commit of version {spec.app_version} of "
                f"{spec.app_id!r}; see the spark-submit output above", retryable=True)
        return self._finish(context, table, spec, committed=True)

    def _submit(self, context: "Context", spec: JobSpec, secrets: dict[str, Any]) -> None:
        self.application_args = [spec.to_json()]
        env = dict(self.env_vars or {})
        if secrets:
            env[SECRETS_ENV] = json.dumps(secrets)
        self.env_vars = env      # routed for the master by LocalSparkMixin._get_hook (.spark_secrets)
        try:
            super().execute(context)
        finally:
            self._close_driver_secrets()

    def _stage(self, context: "Context", spec: JobSpec, secrets: dict[str, Any]) -> int:
        """Write-audit-publish: the job stages into the group; this try submits only if its writer has
        not staged the table yet, and the group must hold the member afterwards."""
        tx, uri, writer = spec.transaction_id, spec.output_table_uri, spec.writer
        staged = self.hook.staged_version(tx, uri, writer)    # type: ignore[arg-type]
        submitted = staged is None
        if submitted:
            self._submit(context, spec, secrets)
            staged = self.hook.staged_version(tx, uri, writer)    # type: ignore[arg-type]
            if staged is None:
                raise CommitFailedError(
                    f"the Spark job finished but transaction {tx} holds no staged commit of {uri} by {writer!r}; see "
                    "the spark-submit output above", retryable=True)
        else:
            self.log.info("transaction %s already holds %s's staged commit of %s (an earlier try): not submitting",
                          tx, writer, uri)
        context["ti"].xcom_push(key="commit", value={"version": staged, "staged": True, "submitted": submitted,
                                                     "transaction_id": tx, "table_uri": uri})
        return staged  # type: ignore[return-value]

    def _finish(self, context: "Context", table: Any, spec: JobSpec, committed: bool) -> int | None:
        version = report_commit(self, context, table, spec.app_id, spec.app_version,  # type: ignore[arg-type]
                                committed=committed)
        if committed:   # the job read the input table (at the manifest's version, else input_version)
            self.add_lineage_input(*self._input_of(spec))
        return version

    def _input_of(self, spec: JobSpec) -> tuple[str | None, int | None]:
        if spec.input_manifest_uri is not None:
            uri = spec.input_manifest_uri
            doc = read_manifest(uri, self.hook.get_config(uri).storage_options_for(uri))
            return doc.get("table_uri"), doc.get("version")
        return spec.input_table_uri, spec.input_version
