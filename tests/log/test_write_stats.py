"""Per-file statistics: what Delta Spark would record for the same data."""
from __future__ import annotations

import datetime as dt
import decimal
import json

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from airflow_provider_delta.log.base.stats import collect_stats, truncate_max_string, truncate_min_string


def stats(table: pa.Table, conf: dict | None = None) -> dict:
    return json.loads(collect_stats(table, conf))


def test_numbers_dates_timestamps_and_null_counts():
    t = pa.table({
        "i": pa.array([3, None, -7], pa.int32()),
        "d": pa.array([dt.date(2020, 1, 2), dt.date(1969, 12, 31), None]),
        "ts": pa.array([dt.datetime(2024, 1, 1, 0, 0, 0, 123999), None, dt.datetime(2023, 5, 1)],
                       pa.timestamp("us", tz="UTC")),
        "ntz": pa.array([dt.datetime(2024, 1, 1, 12, 30, 1, 5000), None, None], pa.timestamp("us")),
        "b": [True, None, False],
    })
    s = stats(t)
    assert s["numRecords"] == 3
    assert s["minValues"] == {"i": -7, "d": "1969-12-31", "ts": "2023-05-01T00:00:00.000Z",
                              "ntz": "2024-01-01T12:30:01.005"}
    # timestamps are truncated to milliseconds (down), as Spark does
    assert s["maxValues"]["ts"] == "2024-01-01T00:00:00.123Z"
    assert s["nullCount"] == {"i": 1, "d": 1, "ts": 1, "ntz": 2, "b": 1}
    assert "b" not in s["minValues"]                 # no min/max for booleans


def test_decimals_are_exact_json_numbers():
    t = pa.table({"x": pa.array([decimal.Decimal("12345678901234567890.12"), decimal.Decimal("-0.50")],
                                pa.decimal128(22, 2))})
    text = collect_stats(t)
    assert '"minValues":{"x":-0.50}' in text
    assert '"maxValues":{"x":12345678901234567890.12}' in text
    json.loads(text)


def test_float_nan_and_infinity_leave_bounds_out_but_stay_valid_json():
    t = pa.table({"f": [1.5, float("nan"), -2.0], "g": [float("inf"), 1.0, 2.0], "h": [float("nan")] * 3})
    s = stats(t)
    assert s["minValues"]["f"] == -2.0 and "f" not in s.get("maxValues", {})
    assert s["minValues"]["g"] == 1.0
    assert "g" not in s.get("maxValues", {})
    assert "h" not in s.get("minValues", {})
    assert s["nullCount"] == {"f": 0, "g": 0, "h": 0}


def test_all_null_column_has_only_null_count():
    t = pa.table({"a": pa.array([None, None], pa.int64())})
    s = stats(t)
    assert s["nullCount"] == {"a": 2}
    assert "minValues" not in s


def test_nested_struct_stats_mirror_schema_and_count_parent_nulls():
    t = pa.table({"s": pa.array([{"x": 1, "y": "b"}, None, {"x": 5, "y": None}])})
    s = stats(t)
    assert s["minValues"] == {"s": {"x": 1, "y": "b"}}
    assert s["maxValues"] == {"s": {"x": 5, "y": "b"}}
    assert s["nullCount"] == {"s": {"x": 1, "y": 2}}


def test_lists_and_maps_get_null_counts_only():
    t = pa.table({"l": pa.array([[1, 2], None]), "m": pa.array([[("k", 1)], [("j", 2)]], pa.map_(pa.string(), pa.int64()))})
    s = stats(t)
    assert s["nullCount"] == {"l": 1, "m": 0}
    assert "minValues" not in s


def test_num_indexed_cols_counts_leaves_in_order():
    t = pa.table({"a": [1], "s": pa.array([{"x": 1, "y": 2}]), "c": [3]})
    s = stats(t, {"delta.dataSkippingNumIndexedCols": "2"})
    assert s["nullCount"] == {"a": 0, "s": {"x": 0}}
    s = stats(t, {"delta.dataSkippingNumIndexedCols": "0"})
    assert set(s) == {"numRecords"}
    s = stats(t, {"delta.dataSkippingNumIndexedCols": "-1"})
    assert s["nullCount"] == {"a": 0, "s": {"x": 0, "y": 0}, "c": 0}


