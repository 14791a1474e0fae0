"""Review s12 (report-only) of OPTIMIZE against Delta Spark: the commitInfo ``predicate`` parameter.

Delta Spark records ``operationParameters.predicate`` of ``OPTIMIZE ... WHERE`` as a JSON list of the
predicates' text (measured with the Delta Spark 4.4 jars: ``'p IN (a,b)`` for ``WHERE p IN ('a', 'b')``).
DESCRIBE HISTORY, audits and tools that show the predicate read that text; ours was Python's ``repr`` of the
filter value (``(p in ['a', 'b'])``, ``(d = datetime.date(2024, 1, 2))``), now the same text
(``optimize_plan.delta_spark_predicate_text``). The test compares with what Delta Spark writes for the same
filters. Also measured on the jars (s12 maint-fix): ``n = 1`` -> ``('n = 1)``, ``n > -1`` -> ``('n > -1)``,
``n IN (1, 2)`` -> ``'n IN (1,2)``, ``p IS NULL`` -> ``isnull('p)``, ``p <> 'a'`` -> ``NOT ('p = a)``,
``p = 'x"y'`` -> ``('p = x"y)``, ``(p = 'a' AND n = 1) OR (p = 'b' AND n = 2)`` ->
``((('p = a) AND ('n = 1)) OR (('p = b) AND ('n = 2)))``; ``p = 1`` on a string column casts ``p`` to BIGINT
(CAST_INVALID_INPUT on ``'a\\b'``), which our filter refuses as a type mismatch.
"""
from __future__ import annotations

import datetime as dt
import json

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark

CASES = [
    # (our partition_filter, the same as Spark SQL)
    ([("p", "in", ["a", "b"])], "p IN ('a', 'b')"),
    ([("p", "=", "it's")], "p = 'it\\'s'"),
    ([("d", "=", dt.date(2024, 1, 2))], "d = DATE'2024-01-02'"),
    ([("p", "=", "a"), ("d", ">=", dt.date(2024, 1, 2))], "p = 'a' AND d >= DATE'2024-01-02'"),
    ([[("p", "=", "a")], [("p", "=", "b"), ("d", "<", dt.date(2024, 1, 3))]],
     "p = 'a' OR (p = 'b' AND d < DATE'2024-01-03')"),
    ([("p", "!=", "a")], "p != 'a'"),
    ([("p", "not in", ["a"])], "p NOT IN ('a')"),
    ([("p", "is not", None)], "p IS NOT NULL"),
]


def _spark_predicate(spark, path: str, where: str) -> str:
    for p, d in (("a", "2024-01-02"), ("b", "2024-01-02"), ("it's", "2024-01-02")):
        for i in range(2):
            spark.sql(f"SELECT {i} AS x, '{p}' AS p, DATE'{d}' AS d".replace("'it's'", "'it\\'s'")) \
                .write.format("delta").mode("append").partitionBy("p", "d").save(path)
    spark.sql(f"OPTIMIZE delta.`{path}` WHERE {where}")
    return DeltaTable(path).history(limit=1)[0]["operationParameters"]["predicate"]


def _our_predicate(path: str, partition_filter) -> str:
    schema = pa.schema([("x", pa.int32()), ("p", pa.string()), ("d", pa.date32())])
    table = DeltaTable.create(path, schema, partition_by=["p", "d"])
    for p in ("a", "b", "it's"):
        for i in range(2):
            table.write(pa.table({"x": [i], "p": [p], "d": [dt.date(2024, 1, 2)]}, schema=schema))
    assert table.optimize(partition_filter=partition_filter)["version"] is not None
    return table.history(limit=1)[0]["operationParameters"]["predicate"]


def test_optimize_predicate_text_is_delta_sparks(spark, tmp_path):
    ours, theirs = [], []
    for n, (partition_filter, where) in enumerate(CASES):
        theirs.append(json.loads(_spark_predicate(spark, str(tmp_path / f"spark{n}"), where)))
        ours.append(json.loads(_our_predicate(str(tmp_path / f"ours{n}"), partition_filter)))
    assert ours == theirs
