"""Spark as the checkpoint engine for logs too large for one process.

The driver plans (:func:`airflow_provider_delta.log.plan_checkpoint`: the gate, the log
segment, protocol and metadata, and the list of sources, without holding any file
action); Spark then does the heavy part in three steps:

1. one task per source (runs of checkpoint row groups, sidecars, runs of JSON commits)
   reads it with pyarrow and splits its file actions by checkpoint part, the hash Delta
   Spark partitions checkpoints by (``pmod(murmur3(path, 42), parts)``);
2. a shuffle brings every action of one part to one task (``partitionBy`` with the part
   index as key), which reconciles them (latest action per path and deletion vector;
   tombstones until their retention) and writes the part with the local writer's own
   row builder to a hidden temporary file;
3. the driver, once every task has succeeded, publishes the parts (or the V2 sidecars
   and the manifest naming them) and then ``_last_checkpoint``.

A job that dies before step 3 leaves only hidden ``.tmp`` files. The parquet layout is
the local writer's byte for byte (same schema, same rows per part), because the same
code builds it; only the reading and the reconciliation are spread over executors.
Memory per task is about one part; the driver holds the plan and a few numbers per part.
"""
from __future__ import annotations

import logging
from typing import Any

from ..log import CheckpointPlan, DeltaTable, plan_checkpoint

log = logging.getLogger(__name__)


def spark_checkpoint(spark: Any, table: DeltaTable, version: int | None = None, parts: int | None = None, *,
                     now_ms: int | None = None, actions_per_part: int | None = None) -> dict[str, Any]:
    """Write the checkpoint of ``version`` (default: latest) of ``table`` with ``spark``.

    ``parts``: parts of a classic checkpoint, or sidecars of a V2 one (default: about
    ``actions_per_part`` actions each, one million unless given). Returns what was written
    to ``_last_checkpoint`` (``version``, ``size``, ``parts``, ``numOfAddFiles``...).
    Raises the log's typed errors (bad arguments, unsupported features) before any Spark work.
    """
    kwargs = {} if actions_per_part is None else {"actions_per_part": actions_per_part}
    plan = plan_checkpoint(table, version, parts, now_ms=now_ms, **kwargs)
    log.info("checkpoint of %s at version %d: %d source(s) -> %d %s", plan.uri, plan.version, len(plan.sources),
             plan.parts, "sidecar(s)" if plan.v2 else "part(s)")
    staged = stage_parts(spark, plan)
    info = plan.publish(table, staged)
    log.info("published the checkpoint of %s at version %d: %s", plan.uri, plan.version, info)
    return info


def stage_parts(spark: Any, plan: CheckpointPlan) -> list[Any]:
    """Steps 1 and 2 on the cluster: every part written to its hidden file; their descriptions, on the driver."""
    sc = spark.sparkContext
    sources = list(enumerate(plan.sources))
    read = sc.parallelize(sources, max(1, len(sources))).flatMap(lambda s: plan.read_source(*s))
    by_part = read.partitionBy(plan.parts, _part_of)
    staged = by_part.mapPartitionsWithIndex(lambda i, items: [plan.stage_part(i, (v for _, v in items))])
    return staged.collect()


def _part_of(key: int) -> int:
    """The key already is the part index (PySpark takes it modulo the number of partitions)."""
    return key
