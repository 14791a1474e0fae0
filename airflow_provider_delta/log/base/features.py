"""Table features and ``delta.*`` table properties: every name, every default, and the gate.

One module answers the protocol questions the rest of the package asks:

- which features a protocol supports (explicitly, or implied by legacy reader/writer
  versions), and which features a schema plus table properties make active;
- the smallest protocol that supports a set of features (for a new table, or when a
  commit turns a feature on), and whether a new protocol would drop something;
- may this package read, write, or add data to a table with this protocol?

Every feature name and every ``delta.*`` property key the package understands is
defined here, with its default, so no other module spells one as a string literal.
The rules of one feature that go beyond "is it supported" live in the module named
after it (in-commit timestamps in :mod:`.ict`, managed commits in :mod:`.managed_state`,
retention intervals in :mod:`.intervals`).

Legacy features are expressed by versions alone when possible (appendOnly and
invariants need writer 2, CHECK constraints 3, change data feed and generated
columns 4, column mapping reader 2/writer 5, identity columns 6), so tables stay
readable by old clients; anything else needs writer 7 with ``writerFeatures`` (and
reader 3 with ``readerFeatures`` only for reader-writer features). When a table
moves to writer 7, every feature its legacy versions implied is listed explicitly
(the protocol demands it; Delta Spark does the same), and nothing already
supported is ever dropped.
"""
from __future__ import annotations

import enum
from typing import Any, Iterable

from .actions import Metadata, Protocol, parse_schema_string
from .errors import CatalogRequiredError, InvalidArgumentError, InvalidTableStateError, UnsupportedFeatureError

# ------------------------------------------------------------------ protocol versions
#: Reader/writer versions this implementation understands.
MAX_READER_VERSION = 3
MAX_WRITER_VERSION = 7

# ---------------------------------------------------------------------- feature names
#: In-commit timestamps: the released writer feature name; the RFC text spells it with an
#: "s", which we accept when reading.
ICT_FEATURE = "inCommitTimestamp"
ICT_FEATURE_NAMES = frozenset({"inCommitTimestamp", "inCommitTimestamps"})
#: Managed commits (RFC name).
MANAGED_COMMIT_FEATURE = "managedCommit"
#: V2 checkpoints (UUID-named, ``checkpointMetadata``, sidecars); forbids multi-part checkpoints.
V2_CHECKPOINT_FEATURE = "v2Checkpoint"
#: Variant shredding: the name Delta Spark 4.4 adds when ``delta.enableVariantShredding`` is set
#: (its ``variantShredding.forceUsePreviewTableFeature`` defaults to true), and both names, either
#: of which lets the property be on (Delta Spark requires neither when the other is supported).
VARIANT_SHREDDING_FEATURE = "variantShredding-preview"
VARIANT_SHREDDING_FEATURES = frozenset({VARIANT_SHREDDING_FEATURE, "variantShredding"})
#: Delta 4.x catalog-managed tables (``_staged_commits``).
CATALOG_MANAGED_FEATURE = "catalogManaged"
CATALOG_MANAGED_FEATURES = frozenset({CATALOG_MANAGED_FEATURE, "catalogOwned-preview"})
#: The multi-table transactions RFC (delta-io/delta#7437), writer feature under its experimental name.
MULTI_TABLE_TRANSACTION_FEATURE = "multiTableTransaction-dev"
MULTI_TABLE_TRANSACTION_FEATURES = frozenset({MULTI_TABLE_TRANSACTION_FEATURE, "multiTableTransaction"})
#: Every name under which a protocol says "commits go through a coordinator, not put-if-absent":
#: the RFC's, Delta 3.3's preview (coordinated commits) and Delta 4.x catalog-managed tables.
COMMIT_COORDINATION_FEATURES = frozenset({MANAGED_COMMIT_FEATURE, "managedCommit-preview",
                                          "coordinatedCommits-preview"}) | CATALOG_MANAGED_FEATURES

