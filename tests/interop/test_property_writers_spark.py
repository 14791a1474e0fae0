"""The property-based writer test (tests/log/test_property_writers.py) with Delta Spark in the loop:
the second writer's appends are Delta Spark INSERTs, and after every step Delta Spark reads the same
rows as we, deltalake and the logical model do. Fewer examples (Spark is slow on 2 cores):
``DELTA_PROPERTY_EXAMPLES_SPARK`` (default 3).
"""
from __future__ import annotations

import sys
import tempfile
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "log"))
from property_writers import World, examples, steps  # noqa: E402 - shared with the non-Spark variant

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def session(spark):
    return spark


def test_delta_spark_agrees_after_every_step(session):
    @settings(max_examples=examples("DELTA_PROPERTY_EXAMPLES_SPARK", 3), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    @given(steps)
    def run(sequence):
        with tempfile.TemporaryDirectory() as root:
            world = World(f"{root}/t")

            def spark_insert(p: str, ids: list[int]) -> None:
                values = ", ".join(f"({i}, '{p}')" for i in ids)
                session.sql(f"INSERT INTO delta.`{world.path}` VALUES {values}")
            world.foreign_append = spark_insert
            for ours, theirs in sequence:
                world.step(ours, theirs)
                world.check()
                rows = Counter((r["id"], r["p"]) for r in
                               session.read.format("delta").load(world.path).select("id", "p").collect())
                assert rows == world.rows, f"Delta Spark: {sorted(rows.elements())} != {sorted(world.rows.elements())}"
    run()
