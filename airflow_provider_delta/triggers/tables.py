"""Opening a table from a trigger: the connection through Airflow's async API, the rest in a thread.

A trigger runs in the triggerer's event loop, where a blocking call stalls every other
trigger; both Delta triggers open their table this way.
"""
from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from ..hooks.delta_table import DeltaTableHook

if TYPE_CHECKING:  # pragma: no cover
    from ..log import DeltaTable


async def open_table(table_uri: str, delta_conn_id: str | None) -> "DeltaTable":
    """The :class:`DeltaTable` at ``table_uri`` (relative to the connection's base URI if not absolute)."""
    hook = DeltaTableHook(delta_conn_id=delta_conn_id)
    await hook.aget_config(table_uri)          # caches the connection, fetched without blocking
    return await asyncio.to_thread(hook.get_table, table_uri)