# ------------------------------------------------------------------ table properties
#: ``true`` turns in-commit timestamps on (default false).
ICT_ENABLE_PROPERTY = "delta.enableInCommitTimestamps"
#: Where in-commit timestamps started, recorded when they are enabled on an existing table.
ICT_ENABLEMENT_VERSION_PROPERTY = "delta.inCommitTimestampEnablementVersion"
ICT_ENABLEMENT_TIMESTAMP_PROPERTY = "delta.inCommitTimestampEnablementTimestamp"
#: The commit owner of a managed-commit table, and its JSON string map configuration.
MANAGED_OWNER_PROPERTY = "delta.managedCommit.commitOwner"
MANAGED_OWNER_CONF_PROPERTY = "delta.managedCommit.commitOwnerConf"
#: The owner/coordinator properties of every variant (see ``COMMIT_COORDINATION_FEATURES``).
COMMIT_COORDINATOR_PROPERTIES = (MANAGED_OWNER_PROPERTY, "delta.managedCommit.commitOwner-preview",
                                 "delta.coordinatedCommits.commitCoordinator-preview")
#: ``none`` (default), ``name`` or ``id``.
COLUMN_MAPPING_MODE_PROPERTY = "delta.columnMapping.mode"
COLUMN_MAPPING_MODE_DEFAULT = "none"
#: Per-field metadata key of a column's physical name under column mapping.
PHYSICAL_NAME_KEY = "delta.columnMapping.physicalName"
#: Per-field metadata key of a column's id under column mapping (the Parquet field id in mode ``id``).
COLUMN_ID_KEY = "delta.columnMapping.id"
#: The highest column id ever assigned (internal: writers keep it, users do not set it).
COLUMN_MAPPING_MAX_ID_PROPERTY = "delta.columnMapping.maxColumnId"
APPEND_ONLY_PROPERTY = "delta.appendOnly"
CHANGE_DATA_FEED_PROPERTY = "delta.enableChangeDataFeed"
DELETION_VECTORS_PROPERTY = "delta.enableDeletionVectors"
ROW_TRACKING_PROPERTY = "delta.enableRowTracking"
TYPE_WIDENING_PROPERTY = "delta.enableTypeWidening"
#: ``true`` lets writers shred variant columns (PROTOCOL.md "Variant Shredding"); the commit that sets it
#: adds the feature (this package never shreds: it writes no variant data at all).
VARIANT_SHREDDING_PROPERTY = "delta.enableVariantShredding"
#: ``classic`` (default) or ``v2``.
CHECKPOINT_POLICY_PROPERTY = "delta.checkpointPolicy"
CHECKPOINT_POLICY_DEFAULT = "classic"
#: Commits between automatic checkpoints (Delta Spark's default: 10).
CHECKPOINT_INTERVAL_PROPERTY = "delta.checkpointInterval"
CHECKPOINT_INTERVAL_DEFAULT = 10
#: Checkpoint ``add.stats`` as JSON text (default true) and as ``stats_parsed`` (default false).
CHECKPOINT_STATS_AS_JSON_PROPERTY = "delta.checkpoint.writeStatsAsJson"
CHECKPOINT_STATS_AS_STRUCT_PROPERTY = "delta.checkpoint.writeStatsAsStruct"
#: ``Serializable`` (default; the only value that may be set) or, from other engines, ``WriteSerializable``/``SnapshotIsolation`` (see write/isolation.py).
ISOLATION_LEVEL_PROPERTY = "delta.isolationLevel"
#: With ``checkpointProtection``: checkpoints before this version are protected (see cleanup).
REQUIRE_CHECKPOINT_PROTECTION_BEFORE_PROPERTY = "delta.requireCheckpointProtectionBeforeVersion"
#: ``false`` stops metadata cleanup (default true).
EXPIRED_LOG_CLEANUP_PROPERTY = "delta.enableExpiredLogCleanup"
#: Retention durations (Spark interval strings, parsed by :mod:`.intervals`).
LOG_RETENTION_PROPERTY = "delta.logRetentionDuration"
LOG_RETENTION_DEFAULT = "interval 30 days"
DELETED_FILE_RETENTION_PROPERTY = "delta.deletedFileRetentionDuration"
DELETED_FILE_RETENTION_DEFAULT = "interval 1 week"
#: No default: application transaction ids are kept forever when unset (as in Spark).
SET_TRANSACTION_RETENTION_PROPERTY = "delta.setTransactionRetentionDuration"
#: Statistics collection (see :mod:`.stats`).
DATA_SKIPPING_NUM_INDEXED_COLS_PROPERTY = "delta.dataSkippingNumIndexedCols"
DATA_SKIPPING_NUM_INDEXED_COLS_DEFAULT = 32
DATA_SKIPPING_STATS_COLUMNS_PROPERTY = "delta.dataSkippingStatsColumns"
DATA_SKIPPING_STRING_PREFIX_LENGTH_PROPERTY = "delta.dataSkippingStringPrefixLength"
DATA_SKIPPING_STRING_PREFIX_LENGTH_DEFAULT = 32
#: Target size in bytes of the files OPTIMIZE writes (Databricks' property; Delta Spark's own
#: default is its ``optimize.maxFileSize``, 1 GiB, used when the property is unset).
TARGET_FILE_SIZE_PROPERTY = "delta.targetFileSize"
#: UniForm Iceberg metadata (vacuum leaves its ``metadata/`` folder alone when set).
ICEBERG_COMPAT_PREFIX = "delta.enableIcebergCompat"
UNIVERSAL_FORMATS_PROPERTY = "delta.universalFormat.enabledFormats"
#: A CHECK constraint is the table property ``delta.constraints.<name>`` (its SQL expression).
CHECK_CONSTRAINT_PREFIX = "delta.constraints."
#: Protocol requests at creation: asked for, never stored (as in Delta Spark).
MIN_READER_VERSION_PROPERTY = "delta.minReaderVersion"
MIN_WRITER_VERSION_PROPERTY = "delta.minWriterVersion"
FEATURE_PROPERTY_PREFIX = "delta.feature."
#: the values a ``delta.feature.<name>`` property may take, in any case (Delta Spark's
#: ``TableFeatureProtocolUtils.FEATURE_PROP_SUPPORTED`` / ``FEATURE_PROP_ENABLED``): both add the feature
FEATURE_PROPERTY_VALUES = ("supported", "enabled")


