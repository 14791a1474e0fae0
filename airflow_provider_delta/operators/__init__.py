"""Airflow operators for Delta tables: backfill, checkpoint, time-travel snapshot, maintenance, Spark."""
from .backfill import DeltaBackfillOperator
from .base import DeltaBaseOperator
from .checkpoint import DeltaCheckpointOperator
from .maintenance import DeltaMetadataCleanupOperator, DeltaVacuumOperator
from .optimize import DeltaOptimizeOperator
from .snapshot import DeltaTimeTravelSnapshotOperator

__all__ = ["DeltaBaseOperator", "DeltaBackfillOperator", "DeltaCheckpointOperator",
           "DeltaTimeTravelSnapshotOperator", "DeltaMetadataCleanupOperator", "DeltaVacuumOperator",
           "DeltaOptimizeOperator",
           "DeltaSparkSubmitOperator", "DeltaSparkApplicationOperator"]


def __getattr__(name: str):
    # The Spark submit operators belong to the Spark integration and pull in its provider;
    # import them only when asked for.
    if name == "DeltaSparkSubmitOperator":
        from .spark import DeltaSparkSubmitOperator
        return DeltaSparkSubmitOperator
    if name == "DeltaSparkApplicationOperator":
        from .delta_spark import DeltaSparkApplicationOperator
        return DeltaSparkApplicationOperator
    raise AttributeError(name)
