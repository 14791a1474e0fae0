"""Airflow sensors: see :class:`DeltaCommitSensor`."""
from .delta_commit import DeltaCommitSensor

__all__ = ["DeltaCommitSensor"]