def check_feature_property_value(key: str, value: Any) -> None:
    """Refuse (InvalidArgumentError) a ``delta.feature.<name>`` value other than :data:`FEATURE_PROPERTY_VALUES`."""
    if str(value).lower() not in FEATURE_PROPERTY_VALUES:
        raise InvalidArgumentError(f"{key} must be {' or '.join(repr(v) for v in FEATURE_PROPERTY_VALUES)} "
                                   f"(in any case), got {value!r}")

#: Reader features whose presence does not stop us from reading the log.
#: (Data reads of deletion vectors / column mapping are checked separately.)
SUPPORTED_READER_FEATURES = frozenset({
    "columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
    "typeWidening", "typeWidening-preview", "variantType", "variantType-preview",
    "variantShredding-preview", "domainMetadata",
})

#: Legacy features and the (reader, writer) versions that imply them.
LEGACY_FEATURES: dict[str, tuple[int, int]] = {
    "appendOnly": (1, 2), "invariants": (1, 2), "checkConstraints": (1, 3),
    "changeDataFeed": (1, 4), "generatedColumns": (1, 4), "columnMapping": (2, 5),
    "identityColumns": (1, 6),
}

#: Features that readers must understand too (listed in readerFeatures and writerFeatures).
READER_WRITER_FEATURES = frozenset({
    "columnMapping", "deletionVectors", "timestampNtz", "v2Checkpoint", "vacuumProtocolCheck",
    "typeWidening", "typeWidening-preview", "variantType", "variantType-preview",
    "variantShredding-preview", "catalogManaged", "catalogOwned-preview",
})


#: Writer features this package can commit to without breaking their rules. Some are only
#: honoured while inactive for data-adding commits (see :func:`check_can_add_data`).
WRITABLE_FEATURES = frozenset({
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
    "columnMapping", "identityColumns", "deletionVectors", "timestampNtz", "domainMetadata",
    "v2Checkpoint", "vacuumProtocolCheck", "typeWidening", "typeWidening-preview",
    "allowColumnDefaults", MANAGED_COMMIT_FEATURE, "checkpointProtection", *ICT_FEATURE_NAMES,
    VARIANT_SHREDDING_FEATURE,     # its rules are about writing variant data, which this package never does
})

