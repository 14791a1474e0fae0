"""Fixtures of the interop suite: Delta Spark (real PySpark in local mode) as the reference peer.

The SparkSession is the one of the whole test run (``spark`` in tests/conftest.py, with the
Delta Spark jars that `make jars` fetched). Every module here sets ``pytestmark = pytest.mark.spark``.
"""
from __future__ import annotations

import pytest


@pytest.fixture
def sql_conf(spark):
    """Set Spark SQL confs for one test, e.g. sql_conf({"spark.databricks.delta.checkpoint.partSize": "1"});
    the previous values come back afterwards."""
    saved: dict[str, str | None] = {}

    def _set(conf: dict[str, str]) -> None:
        for key, value in conf.items():
            if key not in saved:
                saved[key] = spark.conf.get(key, None)
            spark.conf.set(key, value)
    yield _set
    for key, value in saved.items():
        if value is None:
            spark.conf.unset(key)
        else:
            spark.conf.set(key, value)