def test_stats_columns_property_selects_columns_and_nested_paths():
    t = pa.table({"a": [1], "s": pa.array([{"x": 1, "y": 2}]), "c": [3]})
    s = stats(t, {"delta.dataSkippingStatsColumns": "c, s.y"})
    assert s["nullCount"] == {"s": {"y": 0}, "c": 0}


def test_default_indexes_first_32_leaf_columns():
    t = pa.table({f"c{i}": [i] for i in range(40)})
    s = stats(t)
    assert list(s["minValues"]) == [f"c{i}" for i in range(32)]


def test_long_strings_are_truncated_with_tie_breaker():
    long = "a" * 40
    t = pa.table({"s": [long, "b"]})
    s = stats(t)
    assert s["minValues"]["s"] == "a" * 32
    assert s["maxValues"]["s"] == "b"
    t = pa.table({"s": ["z" * 40, "a"]})
    assert stats(t)["maxValues"]["s"] == "z" * 32 + "\x7f"


def test_string_truncation_rules_match_delta_spark():
    assert truncate_min_string("abc", 32) == "abc"
    assert truncate_max_string("abc", 32) == "abc"
    # next character below U+007F -> ASCII tie-breaker; else the largest code point
    assert truncate_max_string("a" * 32 + "b", 32) == "a" * 32 + "\x7f"
    assert truncate_max_string("a" * 32 + "\u00e9", 32) == "a" * 32 + "\U0010ffff"
    # a surrogate pair straddling the cut stays whole (counted as two UTF-16 units)
    s = "a" * 31 + "\U0001F600" + "xyz"
    assert truncate_min_string(s, 32) == "a" * 31 + "\U0001F600"
    assert truncate_max_string(s, 32) == "a" * 31 + "\U0001F600\x7f"
    # characters that are already the maximum are skipped over, within 2x the prefix
    assert truncate_max_string("a" * 32 + "\U0010ffff" + "b", 32) == "a" * 32 + "\U0010ffff\x7f"
    assert truncate_max_string("a" * 32 + "\U0010ffff" * 40, 32) is None
    assert truncate_max_string("ab", 0) is None


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(min_size=0, max_size=50), min_size=1, max_size=8), st.integers(1, 40))
def test_truncated_bounds_still_bound_every_value(values, prefix):
    """Whatever the strings, min <= every value <= max in UTF-8 byte order (or the bound is absent)."""
    lo_raw, hi_raw = min(v.encode() for v in values), max(v.encode() for v in values)
    lo = truncate_min_string(lo_raw.decode(), prefix)
    hi = truncate_max_string(hi_raw.decode(), prefix)
    for v in values:
        if lo is not None:
            assert lo.encode() <= v.encode()
        if hi is not None:
            assert v.encode() <= hi.encode()


def test_string_prefix_length_property_is_honoured():
    t = pa.table({"s": ["abcdef"]})
    s = stats(t, {"delta.dataSkippingStringPrefixLength": "3"})
    assert s["minValues"]["s"] == "abc" and s["maxValues"]["s"] == "abc\x7f"


@pytest.mark.parametrize("unit", ["s", "ms", "us", "ns"])
def test_timestamp_units_render_the_same_instant(unit):
    value = dt.datetime(2021, 3, 4, 5, 6, 7, 891000 if unit != "s" else 0)
    t = pa.table({"t": pa.array([value], pa.timestamp(unit, tz="UTC"))})
    expected = "2021-03-04T05:06:07.891Z" if unit != "s" else "2021-03-04T05:06:07.000Z"
    assert stats(t)["minValues"]["t"] == expected


def test_pre_epoch_timestamps_truncate_down():
    t = pa.table({"t": pa.array([-1500], pa.timestamp("us", tz="UTC"))})  # 1969-12-31T23:59:59.9985
    assert stats(t)["minValues"]["t"] == "1969-12-31T23:59:59.998Z"