#: Writer features whose rules maintenance (checkpoint, log compaction, cleanup, vacuum) keeps,
#: on top of the writable ones: the rules of these concern new data (row ids, clustering,
#: Iceberg metadata) or columns this package cannot map to Arrow (variant: every commit
#: validates the table's schema as Arrow), which maintenance does not write. Tables with them
#: can be maintained, not written. (``checkpointProtection`` is writable: its rules are
#: cleanup's and checkpoint's.)
MAINTAINABLE_FEATURES = WRITABLE_FEATURES | frozenset({
    "rowTracking", "clustering", "icebergCompatV1", "icebergCompatV2",
    "variantType", "variantType-preview",
})

#: Features a new table may be created with through :func:`create_table`.
CREATABLE_FEATURES = frozenset({
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
    "deletionVectors", "timestampNtz", "domainMetadata", "v2Checkpoint", "vacuumProtocolCheck",
    "typeWidening", "allowColumnDefaults", MANAGED_COMMIT_FEATURE, ICT_FEATURE, VARIANT_SHREDDING_FEATURE,
})



def _true(conf: dict[str, str], key: str) -> bool:
    return str(conf.get(key, "false")).strip().lower() == "true"



def is_true(configuration: dict[str, str] | None, key: str) -> bool:
    """A boolean table property (absent means false)."""
    return _true(configuration or {}, key)


def column_mapping_mode(configuration: dict[str, str] | None) -> str:
    """``none``, ``name`` or ``id`` (lower-cased; anything else is returned as found, for the caller to refuse)."""
    return str((configuration or {}).get(COLUMN_MAPPING_MODE_PROPERTY, COLUMN_MAPPING_MODE_DEFAULT)).strip().lower()


def checkpoint_policy(configuration: dict[str, str] | None) -> str:
    """``classic`` or ``v2``."""
    return str((configuration or {}).get(CHECKPOINT_POLICY_PROPERTY, CHECKPOINT_POLICY_DEFAULT)).strip().lower()


def _canonical(feature: str) -> str:
    return ICT_FEATURE if feature in ICT_FEATURE_NAMES else feature


#: Delta column types that need a table feature.
FEATURE_OF_TYPE = {"timestamp_ntz": "timestampNtz", "variant": "variantType"}


def _walk_schema(node: Any, found: set[str]) -> None:
    """Collect features implied by column types and column metadata."""
    if isinstance(node, str):
        if node in FEATURE_OF_TYPE:
            found.add(FEATURE_OF_TYPE[node])
        return
    if not isinstance(node, dict):
        return
    kind = node.get("type")
    if kind == "struct":
        for f in node.get("fields") or []:
            meta = f.get("metadata") or {}
            if "delta.invariants" in meta:
                found.add("invariants")
            if "delta.generationExpression" in meta:
                found.add("generatedColumns")
            if any(k.startswith("delta.identity.") for k in meta):
                found.add("identityColumns")
            if "CURRENT_DEFAULT" in meta:
                found.add("allowColumnDefaults")
            _walk_schema(f.get("type"), found)
    elif kind == "array":
        _walk_schema(node.get("elementType"), found)
    elif kind == "map":
        _walk_schema(node.get("keyType"), found)
        _walk_schema(node.get("valueType"), found)
    elif isinstance(kind, str):
        _walk_schema(kind, found)


