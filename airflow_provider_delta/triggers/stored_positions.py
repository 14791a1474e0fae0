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

It writes through Airflow's internals (``airflow._shared.state``, ``airflow.state``, the
ORM models and the session's identity map), which carry no compatibility promise. So it
acts only on the Airflow versions it was tested with (:data:`TESTED_AIRFLOW`); on any
other version, or where those modules do not import, it logs once and does nothing:
the at-least-once path again.
"""
from __future__ import annotations

import json
import logging
from types import SimpleNamespace
from typing import Any

from airflow import __version__ as AIRFLOW_VERSION
from airflow.listeners import hookimpl

from .watch_position import KEY_PREFIX, stored_key

log = logging.getLogger(__name__)

#: Airflow (major, minor) releases the listener is tested with (tests/airflow/test_stored_positions.py,
#: test_commit_event_processes.py); extend it only after running those tests on the new release
TESTED_AIRFLOW = ((3, 3),)
_warned: set[str] = set()


def _once(reason: str) -> None:
    if reason not in _warned:
        _warned.add(reason)
        log.warning("The Delta watcher-position listener is off (%s): a commit watcher may announce an event "
                    "again after a triggerer restart (flagged redelivered), as documented", reason)


def major_minor(version: str) -> tuple[int, int] | None:
    """(3, 3) of ``"3.3.2"``, ``"3.3.0rc1"``, ``"3.3.0.dev0"``; None when it does not start with two numbers."""
    parts = version.split(".")
    try:
        return int(parts[0]), int("".join(ch for ch in parts[1] if ch.isdigit()) or "x")
    except (IndexError, ValueError):
        return None


def airflow_internals(version: str = AIRFLOW_VERSION) -> SimpleNamespace | None:
    """The core modules the listener writes through, or None (logged once) on an Airflow release it was not
    tested with or where they do not import. Imported on the first event: a task worker loads this plugin
    too, and never needs them."""
    if major_minor(version) not in TESTED_AIRFLOW:
        _once(f"Airflow {version} is not among the tested releases {TESTED_AIRFLOW}")
        return None
    try:
        from airflow import settings
        from airflow._shared.state import AssetScope, AssetStateStoreWriterKind
        from airflow.models.asset import AssetEvent, AssetModel
        from airflow.state import get_state_backend
        from airflow.state.metastore import MetastoreBackend
        from sqlalchemy import select
    except ImportError as e:
        _once(f"Airflow internals do not import: {e}")
        return None
    return SimpleNamespace(settings=settings, AssetScope=AssetScope, WriterKind=AssetStateStoreWriterKind,
                           AssetEvent=AssetEvent, AssetModel=AssetModel, get_state_backend=get_state_backend,
                           MetastoreBackend=MetastoreBackend, select=select)


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
    when that session cannot be found, the state store is not Airflow's database, or this Airflow is not
    one the listener is tested with (:func:`airflow_internals`)."""
    core = airflow_internals()
    if core is None:
        return False
    if core.settings.Session is None:
        return False
    backend = core.get_state_backend()
    if not isinstance(backend, core.MetastoreBackend):
        return False
    session = core.settings.Session()     # the thread's scoped session: the one storing the event, if any
    asset_id = session.scalar(core.select(core.AssetModel.id).where(core.AssetModel.name == asset.name,
                                                               core.AssetModel.uri == asset.uri))
    if asset_id is None or not session.in_transaction() or not any(
            isinstance(obj, core.AssetEvent) and obj.asset_id == asset_id and obj.extra == extra
            for obj in list(session.identity_map.values())):
        return False
    scope = core.AssetScope(asset_id=asset_id)
    # in a savepoint: should our write fail, only it rolls back, and the event is still stored
    with session.begin_nested():
        old = backend.get(scope, stored_key(key), session=session)
        previous = json.loads(old).get("through") if old else None
        if isinstance(previous, int) and previous >= through:
            return True
        backend.set_asset_state_store(scope, stored_key(key), json.dumps({"through": through}),
                                      kind=core.WriterKind.WATCHER, session=session)
    return True
