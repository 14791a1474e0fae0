"""The values of the ``delta.*`` table properties this package knows, checked when they are set.

Delta Spark validates each known property when a table is created or altered (every entry of
its ``DeltaConfigs`` carries a validation rule) and refuses a bad value before anything is
written. A value that is not checked then would only fail later, when every metadata cleanup
or checkpoint reads it (``'None'`` rendered from an empty template, say). The rules here are
the same ones: retention durations are intervals without months or years and not negative
(:mod:`.intervals`, words separated by spaces, microseconds within a Java long), the log
retention at least the deleted-file retention, counts are integers in the range Delta Spark
allows (Java ints), flags are ``true``/``false`` in any case, without blanks around them (Delta
Spark's parsers take none: a value it cannot parse fails every later read of the table there),
``delta.checkpointPolicy`` is ``classic`` or ``v2``, ``delta.dataSkippingStatsColumns`` a list of
column names Spark's parser takes, ``delta.feature.<name>`` is ``supported`` or ``enabled`` (any case:
:func:`~.features.check_feature_property_value`), and ``delta.minReaderVersion`` / ``delta.minWriterVersion`` name
a protocol version that exists (reader 1-3, writer 1-7).

The names, as Delta Spark's ``DeltaConfigs.validateConfigurations`` checks them (:func:`checked_names`,
applied to the properties a caller sets, never to a table's stored configuration): a ``delta.*`` name
must be one Delta Spark knows (or this package writes: :data:`OWN_PROPERTIES`), compared without
regard to case and stored in its own spelling; ``delta.feature.<name>`` is read in any case, the
feature's name too (as Delta Spark's ``featureNameToFeature``); ``delta.constraints.*``, ``delta.feature.*`` and
``delta.universalFormat.config.*`` pass, and so does every name outside ``delta.``. Delta Spark
takes an unknown ``delta.*`` name only with ``spark.databricks.delta.allowArbitraryProperties.enabled``;
this package has no such switch (a misspelt property would do nothing, silently).
"""
from __future__ import annotations

import re
from typing import Any, Callable, Mapping

from .errors import InvalidArgumentError
from .features import (APPEND_ONLY_PROPERTY, CHANGE_DATA_FEED_PROPERTY, CHECK_CONSTRAINT_PREFIX,
                       CHECKPOINT_INTERVAL_PROPERTY, CHECKPOINT_POLICY_PROPERTY, CATALOG_MANAGED_FEATURES,
                       COMMIT_COORDINATION_FEATURES, LEGACY_FEATURES, MAINTAINABLE_FEATURES,
                       MULTI_TABLE_TRANSACTION_FEATURES, READER_WRITER_FEATURES, SUPPORTED_READER_FEATURES,
                       CHECKPOINT_STATS_AS_JSON_PROPERTY, CHECKPOINT_STATS_AS_STRUCT_PROPERTY,
                       DATA_SKIPPING_STATS_COLUMNS_PROPERTY, FEATURE_PROPERTY_PREFIX,
                       MANAGED_OWNER_CONF_PROPERTY, MANAGED_OWNER_PROPERTY, MIN_READER_VERSION_PROPERTY,
                       MIN_WRITER_VERSION_PROPERTY, TARGET_FILE_SIZE_PROPERTY,
                       DATA_SKIPPING_NUM_INDEXED_COLS_PROPERTY, DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY,
                       DELETED_FILE_RETENTION_DEFAULT, DELETED_FILE_RETENTION_PROPERTY, DELETION_VECTORS_PROPERTY,
                       EXPIRED_LOG_CLEANUP_PROPERTY, ICT_ENABLE_PROPERTY, LOG_RETENTION_DEFAULT,
                       LOG_RETENTION_PROPERTY, ROW_TRACKING_PROPERTY,
                       SET_TRANSACTION_RETENTION_PROPERTY, TYPE_WIDENING_PROPERTY, check_feature_property_value,
                       normalize_properties)
from .intervals import parse_interval_ms

CHECKPOINT_RETENTION_PROPERTY = "delta.checkpointRetentionDuration"
RANDOM_PREFIX_LENGTH_PROPERTY = "delta.randomPrefixLength"

