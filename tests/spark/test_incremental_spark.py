"""The incremental pattern with Spark: each run processes the changes between the output's
``txn(app_id)`` position and the pinned input version, exactly once.

* ``DeltaSparkApplicationOperator(input_changes=True)``: a real spark-submit of a Delta Spark
  application reading ``readChangeFeed`` with the handed-over range (one submit per round;
  a re-run with nothing new submits nothing);
* ``DeltaSparkSubmitOperator(input_changes=True)``'s driver-side job (``spark/job.run``) in the
  session's Spark: a DataFrame of our change feed, committed with the pinned version as txn.
"""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError
from airflow_provider_delta.spark.job import run
from airflow_provider_delta.spark.job_args import JobSpec
from submitted_application import submitted_session
from task_context import load_dag, task_context

pytestmark = pytest.mark.spark

SCHEMA = pa.schema([("id", pa.int64()), ("name", pa.string())])
CDF = {"delta.enableChangeDataFeed": "true"}
SPARK_CONF = {"spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2",
              "spark.databricks.delta.snapshotPartitions": "2", "spark.log.level": "WARN"}

#: the user's application: append the handed-over changes, as Delta Spark reads them, to the output
CHANGES_JOB = '''
from airflow_provider_delta.spark.delta_job import delta_job_context
from pyspark.sql import SparkSession

ctx = delta_job_context()
print("delta job context:", ctx.read_options, ctx.write_options)
spark = SparkSession.builder.getOrCreate()
changes = spark.read.format("delta").options(**ctx.read_options).load(ctx.input_table_uri)
changes.write.format("delta").options(**ctx.write_options).mode("append").save(ctx.output_table_uri)
spark.stop()
'''


def _rows(table: pa.Table) -> list[tuple]:
    return sorted((r["id"], r["name"], r["_change_type"], r["_commit_version"]) for r in table.to_pylist())


def _source(tmp_path: Path) -> DeltaTable:
    t = DeltaTable.create(str(tmp_path / "source"), SCHEMA, properties=CDF)
    t.write(pa.table({"id": [1, 2], "name": ["a", "b"]}, schema=SCHEMA))
    return t


def test_delta_spark_application_reads_the_pending_change_range(tmp_path, java, delta_spark_conf):
    """One real submit: versions 1..2 (initial_version=1) read with readChangeFeed, then a re-run with
    nothing new submits nothing, and a new commit makes exactly version 3 pending."""
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    source, out = _source(tmp_path), tmp_path / "out"
    source.write(pa.table({"id": [9], "name": ["z"]}, schema=SCHEMA), mode="overwrite")     # v2: 2 deletes
    job = tmp_path / "changes_job.py"
    job.write_text(CHANGES_JOB)

    def run_task() -> tuple[dict, object]:
        ctx = task_context(task_id="apply")
        op = DeltaSparkApplicationOperator(
            task_id="apply", conn_id="spark_not_defined", application=str(job), input_table_uri=source.uri,
            input_changes=True, initial_version=1, output_table_uri=str(out),
            jars=delta_spark_conf["spark.jars"], conf=SPARK_CONF)
        return ctx, op.execute(ctx)

    ctx, version = run_task()
    commit = ctx["ti"].xcoms["commit"]
    assert version == 0 and commit["committed"] and (commit["input_starting_version"], commit["input_version"]) == (1, 2)
    output = DeltaTable(str(out))
    assert output.snapshot().transaction_version("dag:apply") == 2                 # the stable consumer id
    # Delta Spark's reading of the range equals ours (its _commit_timestamp too: file times here)
    got = output.snapshot().to_pyarrow()
    ours = source.changes(1, 2)
    assert _rows(got) == _rows(ours)
    assert sorted(got.column("_commit_timestamp").to_pylist()) == sorted(ours.column("_commit_timestamp").to_pylist())
    ctx, version = run_task()                                                      # nothing new: no submit
    assert version == 0 and ctx["ti"].xcoms["commit"]["committed"] is False and output.latest_version() == 0
    source.write(pa.table({"id": [3], "name": ["c"]}, schema=SCHEMA))                       # v3
    pending = DeltaTableHook().pending_changes(source.uri, str(out), "dag:apply")
    assert (pending.start, pending.end) == (3, 3)


