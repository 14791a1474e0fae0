"""A Delta Spark application, run by ``DeltaSparkApplicationOperator`` (task ``customer_totals``).

It reads the orders table at the version the DAG pinned (``versionAsOf``) and appends
one row per customer to ``customer_totals``. The operator sets Delta Spark's idempotent-write
pair (``txnAppId`` / ``txnVersion``) for the application's session: Delta Spark commits, and
a retried or re-run task appends nothing twice. Everything it needs comes from
``delta_job_context()``.

Two runs of the DAG at once race in two ways, and Delta Spark fails the loser of each:
on a first deployment both create ``customer_totals`` (``DELTA_PROTOCOL_CHANGED``,
"multiple writers are writing to an empty directory"), and two runs that pinned the
same orders version append under the same ``txnAppId`` / ``txnVersion``
(``DELTA_CONCURRENT_TRANSACTION``). The job then writes once more: the table exists
now, so it appends, or Delta Spark finds this version already written and skips it.
Delta Spark used up the session's ``txnVersion`` on the lost write, so the job sets the
pair again first (``ctx.arm_session(spark)``): without it the second write would be
refused. Appends do not conflict with each other, so once is enough; if the other run
created a different table, Delta Spark's schema check fails that second write with its
own error.
"""
from __future__ import annotations

from typing import Callable

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_provider_delta.spark.delta_job import DeltaJobContext, delta_job_context

#: Delta Spark's error conditions for a write that lost a race a second write settles: the winner's
#: version 0 changed the protocol and metadata the loser had read as absent, or the winner recorded
#: the same txnAppId the loser had read
RACE_CONDITIONS = ("DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED", "DELTA_CONCURRENT_TRANSACTION")


def lost_race(error: Exception) -> bool:
    """True for Delta Spark's error of a write that a concurrent create or same-txn write beat."""
    condition = getattr(error, "getCondition", lambda: None)()
    return condition in RACE_CONDITIONS or any(c in str(error) for c in RACE_CONDITIONS)


def append(totals: DataFrame, path: str, rearm: Callable[[], None]) -> None:
    """Append (the session carries the exactly-once pair); after losing a race, ``rearm()`` the
    pair and append once more (see the module doc)."""
    try:
        totals.write.format("delta").mode("append").save(path)
    except Exception as e:
        if not lost_race(e):
            raise
        print(f"customer_totals: another run wrote {path} first ({type(e).__name__}); writing again")
        rearm()
        totals.write.format("delta").mode("append").save(path)


def run(spark: SparkSession, ctx: DeltaJobContext) -> None:
    """The job in ``spark``, whose session the operator armed with ``ctx``'s pair."""
    orders = spark.read.format("delta").options(**ctx.read_options).load(ctx.input_table_uri)
    totals = (orders.groupBy("customer")
              .agg(F.count(F.lit(1)).alias("orders"), F.sum("amount").cast("decimal(18,2)").alias("revenue"))
              .withColumn("orders_version", F.lit(ctx.input_version).cast("long")))
    append(totals, ctx.output_table_uri, lambda: ctx.arm_session(spark))


def main() -> None:
    ctx = delta_job_context()
    spark = SparkSession.builder.appName("customer_totals").getOrCreate()
    run(spark, ctx)
    spark.stop()


if __name__ == "__main__":
    main()
