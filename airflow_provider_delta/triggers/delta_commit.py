"""``DeltaCommitTrigger``: the deferred half of :class:`DeltaCommitSensor`.

It runs in the triggerer's event loop, so every blocking step (listing the log,
reading commit files, talking to a commit owner's database) runs in a worker thread,
and connections are fetched with Airflow's async API. The polling itself is the
same :class:`~airflow_provider_delta.hooks.commits.CommitWatch` the sensor uses:
one listing per poll and only the new commits read.

The trigger serializes to plain kwargs (strings, numbers, lists and the JSON-ready
commit summaries collected so far), so a triggerer restart resumes where it was
instead of re-reading the range.
"""
from __future__ import annotations

import asyncio
from typing import Any, AsyncIterator

from airflow.triggers.base import BaseTrigger, TriggerEvent

from ..hooks.commits import CommitWatch
from ..log import DeltaError
from .tables import open_table


class DeltaCommitTrigger(BaseTrigger):
    """Fire once the table has the commits a :class:`DeltaCommitSensor` waits for.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param delta_conn_id: ``delta`` connection (optional for absolute URIs)
    :param target_version: wait until a (matching) commit at or above this version exists
    :param after_version: only commits after this version count (and are reported)
    :param operation: commitInfo.operation to wait for (a name or a list of names)
    :param app_id: wait for a commit carrying a ``txn`` action with this appId
    :param last_seen: newest version already examined (polling resumes after it)
    :param commits: the newest matching commit summaries already collected (oldest first)
    :param count: how many commits matched so far; ``first_version``: the oldest of them
    :param poke_interval: seconds between polls

    The event payload is ``{"status": "success", **CommitWatch.result()}`` (bounded: counts,
    first and last version, the newest commits) or ``{"status": "error", "message": ...,
    "error_type": ...}``.
    """

    def __init__(self, table_uri: str, delta_conn_id: str | None = None,
                 target_version: int | None = None, after_version: int | None = None,
                 operation: str | list[str] | None = None, app_id: str | None = None,
                 last_seen: int | None = None, commits: list[dict[str, Any]] | None = None,
                 poke_interval: float = 60.0, latest: int | None = None, count: int | None = None,
                 first_version: int | None = None) -> None:
        super().__init__()
        self.table_uri = table_uri
        self.delta_conn_id = delta_conn_id
        self.poke_interval = float(poke_interval)
        self.watch = CommitWatch(target_version=target_version, after_version=after_version,
                                 operation=operation, app_id=app_id, last_seen=last_seen,
                                 commits=list(commits or []), latest=latest, count=count,
                                 first_version=first_version)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        kwargs = {"table_uri": self.table_uri, "delta_conn_id": self.delta_conn_id,
                  "poke_interval": self.poke_interval}
        kwargs.update(self.watch.to_dict())
        return f"{type(self).__module__}.{type(self).__qualname__}", kwargs

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            table = await open_table(self.table_uri, self.delta_conn_id)
        except DeltaError as e:
            yield TriggerEvent({"status": "error", "error_type": type(e).__name__, "message": str(e)})
            return
        while True:
            try:
                done = await asyncio.to_thread(self.watch.poll, table)
            except DeltaError as e:
                yield TriggerEvent({"status": "error", "error_type": type(e).__name__, "message": str(e)})
                return
            if done:
                result = self.watch.result()
                self.log.info("Delta table %s: %d matching commit(s), latest version %s",
                              table.uri, result["count"], result["version"])
                yield TriggerEvent({"status": "success", **result})
                return
            await asyncio.sleep(self.poke_interval)
