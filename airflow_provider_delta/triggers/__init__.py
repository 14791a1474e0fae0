"""Airflow triggers (async, run in the triggerer): :class:`DeltaCommitTrigger` (deferred sensors)
and :class:`DeltaCommitEventTrigger` (``AssetWatcher``: DAG runs on commits)."""
from .delta_commit import DeltaCommitTrigger
from .delta_commit_event import DeltaCommitEventTrigger

__all__ = ["DeltaCommitTrigger", "DeltaCommitEventTrigger"]