def test_application_incremental_arguments(tmp_path):
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator
    with pytest.raises(InvalidArgumentError, match="app_version"):
        DeltaSparkApplicationOperator(task_id="t", application="x.py", output_table_uri=str(tmp_path / "o"),
                                      input_table_uri=str(tmp_path / "s"), input_changes=True, app_version=3)
    op = DeltaSparkApplicationOperator(task_id="t", application="x.py", output_table_uri=str(tmp_path / "o"),
                                       input_changes=True)
    with pytest.raises(InvalidArgumentError, match="needs an input"):
        op.execute(task_context(task_id="t"))


def test_driver_side_job_gets_a_dataframe_of_the_changes(spark, tmp_path):
    source, out = _source(tmp_path), str(tmp_path / "out")

    def spec(start: int, end: int) -> JobSpec:
        return JobSpec(output_table_uri=out, transform="identity", input_table_uri=source.uri, input_version=end,
                       input_starting_version=start, app_id="dag:apply", app_version=end).validate()

    first = run(spark, spec(0, 1))
    assert first["committed"] and first["input_starting_version"] == 0
    assert run(spark, spec(0, 1))["committed"] is False                      # the retry: already in
    source.write(pa.table({"id": [2], "name": ["B"]}, schema=SCHEMA), mode="overwrite")   # v2
    second = run(spark, spec(2, 2))
    assert second["committed"] and second["version"] == 1
    output = DeltaTable(out)
    assert output.snapshot().transaction_version("dag:apply") == 2
    rows = output.snapshot().to_pyarrow()
    assert rows.schema.field("_commit_timestamp").type == pa.timestamp("us", tz="UTC")
    assert _rows(rows) == _rows(source.changes(0))
    assert JobSpec.parse(spec(2, 2).to_json()).input_starting_version == 2
    with pytest.raises(InvalidArgumentError, match="starting_version"):
        JobSpec(output_table_uri=out, transform="identity", input_starting_version=1).validate()


def test_submit_operator_plans_the_pending_range_and_skips_when_nothing_changed(tmp_path, monkeypatch):
    """DeltaSparkSubmitOperator(input_changes=True) without Spark: the job spec carries the range after
    the output's position; with nothing new, nothing is submitted (a stand-in spark-submit would fail)."""
    from airflow_provider_delta.log import process_changes
    from airflow_provider_delta.operators.spark import DeltaSparkSubmitOperator
    source, out = _source(tmp_path), str(tmp_path / "out")
    op = DeltaSparkSubmitOperator(task_id="apply", conn_id="spark_not_defined", output_table_uri=out,
                                  transform="identity", input_table_uri=source.uri, input_changes=True)
    spec, _ = op.build_spec(task_context(task_id="apply"))
    assert (spec.app_id, spec.input_starting_version, spec.input_version, spec.app_version) == ("dag:apply", 0, 1, 1)
    process_changes(source, DeltaTable(out), "dag:apply")                    # as if that run had committed
    source.write(pa.table({"id": [3], "name": ["c"]}, schema=SCHEMA))        # v2
    spec, _ = op.build_spec(task_context(task_id="apply"))
    assert (spec.input_starting_version, spec.input_version, spec.app_version) == (2, 2, 2)
    process_changes(source, DeltaTable(out), "dag:apply")
    called = tmp_path / "spark-submit-was-called"
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    monkeypatch.setattr(SparkSubmitOperator, "execute", lambda self, context: called.write_text("called"))
    ctx = task_context(task_id="apply")
    assert op.execute(ctx) == 1 and ctx["ti"].xcoms["commit"]["committed"] is False
    assert not called.exists()
    with pytest.raises(InvalidArgumentError, match="app_version"):
        DeltaSparkSubmitOperator(task_id="t", output_table_uri=out, transform="identity",
                                 input_table_uri=source.uri, input_changes=True, app_version=5)



