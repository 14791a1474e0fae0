"""The values of the ``delta.*`` table properties this package knows, checked when they are set.

Delta Spark validates each known property when a table is created or altered (every entry of
its ``DeltaConfigs`` carries a validation rule) and refuses a bad value before anything is
written. A value that is not checked then would only fail later, when every metadata cleanup
or checkpoint reads it (``'None'`` rendered from an empty template, say). The rules here are
the same ones: retention durations are intervals without months or years and not negative
(:mod:`.intervals`, words separated by spaces, microseconds within a Java long), the log
retention at least the deleted-file retention, counts are integers in the range Delta Spark
allows (Java ints), flags are ``true``/``false`` in any case, without blanks around them (Delta
Spark's parsers take none: a value it cannot parse fails every later read of the table there). Unknown properties and ``delta.*`` properties without a rule
here pass as given.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from .errors import InvalidArgumentError
from .features import (APPEND_ONLY_PROPERTY, CHANGE_DATA_FEED_PROPERTY, CHECKPOINT_INTERVAL_PROPERTY,
                       CHECKPOINT_STATS_AS_JSON_PROPERTY, CHECKPOINT_STATS_AS_STRUCT_PROPERTY,
                       DATA_SKIPPING_NUM_INDEXED_COLS_PROPERTY, DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY,
                       DELETED_FILE_RETENTION_DEFAULT, DELETED_FILE_RETENTION_PROPERTY, DELETION_VECTORS_PROPERTY,
                       EXPIRED_LOG_CLEANUP_PROPERTY, ICT_ENABLE_PROPERTY, LOG_RETENTION_DEFAULT,
                       LOG_RETENTION_PROPERTY, ROW_TRACKING_PROPERTY,
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

#: Java's ``Integer.parseInt``: an optional sign and ASCII digits, no blanks around them
_INTEGER = re.compile(r"[+-]?[0-9]+")
#: the integer properties are Java ints in Delta Spark (a larger value fails every later read of it)
INT_MAX = 2**31 - 1
#: a CalendarInterval's microseconds are a Java long
_LONG_MAX = 2**63 - 1


def _check_interval(key: str, value: str) -> None:
    what = f"table property {key}"
    if any(ch.isspace() and ch != " " for ch in value):       # Spark's interval parser splits on spaces only
        raise InvalidArgumentError(f"{what} {value!r} is not a valid interval: separate its words by spaces")
    if parse_interval_ms(value, what=what) * 1000 > _LONG_MAX:
        raise InvalidArgumentError(f"{what} {value!r} is too long an interval for Delta Spark")


def _check_boolean(key: str, value: str) -> None:
    if value.lower() not in ("true", "false"):              # Scala's toBoolean: no blanks around it
        raise InvalidArgumentError(f"table property {key} must be 'true' or 'false', got {value!r}")


def _check_integer(key: str, value: str) -> None:
    least = INTEGER_PROPERTY_MINIMUM[key]
    if not _INTEGER.fullmatch(value) or not least <= int(value) <= INT_MAX:
        raise InvalidArgumentError(f"table property {key} must be an integer from {least} to {INT_MAX}, "
                                   f"got {value!r}")


def check_retention_compatibility(configuration: Mapping[str, str]) -> None:
    """Delta Spark's ``validateTombstoneAndLogRetentionDurationCompatibility``: the log is kept at least
    as long as removed files are (``delta.logRetentionDuration`` >= ``delta.deletedFileRetentionDuration``,
    defaults counted), else InvalidArgumentError."""
    log_ms = parse_interval_ms(configuration.get(LOG_RETENTION_PROPERTY, LOG_RETENTION_DEFAULT),
                               what=f"table property {LOG_RETENTION_PROPERTY}")
    files_ms = parse_interval_ms(configuration.get(DELETED_FILE_RETENTION_PROPERTY, DELETED_FILE_RETENTION_DEFAULT),
                                 what=f"table property {DELETED_FILE_RETENTION_PROPERTY}")
    if log_ms < files_ms:
        raise InvalidArgumentError(
            f"table property {LOG_RETENTION_PROPERTY} ({configuration.get(LOG_RETENTION_PROPERTY, LOG_RETENTION_DEFAULT)}) "
            f"must be at least {DELETED_FILE_RETENTION_PROPERTY} "
            f"({configuration.get(DELETED_FILE_RETENTION_PROPERTY, DELETED_FILE_RETENTION_DEFAULT)}), as Delta Spark "
            "requires: the log must outlive the removed files it records")


_RULES: dict[str, Callable[[str, str], None]] = {
    **{k: _check_interval for k in INTERVAL_PROPERTIES},
    **{k: _check_boolean for k in BOOLEAN_PROPERTIES},
    **{k: _check_integer for k in INTEGER_PROPERTY_MINIMUM},
}


def check_property_values(properties: Mapping[str, str | None],
                          configuration: Mapping[str, str] | None = None) -> None:
    """Refuse (:class:`InvalidArgumentError`) a known property set to a value Delta Spark would
    refuse; ``None`` (a property being removed) passes. ``configuration``: the table's whole
    configuration with ``properties`` applied (default: ``properties`` themselves), for the rules
    between properties, checked when a property they concern changes."""
    for key, value in properties.items():
        rule = _RULES.get(key)
        if rule is not None and value is not None:
            rule(key, value)
    if LOG_RETENTION_PROPERTY in properties or DELETED_FILE_RETENTION_PROPERTY in properties:
        whole = properties if configuration is None else configuration
        check_retention_compatibility({k: v for k, v in whole.items() if v is not None})


def checked_properties(properties: dict[str, Any] | None) -> dict[str, str]:
    """Table properties as strings (:func:`~.features.normalize_properties`), their values checked."""
    out = normalize_properties(properties)
    check_property_values(out)
    return out
