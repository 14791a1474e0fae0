"""Finding of the docs review (s9): ``DeltaCommitSensor(operation="WRITE,MERGE")`` (a rendered
``"{{ params.ops | join(',') }}"``, or the ``"day,region"`` form ``partition_by``/``z_order_by`` accept)
is taken as ONE operation name, ``WRITE,MERGE``, that no commit can have (Delta operation names hold
no comma): the sensor waits until its timeout instead of matching, or refusing the value as it refuses
a rendered list (``"['WRITE', 'MERGE']"``: ``DeltaArgumentError``)."""
from __future__ import annotations

import pyarrow as pa
import pytest

from airflow_provider_delta.hooks.arguments import DeltaArgumentError
from airflow_provider_delta.sensors import DeltaCommitSensor


def test_a_comma_separated_operation_text_matches_or_is_refused(make_table, make_context):
    table = make_table(commits=0)
    table.write(pa.table({"id": [1], "day": ["2026-01-01"]}))          # version 1: a WRITE
    sensor = DeltaCommitSensor(task_id="wait", table_uri=table.storage.root, after_version=0,
                               operation="WRITE,MERGE", mode="poke", poke_interval=1, timeout=3, deferrable=False)
    try:
        result = sensor.execute(make_context("wait"))
    except DeltaArgumentError:
        return                                       # refused, as a rendered list is: fine
    assert result["count"] == 1 and result["first_version"] == 1
