"""A Delta Spark application, run by ``DeltaSparkApplicationOperator`` (task ``customer_totals``).

It reads the orders table at the version the DAG pinned (``versionAsOf``) and appends
one row per customer to ``customer_totals`` with Delta Spark's idempotent-write options
(``txnAppId`` / ``txnVersion``): Delta Spark commits, and a retried or re-run task
appends nothing twice. Everything it needs comes from ``delta_job_context()``.
"""
from __future__ import annotations

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from airflow_provider_delta.spark.delta_job import delta_job_context


def main() -> None:
    ctx = delta_job_context()
    spark = SparkSession.builder.appName("customer_totals").getOrCreate()
    orders = spark.read.format("delta").option("versionAsOf", ctx.input_version).load(ctx.input_table_uri)
    totals = (orders.groupBy("customer")
              .agg(F.count(F.lit(1)).alias("orders"), F.sum("amount").cast("decimal(18,2)").alias("revenue"))
              .withColumn("orders_version", F.lit(ctx.input_version).cast("long")))
    totals.write.format("delta").mode("append").save(ctx.output_table_uri)   # once: the pair is set for the session
    spark.stop()


if __name__ == "__main__":
    main()
