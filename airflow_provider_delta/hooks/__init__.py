"""Airflow hooks: connections turned into log-layer objects (see :class:`DeltaTableHook`)."""
from .delta_table import DeltaTableHook

__all__ = ["DeltaTableHook"]