#: Every table property Delta Spark knows (its ``DeltaConfigs`` entries, Delta 4.x), as it spells them.
DELTA_SPARK_PROPERTIES = tuple(f"delta.{k}" for k in (
    "minReaderVersion", "minWriterVersion", "ignoreProtocolDefaults", "logRetentionDuration",
    "sampleRetentionDuration", "checkpointRetentionDuration", "checkpointInterval",
    "redirectReaderWriter-preview", "redirectWriterOnly-preview", "autoOptimize.autoCompact",
    "enableExpiredLogCleanup", "enableFullRetentionRollback", "dropFeatureTruncateHistory.retentionDuration",
    "deletedFileRetentionDuration", "randomizeFilePrefixes", "randomPrefixLength", "appendOnly",
    "enableDeletionVectors", "parquet.format.version", "enableVariantShredding", "autoOptimize",
    "dataSkippingNumIndexedCols", "dataSkippingStatsColumns", "dataSkippingStringPrefixLength",
    "compatibility.symlinkFormatManifest.enabled", "checkpoint.writeStatsAsJson", "checkpoint.writeStatsAsStruct",
    "enableChangeDataCapture", "enableChangeDataFeed", "columnMapping.mode", "columnMapping.maxColumnId",
    "setTransactionRetentionDuration", "isolationLevel", "checkpointPolicy", "enableRowTracking",
    "rowTrackingSuspended", "universalFormat.enabledFormats", "enableIcebergCompatV1", "enableIcebergCompatV2",
    "enableIcebergCompatV3", "universalFormat.iceberg.atomicConversion.supported", "castIcebergTimeType",
    "ignoreIcebergBucketPartition", "autoOptimize.optimizeWrite", "enableTypeWidening",
    "coordinatedCommits.commitCoordinator-preview", "coordinatedCommits.commitCoordinatorConf-preview",
    "coordinatedCommits.tableConf-preview", "enableInCommitTimestamps", "inCommitTimestampEnablementVersion",
    "inCommitTimestampEnablementTimestamp", "requireCheckpointProtectionBeforeVersion",
    "enableMaterializePartitionColumnsFeature", "writePartitionColumnsToParquet"))
#: ``delta.*`` properties this package (or a table it reads, delta-rs's target size) writes that Delta
#: Spark has no entry for: they must pass when set
OWN_PROPERTIES = (MANAGED_OWNER_PROPERTY, f"{MANAGED_OWNER_PROPERTY}-preview", MANAGED_OWNER_CONF_PROPERTY,
                  TARGET_FILE_SIZE_PROPERTY, "delta.rowTracking.materializedRowIdColumnName",
                  "delta.rowTracking.materializedRowCommitVersionColumnName")
#: prefixes of ``delta.*`` names that pass whatever follows (Delta Spark: constraints, features and
#: the universal format's per-format settings)
OPEN_PREFIXES = (CHECK_CONSTRAINT_PREFIX, FEATURE_PROPERTY_PREFIX, "delta.universalFormat.config.")
_SPELLING = {k.lower(): k for k in DELTA_SPARK_PROPERTIES + OWN_PROPERTIES}
#: the features this package knows, by lower-cased name: Delta Spark finds a feature in any case
#: (``TableFeature.featureNameToFeature``), so ``delta.feature.DeletionVectors`` names ``deletionVectors``
_FEATURE_SPELLING = {f.lower(): f for f in (*SUPPORTED_READER_FEATURES, *LEGACY_FEATURES, *READER_WRITER_FEATURES,
                                             *MAINTAINABLE_FEATURES, *CATALOG_MANAGED_FEATURES,
                                             *COMMIT_COORDINATION_FEATURES, *MULTI_TABLE_TRANSACTION_FEATURES)}
#: the protocol versions that exist (Delta Spark's ``supportedReaderVersionNumbers`` / ``...Writer...``)
PROTOCOL_VERSIONS = {MIN_READER_VERSION_PROPERTY: range(1, 4), MIN_WRITER_VERSION_PROPERTY: range(1, 8)}
CHECKPOINT_POLICIES = ("classic", "v2")

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
                            DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY: 0, RANDOM_PREFIX_LENGTH_PROPERTY: 1}

#: Java's ``Integer.parseInt``: an optional sign and ASCII digits, no blanks around them
_INTEGER = re.compile(r"[+-]?[0-9]+")
#: the integer properties are Java ints in Delta Spark (a larger value fails every later read of it)
INT_MAX = 2**31 - 1
#: a CalendarInterval's microseconds are a Java long
_LONG_MAX = 2**63 - 1
#: Spark's ``multipartIdentifierList``: names (unquoted word characters, or backticked with `` for a
#: backtick) joined by dots, paths by commas, blanks around each name
_NAME = r"\s*(?:`(?:[^`]|``)*`|\w+)\s*"
_PATH = rf"{_NAME}(?:\.{_NAME})*"
_COLUMN_LIST = re.compile(rf"{_PATH}(?:,{_PATH})*", re.DOTALL)


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


