"""The example's Spark transforms, run on the Spark driver (shipped with ``--py-files``).

Each is ``func(spark, source, **params) -> DataFrame`` and deterministic for its
inputs, so a retried task recomputes exactly the same rows.
"""
from __future__ import annotations

import datetime as dt

from pyspark.sql import functions as F

CUSTOMERS = ["acme", "globex", "initech", "umbrella", "hooli"]


def generate_orders(spark, source, run_date: str, num_rows: int = 200):
    """A batch of ``num_rows`` orders for ``run_date`` (YYYY-MM-DD); the same date gives the same rows."""
    day = dt.date.fromisoformat(str(run_date)[:10])
    base_id = (day - dt.date(2020, 1, 1)).days * 1_000_000
    customers = F.array(*[F.lit(c) for c in CUSTOMERS])
    return (spark.range(int(num_rows))
            .select((F.col("id") + F.lit(base_id)).alias("order_id"),
                    F.element_at(customers, (F.col("id") % len(CUSTOMERS) + 1).cast("int")).alias("customer"),
                    ((F.col("id") * 37 % 1000) / F.lit(10)).cast("decimal(10,2)").alias("amount"),
                    F.lit(day).alias("order_date")))


def daily_totals(spark, source):
    """Orders per day and customer: count and revenue."""
    return (source.groupBy("order_date", "customer")
            .agg(F.count(F.lit(1)).alias("orders"), F.sum("amount").cast("decimal(18,2)").alias("revenue"))
            .orderBy("order_date", "customer"))