def test_delta_spark_application_incremental_input_pinned_by_a_manifest(spark, tmp_path, monkeypatch):
    """input_changes=True with input_manifest_uri (DeltaTimeTravelSnapshotOperator's manifest): the range
    ends at the pinned version, not at a commit made after the pin. The application runs in this
    session (spark-submit itself is the test above): Delta Spark reads the handed-over range."""
    from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator
    from airflow_provider_delta.hooks import DeltaTableHook
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator, DeltaTimeTravelSnapshotOperator
    source, out = _source(tmp_path), tmp_path / "out"
    source.write(pa.table({"id": [9], "name": ["z"]}, schema=SCHEMA), mode="overwrite")     # v2: 2 deletes
    pin = DeltaTimeTravelSnapshotOperator(task_id="pin", table_uri=source.uri,
                                          manifest_uri=str(tmp_path / "pin.json")).execute(task_context(task_id="pin"))
    assert pin["version"] == 2
    source.write(pa.table({"id": [3], "name": ["c"]}, schema=SCHEMA))                       # v3, after the pin

    def application(self, context):   # CHANGES_JOB, given the arguments and settings spark-submit would pass
        with submitted_session(self, spark) as job:
            changes = spark.read.format("delta").options(**job.read_options).load(job.input_table_uri)
            changes.write.format("delta").options(**job.write_options).mode("append").save(job.output_table_uri)
    monkeypatch.setattr(SparkSubmitOperator, "execute", application)
    ctx = task_context(task_id="apply")
    op = DeltaSparkApplicationOperator(task_id="apply", conn_id="spark_not_defined", application="changes_job.py",
                                       input_manifest_uri=pin["manifest_uri"], input_changes=True,
                                       output_table_uri=str(out))
    assert op.execute(ctx) == 0
    commit = ctx["ti"].xcoms["commit"]
    assert commit["committed"] and (commit["input_starting_version"], commit["input_version"]) == (0, 2)
    output = DeltaTable(str(out))
    assert output.snapshot().transaction_version("dag:apply") == 2
    assert _rows(output.snapshot().to_pyarrow()) == _rows(source.changes(0, 2))
    pending = DeltaTableHook().pending_changes(source.uri, str(out), "dag:apply")
    assert (pending.start, pending.end) == (3, 3)