def _check_protocol_version(key: str, value: str) -> None:
    versions = PROTOCOL_VERSIONS[key]
    if not _INTEGER.fullmatch(value) or int(value) not in versions:
        raise InvalidArgumentError(f"table property {key} must be a protocol version that exists "
                                   f"({versions.start} to {versions.stop - 1}), got {value!r}")


def _check_checkpoint_policy(key: str, value: str) -> None:
    if value not in CHECKPOINT_POLICIES:                   # Delta Spark: CheckpointPolicy.fromName, exact
        raise InvalidArgumentError(f"table property {key} must be one of {', '.join(CHECKPOINT_POLICIES)}, "
                                   f"got {value!r}")


def _check_column_list(key: str, value: str) -> None:
    if value.strip() and not _COLUMN_LIST.fullmatch(value):  # Spark's parser takes a blank list as none
        raise InvalidArgumentError(f"table property {key} must be a comma-separated list of column names "
                                   f"(backticks around names with other characters), got {value!r}")


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
    **{k: _check_protocol_version for k in PROTOCOL_VERSIONS},
    CHECKPOINT_POLICY_PROPERTY: _check_checkpoint_policy,
    DATA_SKIPPING_STATS_COLUMNS_PROPERTY: _check_column_list,
}


def checked_names(properties: Mapping[str, Any], configuration: Mapping[str, str] | None = None) -> dict[str, Any]:
    """``properties`` (names a caller sets) with each ``delta.*`` name in Delta Spark's spelling, or
    InvalidArgumentError for a ``delta.*`` name Delta Spark refuses (unknown to it and to this
    package) or for two names of one property. A name being removed (value ``None``) is kept as
    given when ``configuration`` (the table's) holds it: a table may hold any name, and removing it
    must stay possible; else a known name is removed in Delta Spark's spelling, as its UNSET
    TBLPROPERTIES normalizes it (``DELTA.APPENDONLY`` removes ``delta.appendOnly``)."""
    out: dict[str, Any] = {}
    for key, value in properties.items():
        name = key
        lower = key.lower() if isinstance(key, str) else ""
        if value is None and key not in (configuration or {}):
            name = _SPELLING.get(lower, key)
        if lower.startswith(FEATURE_PROPERTY_PREFIX):    # Delta Spark: the name in any case, the feature too
            feature = key[len(FEATURE_PROPERTY_PREFIX):]
            name = FEATURE_PROPERTY_PREFIX + _FEATURE_SPELLING.get(feature.lower(), feature)
        if value is not None and lower.startswith("delta.") and not lower.startswith(
                tuple(p.lower() for p in OPEN_PREFIXES)):
            name = _SPELLING.get(lower)
            if name is None:
                raise InvalidArgumentError(
                    f"unknown Delta table property {key!r}: neither Delta Spark nor this package knows it (Delta "
                    "Spark refuses it unless spark.databricks.delta.allowArbitraryProperties.enabled); check "
                    "its spelling, or use a name outside 'delta.'")
        if name in out:
            raise InvalidArgumentError(f"table property {name} is given twice (as {key!r} too)")
        out[name] = value
    return out


def check_property_values(properties: Mapping[str, str | None],
                          configuration: Mapping[str, str] | None = None) -> None:
    """Refuse (:class:`InvalidArgumentError`) a known property set to a value Delta Spark would
    refuse; ``None`` (a property being removed) passes. ``configuration``: the table's whole
    configuration with ``properties`` applied (default: ``properties`` themselves), for the rules
    between properties, checked when a property they concern changes."""
    for key, value in properties.items():
        rule = _RULES.get(key)
        if rule is None and isinstance(key, str) and key.startswith(FEATURE_PROPERTY_PREFIX):
            rule = check_feature_property_value
        if rule is not None and value is not None:
            rule(key, value)
    if LOG_RETENTION_PROPERTY in properties or DELETED_FILE_RETENTION_PROPERTY in properties:
        whole = properties if configuration is None else configuration
        check_retention_compatibility({k: v for k, v in whole.items() if v is not None})


def checked_properties(properties: dict[str, Any] | None) -> dict[str, str]:
    """Table properties as strings (:func:`~.features.normalize_properties`), their names
    (:func:`checked_names`) and values checked."""
    out = checked_names(normalize_properties(properties))
    check_property_values(out)
    return out