def features_in_use(schema: dict | str | None, configuration: dict[str, str] | None) -> set[str]:
    """Features that ``schema`` (Delta schema dict or JSON) and table properties make active."""
    conf = configuration or {}
    found: set[str] = set()
    if schema is not None:
        _walk_schema(parse_schema_string(schema) if isinstance(schema, str) else schema, found)
    if _true(conf, APPEND_ONLY_PROPERTY):
        found.add("appendOnly")
    if any(k.startswith(CHECK_CONSTRAINT_PREFIX) for k in conf):
        found.add("checkConstraints")
    if _true(conf, CHANGE_DATA_FEED_PROPERTY):
        found.add("changeDataFeed")
    if column_mapping_mode(conf) in ("name", "id"):
        found.add("columnMapping")
    if _true(conf, DELETION_VECTORS_PROPERTY):
        found.add("deletionVectors")
    if _true(conf, ROW_TRACKING_PROPERTY):
        found.update(("rowTracking", "domainMetadata"))
    if _true(conf, TYPE_WIDENING_PROPERTY):
        found.add("typeWidening")
    if _true(conf, VARIANT_SHREDDING_PROPERTY):
        found.add(VARIANT_SHREDDING_FEATURE)
    if checkpoint_policy(conf) == "v2":
        found.add("v2Checkpoint")
    if _true(conf, ICT_ENABLE_PROPERTY):
        found.add(ICT_FEATURE)
    if conf.get(MANAGED_OWNER_PROPERTY):
        found.update((MANAGED_COMMIT_FEATURE, ICT_FEATURE))
    for key, value in conf.items():
        if key.startswith(FEATURE_PROPERTY_PREFIX) and str(value).lower() in ("supported", "enabled"):
            found.add(_canonical(key[len(FEATURE_PROPERTY_PREFIX):]))
    return found


def supported_features(protocol: Protocol) -> tuple[set[str], set[str]]:
    """(reader, writer) features a protocol supports, explicit or implied by legacy versions."""
    if protocol.min_writer_version >= 7:
        writer = set(protocol.writer_features or ())
    else:
        writer = {f for f, (_r, w) in LEGACY_FEATURES.items() if w <= protocol.min_writer_version}
    if protocol.min_reader_version >= 3:
        reader = set(protocol.reader_features or ())
    else:
        reader = {"columnMapping"} if protocol.min_reader_version >= 2 else set()
    return reader, writer


#: Feature names that stand for one another: either satisfies the other.
_SAME_FEATURE = (ICT_FEATURE_NAMES, VARIANT_SHREDDING_FEATURES)


def _supports(names: set[str], feature: str) -> bool:
    return feature in names or any(feature in same and bool(names & same) for same in _SAME_FEATURE)


def protocol_with_features(current: Protocol, features: Iterable[str],
                           min_reader: int = 1, min_writer: int = 1) -> Protocol:
    """The smallest protocol that keeps everything ``current`` supports and adds ``features``.

    Returns ``current`` itself when nothing needs to change.
    """
    reader, writer = supported_features(current)
    wanted = {_canonical(f) for f in features}
    missing = {f for f in wanted if not _supports(writer, f)
               or (f in READER_WRITER_FEATURES and not _supports(reader, f) and f != "columnMapping")}
    if "columnMapping" in wanted and current.min_reader_version < 2 and "columnMapping" not in reader:
        missing.add("columnMapping")
    r_need = max(current.min_reader_version, min_reader)
    w_need = max(current.min_writer_version, min_writer)
    if not missing and (r_need, w_need) == (current.min_reader_version, current.min_writer_version):
        return current
    legacy_only = current.min_writer_version < 7 and w_need < 7 and r_need < 3 and all(
        f in LEGACY_FEATURES for f in missing)
    if legacy_only:
        for f in missing:
            r, w = LEGACY_FEATURES[f]
            r_need, w_need = max(r_need, r), max(w_need, w)
        return Protocol(r_need, w_need)
    # Table features: list what legacy versions implied, keep the order of what was listed.
    writer_list = list(current.writer_features or ()) if current.min_writer_version >= 7 else \
        [f for f in LEGACY_FEATURES if f in writer]
    for f in sorted(missing):
        if not _supports(set(writer_list), f):
            writer_list.append(f)
    needs_reader_features = r_need >= 3 or current.min_reader_version >= 3 or any(
        f in READER_WRITER_FEATURES and not (f == "columnMapping" and current.min_reader_version >= 2)
        for f in missing)
    if needs_reader_features:
        reader_list = list(current.reader_features or ()) if current.min_reader_version >= 3 else \
            sorted(reader)
        for f in sorted(missing):
            if f in READER_WRITER_FEATURES and f not in reader_list:
                reader_list.append(f)
        for f in reader_list:               # a reader feature must also be a writer feature
            if f not in writer_list:
                writer_list.append(f)
        return Protocol(3, 7, tuple(reader_list), tuple(writer_list))
    return Protocol(max(r_need, 2 if "columnMapping" in missing else 1), 7, None, tuple(writer_list))


