"""Airflow operators for Delta tables: backfill, checkpoint, time-travel snapshot, maintenance, restore, clone, Spark."""
from .backfill import DeltaBackfillOperator
from .base import DeltaBaseOperator
from .checkpoint import DeltaCheckpointOperator
from .clone import DeltaCloneOperator
from .maintenance import DeltaMetadataCleanupOperator, DeltaVacuumOperator
from .restore import DeltaRestoreOperator
from .optimize import DeltaOptimizeOperator
from .snapshot import DeltaTimeTravelSnapshotOperator
from .write_audit_publish import (DeltaAbortTransactionOperator, DeltaBeginTransactionOperator,
                                  DeltaPublishTransactionOperator)

__all__ = ["DeltaBaseOperator", "DeltaBackfillOperator", "DeltaCheckpointOperator",
           "DeltaTimeTravelSnapshotOperator", "DeltaMetadataCleanupOperator", "DeltaVacuumOperator",
           "DeltaRestoreOperator", "DeltaCloneOperator", "DeltaOptimizeOperator",
           "DeltaSparkSubmitOperator", "DeltaSparkApplicationOperator",
           "DeltaBeginTransactionOperator", "DeltaPublishTransactionOperator", "DeltaAbortTransactionOperator"]


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
