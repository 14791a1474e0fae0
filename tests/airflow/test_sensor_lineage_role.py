"""Finding of the docs review (s9): the commit sensor reports the table it waits on as an OpenLineage
*output*, as if waiting for a commit had written the table. It only reads the log (the guide,
"OpenLineage", lists it nowhere; every other read-only task, the snapshot operator, the decorator
and dry-run maintenance, reports its table as an input). ``DeltaCommitSensor`` inherits
``lineage_role = "output"`` from ``DeltaTaskMixin`` and ``emit_asset_events`` records the version."""
from __future__ import annotations

import pytest

from airflow_provider_delta.sensors import DeltaCommitSensor

pytest.importorskip("airflow.providers.openlineage", reason="the openlineage extra is part of the test extra")


def test_the_commit_sensor_only_reads_the_table(make_table, make_context):
    table = make_table(commits=2)
    sensor = DeltaCommitSensor(task_id="wait", table_uri=table.storage.root, target_version=1, mode="poke",
                               poke_interval=1, timeout=30, deferrable=False)
    result = sensor.execute(make_context("wait"))
    assert result["version"] == 2
    lineage = sensor.get_openlineage_facets_on_complete(None)
    assert [d.name for d in lineage.inputs] == [table.storage.root]
    assert lineage.outputs == []
