"""Break attempts on OPTIMIZE (issue #24) against Delta Spark: each test is a finding."""
from __future__ import annotations

import pytest
from deltalake import DeltaTable as RsTable

from airflow_provider_delta.log import DeltaTable

pytestmark = pytest.mark.spark


def test_our_optimize_of_spark_files_with_non_ascii_partition_values_reads_the_same_in_spark(spark, tmp_path):
    path = str(tmp_path / "t")
    for i in range(3):
        spark.createDataFrame([(i * 10 + j, city) for j, city in enumerate(["München", "São Paulo", "東京", "Oslo"])],
                              "id long, city string").write.format("delta").mode("append").partitionBy("city").save(path)
    table = DeltaTable(path)
    assert table.snapshot().to_pyarrow().num_rows == 12
    m = table.optimize()
    assert (m["numFilesRemoved"], m["numFilesAdded"]) == (12, 4)
    ours = sorted(table.snapshot().to_pyarrow().column("id").to_pylist())
    theirs = sorted(r["id"] for r in spark.read.format("delta").load(path).collect())
    assert theirs == ours
    assert sorted(RsTable(path).to_pyarrow_table().column("id").to_pylist()) == ours
