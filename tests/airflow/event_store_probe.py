"""Store asset events the way the triggerer does, in a real Airflow database: ``python event_store_probe.py STEPS``.

Each step registers one asset event from "our" watcher (``AssetManager.register_asset_change`` in a
session, as ``Trigger.submit_event`` does), so the provider's listener runs inside that transaction:

- ``commit:N``   an event accounting for version N, committed;
- ``rollback:N`` the same, then the transaction fails and rolls back;
- ``outside:N``  the listener's writer called in a session of its own, with no event in it;
- ``failing:N``  an event whose position write fails in the database (a statement on a missing table);
- ``untested:N`` an event stored while the listener believes this Airflow is a release it was not tested on;
- ``noimport:N`` an event stored while one of the Airflow internals the listener uses cannot be imported.

Prints one JSON line: how many asset events the database holds and the asset state store's rows.
"""
import json
import sys

from sqlalchemy import func, select, text

from airflow.assets.manager import AssetManager
from airflow.models.asset import AssetActive, AssetEvent, AssetModel
from airflow.models.asset_state_store import AssetStateStoreModel
from airflow.state.metastore import MetastoreBackend
from airflow.utils.session import create_session

from airflow_provider_delta.triggers import stored_positions
from airflow_provider_delta.triggers.stored_positions import record_in_event_transaction

KEY = "delta_commit_watch_0123456789abcdef"


def extra(through: int) -> dict:
    return {"from_trigger": True, "payload": {"table_uri": "/t", "version": through, "versions": [through],
                                              "redelivered": False, "position": {"key": KEY, "through": through}}}


def main() -> None:
    with create_session() as s:
        asset = AssetModel(name="delta_t", uri="delta:///t", group="asset")
        s.add(asset)
        s.flush()
        s.add(AssetActive.for_asset(asset))
    outside = []
    for step in sys.argv[1:]:
        kind, through = step.split(":")
        try:
            with create_session() as s:
                asset = s.scalar(select(AssetModel).where(AssetModel.name == "delta_t"))
                if kind == "outside":
                    outside.append(record_in_event_transaction(asset.to_serialized(), extra(int(through)),
                                                               KEY, int(through)))
                    continue
                working = MetastoreBackend.set_asset_state_store
                tested, saved_module = stored_positions.TESTED_AIRFLOW, sys.modules.get("airflow.state.metastore")
                if kind == "untested":
                    stored_positions.TESTED_AIRFLOW = ((2, 11),)
                if kind == "noimport":
                    sys.modules["airflow.state.metastore"] = None   # "import airflow.state.metastore" fails
                if kind == "failing":
                    def broken_write(self, *args, session, **kwargs):
                        session.execute(text("INSERT INTO no_such_table VALUES (1)"))
                    MetastoreBackend.set_asset_state_store = broken_write
                try:
                    AssetManager.register_asset_change(asset=asset, extra=extra(int(through)), session=s)
                finally:
                    MetastoreBackend.set_asset_state_store = working
                    stored_positions.TESTED_AIRFLOW = tested
                    sys.modules["airflow.state.metastore"] = saved_module
                if kind == "rollback":
                    raise RuntimeError("the transaction storing the event fails")
        except RuntimeError:
            pass
    with create_session() as s:
        print(json.dumps({"events": s.scalar(select(func.count()).select_from(AssetEvent)), "outside": outside,
                          "store": {r.key: json.loads(r.value) for r in s.scalars(select(AssetStateStoreModel))}}))


if __name__ == "__main__":
    main()
