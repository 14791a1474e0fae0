"""OPTIMIZE: compaction, Z-order and deletion-vector purge, committed as Delta Spark commits it.

Three steps, each in its own module:

1. plan (:mod:`.optimize_plan`): the bins of files to rewrite, from one snapshot;
2. rewrite (:mod:`.optimize_rewrite`): each bin streamed into new files (up to
   ``max_concurrent`` bins at once), deleted rows left out;
3. commit (here): one commit ``OPTIMIZE`` (``REORG`` for a purge) removing the old files and
   adding the new ones, every action ``dataChange=false`` (the change data feed shows nothing
   and streaming readers skip it), with Delta Spark's ``operationParameters`` and
   ``operationMetrics``.

Concurrency, Delta Spark's rule: the commit only rearranges data, so it is checked under
snapshot isolation; files appended meanwhile do not conflict and stay as they are. If a
concurrent commit removed (deleted, updated, compacted or gave a new deletion vector to) a
file this OPTIMIZE rewrote, committing would bring its old rows back, so the commit fails
with :class:`ConcurrentModificationError` and the new files are deleted again. A concurrent
metadata change fails it too, unless it is one Delta Spark's conflict checker resolves for any
transaction (allow-listed property changes, :mod:`.conflicts`). A crash
before the commit leaves only unreferenced files (vacuum removes them); the table is as before.

The Spark engine (``airflow_provider_delta.spark.optimize_engine``) runs step 2 on a cluster
as a :class:`BinRewriter`, with these same functions: the plan and the commit on the driver,
:func:`~.optimize_rewrite.rewrite_bin` on the executors.
"""
from __future__ import annotations

import logging
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Iterable, Protocol

from ..base.commit_actions import AddFile, RemoveFile
from ..base.errors import InvalidArgumentError
from ..base.features import Operation, require
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog
from .optimize_plan import Bin, OptimizeSettings, plan_bins, settings_for
from .optimize_rewrite import RewriteSource, rewrite_bin
from .transaction import Transaction, file_key
from .writer import delete_quietly

log = logging.getLogger(__name__)

@dataclass(frozen=True)
class OptimizePlan:
    """What one OPTIMIZE rewrites: the snapshot it read, its settings and its bins."""

    snapshot: Snapshot
    settings: OptimizeSettings
    bins: list[Bin]
    considered_files: int

    def rewrite_source(self) -> RewriteSource:
        """What a remote worker needs to rewrite a bin of this plan (picklable, no log state)."""
        snap = self.snapshot
        return RewriteSource(snap.uri, snap.storage.storage_options, snap.version, snap.metadata.schema_string,
                             tuple(snap.partition_columns), dict(snap.configuration))


def plan_optimize(table: TableLog, *, partition_filter: Any = None, target_size: Any = None,
                  min_file_size: Any = None, z_order_by: Any = None, max_deleted_rows_ratio: Any = None,
                  purge: bool = False, version: int | None = None) -> OptimizePlan:
    """Check the arguments and plan the bins against the latest snapshot (or ``version``).

    Typed errors (bad arguments, a protocol this package may not commit to) come from here,
    before any file is read or written.
    """
    snap = table.snapshot(version=version)
    require(snap.protocol, Operation.COMMIT, f"{table.uri} at version {snap.version}")
    settings = settings_for(snap, target_size=target_size, min_file_size=min_file_size, z_order_by=z_order_by,
                            partition_filter=partition_filter, max_deleted_rows_ratio=max_deleted_rows_ratio,
                            purge=purge)
    bins, considered = plan_bins(snap, settings)
    return OptimizePlan(snap, settings, bins, considered)


def _max_concurrent(value: Any) -> int:
    if value is None:
        return max(1, min(4, os.cpu_count() or 1))
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidArgumentError(f"max_concurrent must be a positive integer, got {value!r}")
    return value


class BinRewriter(Protocol):
    """An engine that rewrites an OPTIMIZE plan's bins elsewhere (the Spark engine is one).

    ``rewrite`` returns the new files of each bin, in the plan's order, written with
    :func:`rewrite_bin`; the files it wrote go into ``written`` so a failure can delete them.
    """

    def rewrite(self, plan: OptimizePlan, written: list[str]) -> list[list[AddFile]]: ...


def _local_rewrite(plan: OptimizePlan, workers: int, written: list[str]) -> list[list[AddFile]]:
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="delta-optimize") as pool:
        return list(pool.map(lambda b: rewrite_bin(plan.snapshot, b, plan.settings, written), plan.bins))


def optimize(table: TableLog, *, partition_filter: Any = None, target_size: Any = None, min_file_size: Any = None,
             z_order_by: Any = None, max_concurrent: int | None = None, engine: "str | BinRewriter" = "local",
             max_deleted_rows_ratio: Any = None, purge: bool = False, **txn_kwargs: Any) -> dict[str, Any]:
    """Compact small files, Z-order, purge deleted rows; returns the metrics (see :func:`optimize_metrics`).

    ``engine``: ``"local"`` (this process, ``max_concurrent`` bins at a time) or a
    :class:`BinRewriter` (``airflow_provider_delta.spark.optimize_engine.SparkBinRewriter(spark)``);
    ``"spark"`` names the Spark engine, which needs a SparkSession: ``spark_optimize(spark, table)``
    inside a Spark application, or ``DeltaOptimizeOperator(engine="spark")`` from Airflow.
    ``txn_kwargs`` go to the commit's :class:`Transaction` (``job``, ``user_metadata``, ``max_retries``...).
    """
    if engine == "spark":
        raise InvalidArgumentError(
            "engine='spark' needs a SparkSession: call airflow_provider_delta.spark.optimize_engine.spark_optimize("
            "spark, table, ...) in a Spark application, or use DeltaOptimizeOperator(engine='spark') in Airflow")
    if engine != "local" and not callable(getattr(engine, "rewrite", None)):
        raise InvalidArgumentError(f"engine must be 'local', 'spark' or a BinRewriter, got {engine!r}")
    workers = _max_concurrent(max_concurrent)
    plan = plan_optimize(table, partition_filter=partition_filter, target_size=target_size,
                         min_file_size=min_file_size, z_order_by=z_order_by,
                         max_deleted_rows_ratio=max_deleted_rows_ratio, purge=purge)
    if not plan.bins:
        return optimize_metrics(plan, [], None)
    written: list[str] = []
    try:
        results = _local_rewrite(plan, workers, written) if engine == "local" else \
            engine.rewrite(plan, written)  # type: ignore[union-attr]
    except BaseException:
        delete_quietly(table, written)
        raise
    return commit_optimize(table, plan, results, written, **txn_kwargs)