def test_default_consumers_continue_from_their_0_1_positions_under_airflow(airflow_db, in_session, tmp_path,
                                                                            monkeypatch, capfd):
    """dag.test() of incremental_dag.py after an "upgrade": each consumer's output holds the position its
    0.1.0 build recorded under ``incremental_dag.<task>`` (mapped: ``.<index>``). The run continues after
    it (not at initial_version: no change twice), commits under ``incremental_dag:<task>[<index>]``, and
    the next run reads the new id. A consumer holding both ids continues from its new one."""
    from airflow_provider_delta.log import process_changes
    source = _source(tmp_path)                                                         # v0, v1
    source.write(pa.table({"id": [3], "name": ["c"]}, schema=SCHEMA))                  # v2
    outs = {t: DeltaTable(str(tmp_path / t)) for t in ("apply", "apply_mapped", "apply_both")}
    process_changes(source, outs["apply"], "incremental_dag.apply", end_version=1)
    process_changes(source, outs["apply_mapped"], "incremental_dag.apply_mapped.0", end_version=0)
    process_changes(source, outs["apply_both"], "incremental_dag:apply_both", end_version=0)
    process_changes(source, outs["apply_both"], "incremental_dag.apply_both", end_version=2)   # further, ignored
    monkeypatch.setenv("INCREMENTAL_SOURCE", source.uri)
    for task_id, table in outs.items():
        monkeypatch.setenv(f"INCREMENTAL_OUT_{task_id.upper()}", table.uri)
    dag = load_dag(Path(__file__).with_name("incremental_dag.py"))

    run = dag.test()
    task_log = capfd.readouterr().out                                                  # dag.test() logs the tasks here
    assert {ti.task_id: str(ti.state) for ti in run.get_task_instances()} == dict.fromkeys(outs, "success")
    ran = {spec.app_id: (spec.input_starting_version, spec.input_version) for spec in in_session}
    assert ran == {"incremental_dag:apply": (2, 2), "incremental_dag:apply_mapped[0]": (1, 2),
                   "incremental_dag:apply_both": (1, 2)}
    for task_id, table in outs.items():
        new_id = f"incremental_dag:{task_id}" + ("[0]" if task_id == "apply_mapped" else "")
        assert table.snapshot().transaction_version(new_id) == 2                      # the position moved to the new id
    assert _rows(outs["apply"].snapshot().to_pyarrow()) == _rows(source.changes(0))    # every change once
    assert _rows(outs["apply_mapped"].snapshot().to_pyarrow()) == _rows(source.changes(0))
    assert "continuing from version 1 recorded under 'incremental_dag.apply'" in task_log
    assert "recorded under 'incremental_dag.apply_mapped.0'" in task_log
    assert "'incremental_dag.apply_both'" not in task_log                           # its own position won

    in_session.clear()
    source.write(pa.table({"id": [4], "name": ["d"]}, schema=SCHEMA))                  # v3
    dag.test()
    assert sorted((s.app_id, s.input_starting_version) for s in in_session) == [
        ("incremental_dag:apply", 3), ("incremental_dag:apply_both", 3), ("incremental_dag:apply_mapped[0]", 3)]
    assert _rows(outs["apply"].snapshot().to_pyarrow()) == _rows(source.changes(0))


def test_delta_spark_application_continues_from_the_former_default_id(tmp_path, java, delta_spark_conf):
    """A real submit: the output holds ``dag.apply``'s position 1 (0.1.0's id): the application reads
    only version 2 and commits txn ``dag:apply`` 2; an explicit app_id is used as given (no fallback)."""
    from airflow_provider_delta.log import process_changes
    from airflow_provider_delta.operators import DeltaSparkApplicationOperator, DeltaSparkSubmitOperator
    source, out = _source(tmp_path), tmp_path / "out"
    process_changes(source, DeltaTable(str(out)), "dag.apply")                         # 0.1.0's position: 1
    source.write(pa.table({"id": [9], "name": ["z"]}, schema=SCHEMA), mode="overwrite")     # v2
    job = tmp_path / "changes_job.py"
    job.write_text(CHANGES_JOB)
    ctx = task_context(task_id="apply")
    op = DeltaSparkApplicationOperator(
        task_id="apply", conn_id="spark_not_defined", application=str(job), input_table_uri=source.uri,
        input_changes=True, output_table_uri=str(out), jars=delta_spark_conf["spark.jars"], conf=SPARK_CONF)
    assert op.execute(ctx) == 1
    commit = ctx["ti"].xcoms["commit"]
    assert commit["committed"] and (commit["input_starting_version"], commit["input_version"]) == (2, 2)
    output = DeltaTable(str(out))
    assert output.snapshot().transaction_version("dag:apply") == 2
    assert _rows(output.snapshot().to_pyarrow()) == _rows(source.changes(0))          # every change once
    process_changes(source, DeltaTable(str(tmp_path / "out2")), "dag.apply")
    given = DeltaSparkSubmitOperator(task_id="apply", conn_id="spark_not_defined", output_table_uri=str(tmp_path / "out2"),
                                     transform="identity", input_table_uri=source.uri, input_changes=True, app_id="mine")
    spec, _ = given.build_spec(task_context(task_id="apply"))
    assert (spec.app_id, spec.input_starting_version) == ("mine", 0)                   # as given: no fallback