def is_downgrade(old: Protocol, new: Protocol) -> bool:
    """True if ``new`` drops a version or a feature ``old`` supports."""
    if new.min_reader_version < old.min_reader_version or new.min_writer_version < old.min_writer_version:
        return True
    old_r, old_w = supported_features(old)
    new_r, new_w = supported_features(new)
    return not all(_supports(new_w, f) for f in old_w) or not all(_supports(new_r, f) for f in old_r)


def check_writable(protocol: Protocol) -> None:
    """Raise :class:`UnsupportedFeatureError` unless this package may commit to ``protocol``."""
    if protocol.min_reader_version > 3:
        raise UnsupportedFeatureError(
            f"table needs reader version {protocol.min_reader_version}; this package supports up to 3")
    if protocol.min_writer_version > 7:
        raise UnsupportedFeatureError(
            f"table needs writer version {protocol.min_writer_version}; this package supports up to 7")
    reader, writer = supported_features(protocol)
    for f in sorted(reader):
        if f not in SUPPORTED_READER_FEATURES:
            raise UnsupportedFeatureError(f"table uses reader feature {f!r}, which this package cannot read",
                                          feature=f)
    for f in sorted(writer):
        if f not in WRITABLE_FEATURES:
            raise UnsupportedFeatureError(
                f"table uses writer feature {f!r}; this package cannot commit to it without breaking "
                "the feature's rules (write with Delta Spark instead)", feature=f)


#: Operations that re-add logical files exactly as another version (RESTORE) or table (CLONE) holds
#: them, under that version's metadata: no new rows, so no SQL expression needs evaluating.
FILE_REINSTATING_OPERATIONS = frozenset({"RESTORE", "CLONE", "SHALLOW CLONE"})


def check_can_add_data(protocol: Protocol, metadata: Metadata) -> None:
    """Refuse data-adding commits when an active feature demands checks we cannot run.

    CHECK constraints, column invariants, generated, identity and default columns are SQL
    expressions over the rows (or values writers must generate); the protocol requires writers
    to enforce them, and this package does not evaluate SQL, so it must not add rows to such tables.
    """
    _reader, writer = supported_features(protocol)
    active = features_in_use(metadata.schema_string, metadata.configuration)
    for f in ("checkConstraints", "invariants", "generatedColumns", "identityColumns", "allowColumnDefaults"):
        if f in active and f in writer:
            raise UnsupportedFeatureError(
                f"table has active feature {f!r} (SQL expressions every new row must satisfy); this package "
                "cannot evaluate them, so it does not add data to this table", feature=f)



def normalize_properties(properties: dict[str, Any] | None) -> dict[str, str]:
    """Table properties as strings (booleans lower-case, as Spark writes them); their values are
    checked by :func:`.property_values.checked_properties`."""
    out: dict[str, str] = {}
    for k, v in (properties or {}).items():
        if not isinstance(k, str) or not k:
            raise InvalidArgumentError(f"table property names must be non-empty strings, got {k!r}")
        if v is None:
            raise InvalidArgumentError(f"table property {k!r} has no value")
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    return out


