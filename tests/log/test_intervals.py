"""Delta interval properties ("interval 30 days") -> milliseconds, as Delta Spark reads them."""
from __future__ import annotations

import pytest

from airflow_provider_delta.log.base.errors import InvalidArgumentError, InvalidTableStateError
from airflow_provider_delta.log.base.intervals import (
    deleted_file_retention_ms, log_retention_ms, parse_interval_ms, set_transaction_retention_ms,
)

DAY = 86_400_000


@pytest.mark.parametrize("text, ms", [
    ("interval 30 days", 30 * DAY),
    ("interval 1 week", 7 * DAY),
    ("1 week", 7 * DAY),
    ("INTERVAL 2 WEEKS", 14 * DAY),
    ("  interval   36 hours ", 36 * 3_600_000),
    ("interval 1 day 12 hours", DAY + 12 * 3_600_000),
    ("interval 90 minutes", 90 * 60_000),
    ("interval 1.5 seconds", 1500),
    ("interval 250 milliseconds", 250),
    ("interval 1999 microseconds", 1),      # truncated to whole ms, as Spark's getMilliSeconds
    ("interval 0 days", 0),
    ("interval 2 days -1 day", DAY),        # Spark sums signed parts
])
def test_parses_spark_intervals(text, ms):
    assert parse_interval_ms(text) == ms


@pytest.mark.parametrize("text", [
    "", "   ", "interval", "30", "days", "interval 30 fortnights", "interval 1 month",
    "interval 1 year", "interval 1.5 days", "interval -1 day", "interval 30 days garbage",
    "interval 30days",
])
def test_rejects_what_spark_rejects(text):
    with pytest.raises(InvalidArgumentError):
        parse_interval_ms(text)


def test_non_string_is_rejected():
    with pytest.raises(InvalidArgumentError):
        parse_interval_ms(30)  # type: ignore[arg-type]


def test_table_property_defaults_follow_delta_spark():
    assert log_retention_ms({}) == 30 * DAY
    assert deleted_file_retention_ms({}) == 7 * DAY
    assert set_transaction_retention_ms({}) is None


def test_table_property_values_are_read():
    conf = {"delta.logRetentionDuration": "interval 2 days",
            "delta.deletedFileRetentionDuration": "interval 12 hours",
            "delta.setTransactionRetentionDuration": "interval 1 hour"}
    assert log_retention_ms(conf) == 2 * DAY
    assert deleted_file_retention_ms(conf) == 12 * 3_600_000
    assert set_transaction_retention_ms(conf) == 3_600_000


def test_bad_table_property_is_a_table_state_error_naming_the_key():
    with pytest.raises(InvalidTableStateError, match="delta.logRetentionDuration"):
        log_retention_ms({"delta.logRetentionDuration": "interval 1 month"})
