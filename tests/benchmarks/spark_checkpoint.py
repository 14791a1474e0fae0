"""Set-up step of the read benchmark (not timed): Delta Spark writes a table's checkpoint.

    python tests/benchmarks/spark_checkpoint.py PATH [--struct]

The checkpoint format of Delta Spark follows two table properties:
``delta.checkpoint.writeStatsAsJson`` (``stats`` as a JSON string per file) and
``delta.checkpoint.writeStatsAsStruct`` (the typed ``stats_parsed`` and
``partitionValues_parsed`` columns). They are set on the table first (one metadata
commit, no file change), then Delta Spark checkpoints the latest version: JSON stats
only by default, JSON plus the typed columns with ``--struct``.

Uses the Delta jars in ``.jars/`` (``make jars``) through ``scripts/delta_spark.py``, in
a local Spark of its own; nothing of this runs while the benchmark measures.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "scripts"))

import delta_spark  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("path")
    ap.add_argument("--struct", action="store_true", help="also write stats_parsed / partitionValues_parsed")
    a = ap.parse_args()
    from pyspark.sql import SparkSession
    builder = (SparkSession.builder.master("local[2]").appName("bench-checkpoint")
               .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
               .config("spark.sql.session.timeZone", "UTC").config("spark.driver.memory", "3g")
               .config("spark.sql.shuffle.partitions", "4"))
    spark = delta_spark.configure(builder).getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    try:
        path = str(Path(a.path).resolve())
        struct = "true" if a.struct else "false"
        spark.sql(f"ALTER TABLE delta.`{path}` SET TBLPROPERTIES ("
                  f"'delta.checkpoint.writeStatsAsJson' = 'true', "
                  f"'delta.checkpoint.writeStatsAsStruct' = '{struct}')")
        jvm = spark.sparkContext._jvm
        log = jvm.org.apache.spark.sql.delta.DeltaLog.forTable(spark._jsparkSession, path)
        log.checkpoint()
    finally:
        spark.stop()


if __name__ == "__main__":
    main()
