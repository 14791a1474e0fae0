"""Airflow triggers (async, run in the triggerer): see :class:`DeltaCommitTrigger`."""
from .delta_commit import DeltaCommitTrigger

__all__ = ["DeltaCommitTrigger"]
