"""Spark as the OPTIMIZE engine: bins rewritten in parallel on executors, one commit on the driver.

The driver plans with the log layer (:func:`airflow_provider_delta.log.plan_optimize`: the gate,
the arguments, the bins of one snapshot); Spark runs one task per bin, each calling the log
layer's own :func:`~airflow_provider_delta.log.rewrite_bin` (the same streaming rewrite as
the local engine, so the files, their statistics and their names follow the same rules) on a
picklable :meth:`~airflow_provider_delta.log.OptimizePlan.rewrite_source`; the driver collects
the new files' add actions and commits once through the log layer
(:func:`~airflow_provider_delta.log.commit_optimize`: conflict checks, retries, the commit owner
of a managed table). Spark only moves work; every Delta rule stays in ``log/``.

A task that fails is retried by Spark; files of a failed attempt, and of a job that dies
before the commit, are unreferenced (vacuum deletes them). If the commit fails, the driver
deletes every new file it was told about.
"""
from __future__ import annotations

import logging
from typing import Any

from ..log import AddFile, DeltaTable, OptimizePlan, rewrite_bin

log = logging.getLogger(__name__)


class SparkBinRewriter:
    """A ``BinRewriter`` for :meth:`DeltaTable.optimize`: one Spark task per bin."""

    def __init__(self, spark: Any):
        self.spark = spark

    def rewrite(self, plan: OptimizePlan, written: list[str]) -> list[list[AddFile]]:
        source = plan.rewrite_source()
        settings = plan.settings
        bins = list(enumerate(plan.bins))

        def run(item: tuple[int, Any]) -> tuple[int, list[AddFile], list[str]]:
            index, bin_ = item
            mine: list[str] = []
            return index, rewrite_bin(source, bin_, settings, mine), mine

        sc = self.spark.sparkContext
        sc.setJobDescription(f"OPTIMIZE {plan.snapshot.uri}: {len(bins)} bin(s)")
        results: list[list[AddFile]] = [[] for _ in bins]
        for index, adds, mine in sc.parallelize(bins, max(1, len(bins))).map(run).collect():
            written.extend(mine)
            results[index] = adds
        return results


def spark_optimize(spark: Any, table: DeltaTable, **kwargs: Any) -> dict[str, Any]:
    """OPTIMIZE ``table`` with ``spark`` as the engine; arguments and result as :meth:`DeltaTable.optimize`."""
    return table.optimize(engine=SparkBinRewriter(spark), **kwargs)
