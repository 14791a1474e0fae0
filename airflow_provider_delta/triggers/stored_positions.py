"""A commit watcher's position, moved in the same transaction that stores its asset event.

The watcher keeps its position in the asset state store and moves it once Airflow
confirmed an event stored (:mod:`.commit_stream`); a triggerer that stops between
the two repeats that event after a restart. Airflow notifies listeners of every
asset event it registers (``on_asset_event_emitted``), inline, while the database
session that stores the event is still open. This listener, loaded into every
Airflow process through the provider's plugin (:mod:`airflow_provider_delta.plugins`),
writes the version the event accounts for under the watcher's :func:`.stored_key`
in that same session: the event and the position commit together or not at all, and
a watcher that restarts finds the repeat unnecessary (:meth:`.PositionStore.load`).

It acts only where it can see that it shares the event's transaction: the session
must hold the event just added. Otherwise (a state store backend that is not
Airflow's database, an Airflow that stores events elsewhere) it does nothing, and the
watcher keeps its documented at-least-once behaviour.
"""
from __future__ import annotations

import json
import logging
from typing import Any

from airflow.listeners import hookimpl

from .watch_position import KEY_PREFIX, stored_key

log = logging.getLogger(__name__)


def watch_position_of(extra: Any) -> tuple[str, int] | None:
    """(watcher key, version accounted for) of an event one of our watchers emitted, else None."""
    payload = extra.get("payload") if isinstance(extra, dict) and extra.get("from_trigger") else None
    position = payload.get("position") if isinstance(payload, dict) else None
    if not isinstance(position, dict):
        return None
    key, through = position.get("key"), position.get("through")
    if not isinstance(key, str) or not key.startswith(KEY_PREFIX) or isinstance(through, bool) or \
            not isinstance(through, int):
        return None
    return key, through


@hookimpl
def on_asset_event_emitted(asset_event: Any) -> None:
    position = watch_position_of(asset_event.extra)
    if position is None:
        return
    try:
        if not record_in_event_transaction(asset_event.asset, asset_event.extra, *position):
            log.info("Not in the transaction storing the event for %s: the watcher's position moves "
                     "when Airflow confirms it", position[0])
    except Exception:  # a listener must never fail the event it is told about
        log.exception("Could not record the stored position %s of watcher %s", position[1], position[0])


def record_in_event_transaction(asset: Any, extra: dict[str, Any], key: str, through: int) -> bool:
    """Write ``through`` under ``stored_key(key)`` of ``asset`` in the session storing the event; False
    when that session cannot be found or the state store is not Airflow's database."""
    # Airflow's ORM and state store, imported when an event is being stored (a process with the
    # metadata database): a task worker loads this plugin too, and never needs them
    from airflow import settings
    from airflow.models.asset import AssetEvent, AssetModel
    from airflow.state import get_state_backend
    from airflow.state.metastore import MetastoreBackend
    from airflow._shared.state import AssetScope, AssetStateStoreWriterKind
    from sqlalchemy import select

    if settings.Session is None:
        return False
    backend = get_state_backend()
    if not isinstance(backend, MetastoreBackend):
        return False
    session = settings.Session()          # the thread's scoped session: the one storing the event, if any
    asset_id = session.scalar(select(AssetModel.id).where(AssetModel.name == asset.name,
                                                          AssetModel.uri == asset.uri))
    if asset_id is None or not session.in_transaction() or not any(
            isinstance(obj, AssetEvent) and obj.asset_id == asset_id and obj.extra == extra
            for obj in list(session.identity_map.values())):
        return False
    scope = AssetScope(asset_id=asset_id)
    # in a savepoint: should our write fail, only it rolls back, and the event is still stored
    with session.begin_nested():
        old = backend.get(scope, stored_key(key), session=session)
        previous = json.loads(old).get("through") if old else None
        if isinstance(previous, int) and previous >= through:
            return True
        backend.set_asset_state_store(scope, stored_key(key), json.dumps({"through": through}),
                                      kind=AssetStateStoreWriterKind.WATCHER, session=session)
    return True