def protocol_for_new_table(schema_json: dict | str, configuration: dict[str, str]) -> tuple[Protocol, dict[str, str]]:
    """(protocol, configuration to store) for a new table.

    ``delta.minReaderVersion``/``delta.minWriterVersion`` and ``delta.feature.<name>``
    properties ask for protocol support and, as in Delta Spark, are not stored.
    """
    conf = dict(configuration)
    try:
        min_reader = int(conf.pop(MIN_READER_VERSION_PROPERTY, 1))
        min_writer = int(conf.pop(MIN_WRITER_VERSION_PROPERTY, 2))
    except ValueError:
        raise InvalidArgumentError("delta.minReaderVersion / delta.minWriterVersion must be integers") from None
    if not (1 <= min_reader <= 3 and 1 <= min_writer <= 7):
        raise InvalidArgumentError(f"unsupported protocol versions reader={min_reader} writer={min_writer}")
    if min_reader == 3 and min_writer < 7:
        raise InvalidArgumentError("reader version 3 requires writer version 7")
    features = features_in_use(schema_json, configuration)
    stored = {k: v for k, v in conf.items() if not k.startswith(FEATURE_PROPERTY_PREFIX)}
    for key, value in conf.items():
        if key.startswith(FEATURE_PROPERTY_PREFIX):
            check_feature_property_value(key, value)
    unknown = sorted(f for f in features if f not in CREATABLE_FEATURES)
    if unknown:
        raise UnsupportedFeatureError(
            f"cannot create a table with feature(s) {', '.join(unknown)}: this package cannot write them",
            feature=unknown[0])
    base = Protocol(1, 2)
    return protocol_with_features(base, features, min_reader=min_reader, min_writer=min_writer), stored



def check_readable(protocol: Protocol, where: str, extra_features: frozenset[str] = frozenset()) -> None:
    """Refuse tables whose reader protocol we cannot honour, naming what is missing.

    ``extra_features`` are reader features the caller can serve (e.g. ``catalogManaged``
    when the table was opened with a catalog that supplies its staged commits).
    """
    if protocol.min_reader_version > MAX_READER_VERSION:
        raise UnsupportedFeatureError(
            f"{where}: Unsupported Delta protocol reader version {protocol.min_reader_version} "
            f"(this reader supports up to {MAX_READER_VERSION})", feature=f"readerVersion{protocol.min_reader_version}")
    if protocol.min_reader_version == 3:
        unknown = [f for f in (protocol.reader_features or ())
                   if f not in SUPPORTED_READER_FEATURES and f not in extra_features]
        if unknown and set(unknown) <= CATALOG_MANAGED_FEATURES:
            raise catalog_required(where, unknown[0])
        if unknown:
            raise UnsupportedFeatureError(
                f"{where}: the table needs reader feature(s) {unknown}, which this reader does not support",
                feature=unknown[0])


def commits_are_coordinated(protocol: Protocol, metadata: Metadata) -> bool:
    """Whether a coordinator (commit owner, catalog) ratifies this table's commits, in any variant."""
    features = set(protocol.writer_features or ()) | set(protocol.reader_features or ())
    conf = metadata.configuration or {}
    return bool(features & COMMIT_COORDINATION_FEATURES) or any(k in conf for k in COMMIT_COORDINATOR_PROPERTIES)


def catalog_required(where: str, feature: str) -> CatalogRequiredError:
    """PROTOCOL.md, catalog-managed tables: "Filesystem-based access to catalog-managed tables is
    not supported"; readers "must contact the catalog for information about unpublished ratified
    commits". Refusing (not answering from ``_delta_log``) is what keeps a filesystem-only client
    from reading a stale table or version (the published commits lag the catalog)."""
    return CatalogRequiredError(
        f"{where}: the table is catalog-managed ({feature}): its latest commits are known only to its catalog, "
        "so it cannot be read from storage alone; open it through its catalog, DeltaTable(uri, "
        "catalog=SqlCatalog(url)) (in Airflow: the delta connection's 'catalog' extra)", feature=feature)


# ----------------------------------------------------------------------------- the gate
class Operation(str, enum.Enum):
    """What a caller is about to do to a table: the gate's question is "may we, on this protocol?"."""

    LIST_VERSIONS = "list versions"
    READ = "read"
    COMMIT = "commit"
    CHECKPOINT = "write a checkpoint"
    COMPACT_LOG = "compact the log"
    CLEANUP = "clean up metadata"
    VACUUM = "vacuum"
    BACKFILL = "backfill"

    @property
    def deletes(self) -> bool:
        return self in (Operation.CLEANUP, Operation.VACUUM)


