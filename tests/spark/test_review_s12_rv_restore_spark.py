"""Review (session 12, s12-rv-restore): the pair-undone-by-RESTORE rule (#27) against Delta Spark's own DML with
deletion vectors and its RESTORE TO TIMESTAMP AS OF. Run under ``flock /tmp/spark.lock``."""
from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_delta.log import DeltaTable, PairUndoneByRestoreError, pair_undone_by_restore

pytestmark = pytest.mark.spark

APP = "gdpr_delete"


def _ids(uri: str) -> list[int]:
    return sorted(DeltaTable(uri).snapshot().to_pyarrow().column("id").to_pylist())


def _spark_ts(ms: int) -> str:
    return dt.datetime.fromtimestamp(ms / 1000, tz=dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]


@pytest.fixture
def dv_delete_undone(spark, tmp_path) -> str:
    """v0: ids 0..9 in one file, deletion vectors on; v1: DELETE id = 3 with txn(gdpr_delete, 1) (a DV: the file
    removed and re-added under its own path with the DV); v2: RESTORE TO TIMESTAMP AS OF v0's time (the DV
    dropped: id 3 back)."""
    path = str(tmp_path / "t")
    spark.range(0, 10).repartition(1).write.format("delta").option("delta.enableDeletionVectors", "true").save(path)
    spark.conf.set("spark.databricks.delta.write.txnAppId", APP)
    spark.conf.set("spark.databricks.delta.write.txnVersion", "1")
    try:
        spark.sql(f"DELETE FROM delta.`{path}` WHERE id = 3")
    finally:
        spark.conf.unset("spark.databricks.delta.write.txnAppId")
        spark.conf.unset("spark.databricks.delta.write.txnVersion")
    table = DeltaTable(path)
    v0 = [h for h in table.history() if h["version"] == 0][0]["timestamp"]
    spark.sql(f"RESTORE TABLE delta.`{path}` TO TIMESTAMP AS OF '{_spark_ts(v0)}'")
    table = DeltaTable(path)
    assert table.latest_version() == 2 and table.history(limit=1)[0]["operation"] == "RESTORE"
    assert table.history(limit=1)[0]["operationParameters"].get("version") is None     # only a timestamp
    return path


def test_a_dv_delete_undone_by_a_spark_timestamp_restore_is_not_skipped(dv_delete_undone):
    from airflow_provider_delta.hooks import DeltaTableHook
    path = dv_delete_undone
    assert 3 in _ids(path) and DeltaTable(path).snapshot().transaction_version(APP) == 1
    assert pair_undone_by_restore(DeltaTable(path), APP, 1) is not None
    with pytest.raises(PairUndoneByRestoreError):
        DeltaTableHook().commit_files(path, app_id=APP, txn_version=1)
    assert DeltaTable(path).latest_version() == 2