def commit_optimize(table: TableLog, plan: OptimizePlan, results: list[list[AddFile]], written: Iterable[str],
                    **txn_kwargs: Any) -> dict[str, Any]:
    """Commit the rewritten bins (``results[i]``: the new files of ``plan.bins[i]``); returns the metrics.

    On a conflict or any failure the new files are deleted again, only when the log shows the
    commit did not land (:meth:`Transaction.surely_not_committed`: not on an unknown outcome, nor
    after an interrupt in the post-commit checkpoint of a landed commit), and the error is raised.
    """
    snap, settings = plan.snapshot, plan.settings
    written = list(written)
    adds = [a for r in results for a in r]
    # one remove per logical file: a file the log holds live under two spellings is two rows
    # here, and the transaction removes it under both (base/path_spelling.py)
    removes = list({file_key(f["path"], f.get("deletion_vector")): _remove_of(f)
                    for b in plan.bins for f in b.files}.values())
    txn: Transaction | None = None
    try:
        txn = Transaction(table, operation=settings.operation, operation_parameters=settings.operation_parameters(),
                          read_version=snap.version,
                          operation_metrics=commit_metrics(adds, removes), **txn_kwargs)
        for rm in removes:
            txn.remove_file(rm)
        txn.add_files(adds)
        version = txn.commit()
    except BaseException:
        if txn is None or txn.surely_not_committed():   # the log decides: a landed commit keeps its files
            delete_quietly(table, written)
        raise
    log.info("%s of %s committed version %d: %d file(s) -> %d file(s)", settings.operation, table.uri, version,
             len(removes), len(adds))
    return optimize_metrics(plan, adds, version)


def _remove_of(f: dict[str, Any]) -> RemoveFile:
    """The ``remove`` (``dataChange=false``) of a rewritten file, with its deletion vector and statistics."""
    return RemoveFile(f["path"], None, False, True, dict(f.get("partition_values") or {}), int(f["size"]),
                      f.get("stats"), dict(f["tags"]) if f.get("tags") else None, f.get("deletion_vector") or None)


def _percentiles(sizes: list[int]) -> dict[str, int]:
    """Delta Spark's file size summary: index ``n/4``, ``n/2``, ``3n/4`` of the sorted sizes."""
    s = sorted(sizes)
    n = len(s)
    return {"minFileSize": s[0], "p25FileSize": s[n // 4], "p50FileSize": s[n // 2],
            "p75FileSize": s[n * 3 // 4], "maxFileSize": s[-1]}


def commit_metrics(adds: list[AddFile], removes: list[RemoveFile]) -> dict[str, int]:
    """commitInfo ``operationMetrics`` of OPTIMIZE: Delta Spark's names (``DeltaOperationMetrics.OPTIMIZE``)."""
    m: dict[str, int] = {"numAddedFiles": len(adds), "numRemovedFiles": len(removes),
                         "numAddedBytes": sum(a.size for a in adds),
                         "numRemovedBytes": sum(int(r.size or 0) for r in removes)}
    if adds:
        m.update(_percentiles([a.size for a in adds]))
    m["numDeletionVectorsRemoved"] = sum(1 for r in removes if r.deletion_vector)
    return m


def _size_summary(sizes: list[int]) -> dict[str, Any]:
    if not sizes:
        return {"min": 0, "max": 0, "avg": 0.0, "totalFiles": 0, "totalSize": 0}
    return {"min": min(sizes), "max": max(sizes), "avg": sum(sizes) / len(sizes), "totalFiles": len(sizes),
            "totalSize": sum(sizes)}


def optimize_metrics(plan: OptimizePlan, adds: list[AddFile], version: int | None) -> dict[str, Any]:
    """What :func:`optimize` returns: the committed version (None: nothing to do) and Delta's OptimizeMetrics."""
    removed = [f for b in plan.bins for f in b.files]
    dvs = [f["deletion_vector"] for f in removed if f.get("deletion_vector")]
    return {
        "version": version,
        "operation": plan.settings.operation,
        "numFilesAdded": len(adds),
        "numFilesRemoved": len(removed) if version is not None else 0,
        "filesAdded": _size_summary([a.size for a in adds]),
        "filesRemoved": _size_summary([int(f["size"]) for f in removed] if version is not None else []),
        "partitionsOptimized": len({tuple(sorted(b.partition_values.items())) for b in plan.bins}),
        "numBins": len(plan.bins),
        "totalConsideredFiles": plan.considered_files,
        "totalFilesSkipped": plan.considered_files - (len(removed) if version is not None else 0),
        "numDeletionVectorsRemoved": len(dvs) if version is not None else 0,
        "numDeletionVectorRowsRemoved": sum(int(d.get("cardinality") or 0) for d in dvs) if version is not None
        else 0,
        "zOrderBy": list(plan.settings.z_order_by),
        "readVersion": plan.snapshot.version,
    }
