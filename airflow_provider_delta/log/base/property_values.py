"""The values of the ``delta.*`` table properties this package knows, checked when they are set.

Delta Spark validates each known property when a table is created or altered (every entry of
its ``DeltaConfigs`` carries a validation rule) and refuses a bad value before anything is
written. A value that is not checked then would only fail later, when every metadata cleanup
or checkpoint reads it (``'None'`` rendered from an empty template, say). The rules here are
the same ones: retention durations are intervals without months or years and not negative
(:mod:`.intervals`), counts are integers in the range Delta Spark allows, flags are
``true``/``false`` in any case. Unknown properties and ``delta.*`` properties without a rule
here pass as given.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from .errors import InvalidArgumentError
from .features import (APPEND_ONLY_PROPERTY, CHANGE_DATA_FEED_PROPERTY, CHECKPOINT_INTERVAL_PROPERTY,
                       CHECKPOINT_STATS_AS_JSON_PROPERTY, CHECKPOINT_STATS_AS_STRUCT_PROPERTY,
                       DATA_SKIPPING_NUM_INDEXED_COLS_PROPERTY, DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY,
                       DELETED_FILE_RETENTION_PROPERTY, DELETION_VECTORS_PROPERTY, EXPIRED_LOG_CLEANUP_PROPERTY,
                       ICT_ENABLE_PROPERTY, LOG_RETENTION_PROPERTY, ROW_TRACKING_PROPERTY,
                       SET_TRANSACTION_RETENTION_PROPERTY, TYPE_WIDENING_PROPERTY, normalize_properties)
from .intervals import parse_interval_ms

CHECKPOINT_RETENTION_PROPERTY = "delta.checkpointRetentionDuration"

#: Properties holding a retention interval (Delta Spark: ``isValidIntervalConfigValue``).
INTERVAL_PROPERTIES = (LOG_RETENTION_PROPERTY, DELETED_FILE_RETENTION_PROPERTY, SET_TRANSACTION_RETENTION_PROPERTY,
                       CHECKPOINT_RETENTION_PROPERTY)
#: Boolean properties that must be 'true' or 'false' when given.
BOOLEAN_PROPERTIES = (ICT_ENABLE_PROPERTY, APPEND_ONLY_PROPERTY, CHANGE_DATA_FEED_PROPERTY,
                      DELETION_VECTORS_PROPERTY, ROW_TRACKING_PROPERTY, TYPE_WIDENING_PROPERTY,
                      EXPIRED_LOG_CLEANUP_PROPERTY, CHECKPOINT_STATS_AS_JSON_PROPERTY,
                      CHECKPOINT_STATS_AS_STRUCT_PROPERTY)
#: Integer properties and the smallest value Delta Spark accepts for each.
INTEGER_PROPERTY_MINIMUM = {CHECKPOINT_INTERVAL_PROPERTY: 1, DATA_SKIPPING_NUM_INDEXED_COLS_PROPERTY: -1,
                            DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY: 0}

_INTEGER = re.compile(r"[+-]?\d+")


def _check_interval(key: str, value: str) -> None:
    parse_interval_ms(value, what=f"table property {key}")


def _check_boolean(key: str, value: str) -> None:
    if value.strip().lower() not in ("true", "false"):
        raise InvalidArgumentError(f"table property {key} must be 'true' or 'false', got {value!r}")


def _check_integer(key: str, value: str) -> None:
    least = INTEGER_PROPERTY_MINIMUM[key]
    if not _INTEGER.fullmatch(value.strip()) or int(value) < least:
        raise InvalidArgumentError(f"table property {key} must be an integer of at least {least}, got {value!r}")


_RULES: dict[str, Callable[[str, str], None]] = {
    **{k: _check_interval for k in INTERVAL_PROPERTIES},
    **{k: _check_boolean for k in BOOLEAN_PROPERTIES},
    **{k: _check_integer for k in INTEGER_PROPERTY_MINIMUM},
}


def check_property_values(properties: Mapping[str, str | None]) -> None:
    """Refuse (:class:`InvalidArgumentError`) a known property set to a value Delta Spark would
    refuse; ``None`` (a property being removed) passes."""
    for key, value in properties.items():
        rule = _RULES.get(key)
        if rule is not None and value is not None:
            rule(key, value)


def checked_properties(properties: dict[str, Any] | None) -> dict[str, str]:
    """Table properties as strings (:func:`~.features.normalize_properties`), their values checked."""
    out = normalize_properties(properties)
    check_property_values(out)
    return out