#: Operations a catalog-managed table allows only with its catalog's permission (PROTOCOL.md,
#: "Maintenance Operations on Catalog-managed Tables"): checkpoints and log compaction stay allowed.
_CATALOG_RESTRICTED = frozenset({Operation.CLEANUP, Operation.VACUUM})


def require(protocol: Protocol, operation: Operation, where: str,
            served_reader_features: frozenset[str] = frozenset(), catalog_allows_maintenance: bool = False,
            served_writer_features: frozenset[str] = frozenset()) -> None:
    """The gate: raise :class:`UnsupportedFeatureError` unless ``operation`` may run on ``protocol``.

    Every operation of the package asks here before it reads anything for writing or
    touches storage. Listing versions needs nothing; everything else needs a reader
    protocol we honour (``served_reader_features`` are reader features the caller's
    commit source serves, e.g. ``catalogManaged``). Commits need every writer feature to
    be one we can commit to, or one the commit source honours (``served_writer_features``:
    ``catalogManaged`` and ``multiTableTransaction-dev`` through our SQL catalog); maintenance needs every writer feature to be one whose
    rules maintenance keeps (``vacuumProtocolCheck`` asks exactly this of vacuum).
    Catalog-managed tables refuse cleanup and vacuum unless the catalog allows them.
    """
    if operation is Operation.LIST_VERSIONS:     # needs no reader feature, but the catalog's commits
        managed = [f for f in (protocol.reader_features or ()) if f in CATALOG_MANAGED_FEATURES
                   and f not in served_reader_features]
        if managed:
            raise catalog_required(f"{where}: cannot {operation.value}", managed[0])
        return
    check_readable(protocol, f"{where}: cannot {operation.value}", served_reader_features)
    if operation is Operation.READ:
        return
    if protocol.min_writer_version > MAX_WRITER_VERSION:
        raise UnsupportedFeatureError(
            f"{where}: cannot {operation.value}: the table needs writer version {protocol.min_writer_version}; "
            f"this package supports up to {MAX_WRITER_VERSION}", feature=f"writerVersion{protocol.min_writer_version}")
    _reader, writer = supported_features(protocol)
    if operation in (Operation.COMMIT, Operation.BACKFILL):
        unknown = sorted(f for f in writer if f not in WRITABLE_FEATURES and f not in served_writer_features)
    else:   # maintenance of published versions is allowed on tables whose commits a source serves
        unknown = sorted(f for f in writer if f not in MAINTAINABLE_FEATURES and f not in served_reader_features
                         and f not in served_writer_features)
    if unknown:
        raise UnsupportedFeatureError(
            f"{where}: cannot {operation.value}: the table uses writer feature(s) {', '.join(unknown)}, whose "
            f"rules this package does not implement for that; use an engine that supports them (Delta Spark)",
            feature=unknown[0])
    if operation in _CATALOG_RESTRICTED and not catalog_allows_maintenance:
        managed = sorted(f for f in (protocol.reader_features or ()) if f in CATALOG_MANAGED_FEATURES)
        if managed:
            raise UnsupportedFeatureError(
                f"{where}: cannot {operation.value}: the table is catalog-managed ({managed[0]}) and its "
                "catalog has not allowed this client to run maintenance on it", feature=managed[0])


def checkpoint_protection_boundary(protocol: Protocol, metadata: Metadata) -> int | None:
    """``delta.requireCheckpointProtectionBeforeVersion`` when ``checkpointProtection`` is supported, else None.

    Cleanup may then remove versions before the boundary only all at once, never checkpoints
    before it on their own (the checkpoint-protection RFC, requirements a, c and d).
    """
    _reader, writer = supported_features(protocol)
    if "checkpointProtection" not in writer:
        return None
    raw = metadata.configuration.get(REQUIRE_CHECKPOINT_PROTECTION_BEFORE_PROPERTY)
    try:
        return int(raw) if raw is not None else 0
    except ValueError:
        raise InvalidTableStateError(
            f"table property {REQUIRE_CHECKPOINT_PROTECTION_BEFORE_PROPERTY} must be a version number, "
            f"got {raw!r}") from None
