"""A Delta Spark application, run by ``DeltaSparkApplicationOperator`` (task ``customer_totals``).

It reads the orders table at the version the DAG pinned (``versionAsOf``) and appends
one row per customer to ``customer_totals`` with Delta Spark's idempotent-write options
(``txnAppId`` / ``txnVersion``): Delta Spark commits, and a retried or re-run task
appends nothing twice. Everything it needs comes from ``delta_job_context()``.

Two runs of the DAG at once both create ``customer_totals`` on a first deployment.
Delta Spark fails the one that loses that race (``DELTA_PROTOCOL_CHANGED``, "multiple
writers are writing to an empty directory"); the job then appends again, now to the
table the other run created. Appends do not conflict with each other, so once is
enough; if the other run created a different table, Delta Spark's schema check fails
that second append with its own error.
"""
from __future__ import annotations

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from airflow_provider_delta.spark.delta_job import delta_job_context

#: Delta Spark's error conditions for a write that lost the race to create the table
#: (the winner's version 0 changed the protocol and metadata the loser had read as absent)
CREATE_RACE_CONDITIONS = ("DELTA_PROTOCOL_CHANGED", "DELTA_METADATA_CHANGED")


def lost_create_race(error: Exception) -> bool:
    """True for Delta Spark's error of a write that another writer's create beat to version 0."""
    condition = getattr(error, "getCondition", lambda: None)()
    return condition in CREATE_RACE_CONDITIONS or any(c in str(error) for c in CREATE_RACE_CONDITIONS)


def append(totals: DataFrame, path: str, options: dict[str, str]) -> None:
    """Append with the exactly-once options; once more if a concurrent create won version 0."""
    try:
        totals.write.format("delta").options(**options).mode("append").save(path)
    except Exception as e:
        if not lost_create_race(e):
            raise
        print(f"customer_totals: another run created {path} first ({type(e).__name__}); appending to it")
        totals.write.format("delta").options(**options).mode("append").save(path)


def main() -> None:
    ctx = delta_job_context()
    spark = SparkSession.builder.appName("customer_totals").getOrCreate()
    orders = spark.read.format("delta").option("versionAsOf", ctx.input_version).load(ctx.input_table_uri)
    totals = (orders.groupBy("customer")
              .agg(F.count(F.lit(1)).alias("orders"), F.sum("amount").cast("decimal(18,2)").alias("revenue"))
              .withColumn("orders_version", F.lit(ctx.input_version).cast("long")))
    append(totals, ctx.output_table_uri, ctx.write_options)
    spark.stop()


if __name__ == "__main__":
    main()
