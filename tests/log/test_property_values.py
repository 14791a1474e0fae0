"""Known delta.* property values are checked when set, as Delta Spark's DeltaConfigs do (#23)."""
from __future__ import annotations

import os

import pyarrow as pa
import pytest

from airflow_provider_delta.log import DeltaTable, InvalidArgumentError, checked_properties

SCHEMA = pa.schema([("id", pa.int64())])

BAD = [
    ("delta.logRetentionDuration", "None"), ("delta.logRetentionDuration", ""),
    ("delta.logRetentionDuration", "interval 1 month"), ("delta.deletedFileRetentionDuration", "-1 days"),
    ("delta.setTransactionRetentionDuration", "soon"), ("delta.checkpointRetentionDuration", "2 fortnights"),
    ("delta.checkpointInterval", "None"), ("delta.checkpointInterval", "0"), ("delta.checkpointInterval", "1.5"),
    ("delta.dataSkippingNumIndexedCols", "-2"), ("delta.dataSkippingStringPrefixLength", "-1"),
    ("delta.enableExpiredLogCleanup", "yes"), ("delta.checkpoint.writeStatsAsJson", "None"),
]
GOOD = {
    "delta.logRetentionDuration": "interval 60 days", "delta.deletedFileRetentionDuration": "2 weeks",
    "delta.setTransactionRetentionDuration": "interval 7 days", "delta.checkpointRetentionDuration": "3 days",
    "delta.checkpointInterval": "5", "delta.dataSkippingNumIndexedCols": "-1",
    "delta.dataSkippingStringPrefixLength": "0", "delta.enableExpiredLogCleanup": "FALSE",
    "delta.checkpoint.writeStatsAsJson": "true", "my.own.property": "None",
}


@pytest.mark.parametrize("key,value", BAD)
def test_a_bad_value_is_refused_at_create_and_nothing_is_written(tmp_path, key, value):
    path = tmp_path / "t"
    with pytest.raises(InvalidArgumentError, match=key.replace(".", r"\.")):
        DeltaTable.create(str(path), SCHEMA, properties={key: value})
    assert not path.exists() or not os.listdir(path)


@pytest.mark.parametrize("key,value", BAD)
def test_a_bad_value_is_refused_by_set_properties_and_no_commit_is_written(tmp_path, key, value):
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA)
    txn = table.transaction()
    with pytest.raises(InvalidArgumentError):
        txn.set_properties({key: value})
    assert table.snapshot().version == 0


def test_good_values_are_stored_and_cleanup_reads_them(tmp_path):
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties=GOOD)
    assert {k: table.snapshot().configuration[k] for k in GOOD} == GOOD
    txn = table.transaction()
    txn.set_properties({"delta.checkpointInterval": "7", "delta.logRetentionDuration": None})
    txn.commit()
    conf = table.snapshot().configuration
    assert conf["delta.checkpointInterval"] == "7" and "delta.logRetentionDuration" not in conf
    table.cleanup_metadata()


@pytest.mark.parametrize("value", ["yes", "true", "None"])
def test_a_bad_feature_value_is_refused_naming_every_accepted_value(tmp_path, value):
    """delta.feature.<name> takes 'supported' or 'enabled' (any case, as Delta Spark): the message says both."""
    path = tmp_path / "t"
    with pytest.raises(InvalidArgumentError, match=r"delta\.feature\.appendOnly must be 'supported' or 'enabled'"):
        DeltaTable.create(str(path), SCHEMA, properties={"delta.feature.appendOnly": value})
    assert not path.exists() or not os.listdir(path)
    # the same rule, from the names-and-values check that callers run before handing properties on
    with pytest.raises(InvalidArgumentError, match="'supported' or 'enabled'"):
        checked_properties({"delta.feature.appendOnly": value})


@pytest.mark.parametrize("value", ["supported", "enabled", "Enabled", "SUPPORTED"])
def test_feature_values_delta_spark_takes_pass(tmp_path, value):
    name = "delta.feature.inCommitTimestamp"
    assert checked_properties({name: value}) == {name: value}
    table = DeltaTable.create(str(tmp_path / "t"), SCHEMA, properties={name: value})
    assert "inCommitTimestamp" in table.snapshot().protocol.writer_features
