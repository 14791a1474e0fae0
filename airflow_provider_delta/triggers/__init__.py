"""Airflow triggers (async, run in the triggerer): :class:`DeltaCommitTrigger` (deferred sensors)
and :class:`DeltaCommitEventTrigger` (``AssetWatcher``: DAG runs on commits).

The two classes load on first use (PEP 562): the provider's plugin, which every Airflow
process loads, imports :mod:`.stored_positions` from this package, and must not bring
the triggers, the transaction log and pyarrow into processes that never watch a table.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from .delta_commit import DeltaCommitTrigger
    from .delta_commit_event import DeltaCommitEventTrigger

__all__ = ["DeltaCommitTrigger", "DeltaCommitEventTrigger"]


def __getattr__(name: str) -> Any:
    if name == "DeltaCommitTrigger":
        from .delta_commit import DeltaCommitTrigger
        return DeltaCommitTrigger
    if name == "DeltaCommitEventTrigger":
        from .delta_commit_event import DeltaCommitEventTrigger
        return DeltaCommitEventTrigger
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
