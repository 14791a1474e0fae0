"""Airflow operators for Delta tables: backfill, checkpoint, time-travel snapshot, maintenance, Spark."""
from .backfill import DeltaBackfillOperator
from .base import DeltaBaseOperator
from .checkpoint import DeltaCheckpointOperator
from .maintenance import DeltaMetadataCleanupOperator, DeltaVacuumOperator
from .snapshot import DeltaTimeTravelSnapshotOperator

__all__ = ["DeltaBaseOperator", "DeltaBackfillOperator", "DeltaCheckpointOperator",
           "DeltaTimeTravelSnapshotOperator", "DeltaMetadataCleanupOperator", "DeltaVacuumOperator",
           "DeltaSparkSubmitOperator"]


def __getattr__(name: str):
    # The Spark submit operator belongs to the Spark integration and pulls in its provider;
    # import it only when asked for.
    if name == "DeltaSparkSubmitOperator":
        from .spark import DeltaSparkSubmitOperator
        return DeltaSparkSubmitOperator
    raise AttributeError(name)
