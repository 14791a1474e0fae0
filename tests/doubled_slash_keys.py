"""Add paths with a doubled slash that is no authority's, and the key Delta Spark gives each.

Shared by tests/log/test_final_s10_log.py (our replay reconciles a remove spelled as the key with the add)
and tests/interop/test_final_s10_log_spark.py (Delta Spark's own reading: ``new Path(new URI(add))``).
"""

#: (the add's spelling, the remove's: Delta Spark's canonical path of the add); <root> is the table root
KEY_CASES = {"file-four-slashes": ("file:///<root>/x.parquet", "file:<root>/x.parquet"),
             "colon-segment": ("d/a://x.parquet", "d/a:/x.parquet")}
