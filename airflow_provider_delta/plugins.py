"""The provider's Airflow plugin: the listener that stores commit watchers' positions with their events.

Registered as an ``airflow.plugins`` entry point, which every Airflow process with the
provider installed loads (plugins in the provider info load only where provider
discovery is not lazy); see :mod:`.triggers.stored_positions`.
"""
from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from .triggers import stored_positions


class DeltaProviderPlugin(AirflowPlugin):
    name = "delta_provider"
    listeners = [stored_positions]
