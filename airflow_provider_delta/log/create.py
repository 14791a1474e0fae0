"""Creating a table (version 0), and the protocol a table's features need.

Both halves answer one question: *which protocol must this metadata carry?*
Creation asks it for a new table; a transaction that changes properties (e.g.
turning on in-commit timestamps) asks it for an existing one. The answer follows
the protocol's rules:

- legacy features are expressed by versions alone when possible (appendOnly and
  invariants need writer 2, CHECK constraints 3, change data feed and generated
  columns 4, column mapping reader 2/writer 5, identity columns 6), so tables stay
  readable by old clients;
- anything else needs writer 7 with ``writerFeatures`` (and reader 3 with
  ``readerFeatures`` only for reader-writer features such as ``timestampNtz``);
- when a table moves to writer 7, every feature its legacy versions implied is
  listed explicitly (the protocol demands it; Delta Spark does the same), and
  nothing already supported is ever dropped.

Creation writes ``commitInfo``, ``protocol`` and ``metaData`` as version 0 with an
atomic put-if-absent, so two creators cannot both win; the loser gets
:class:`TableAlreadyExistsError` and nothing is written. Validation happens
before anything touches storage.
"""
from __future__ import annotations

import json
import uuid
from typing import TYPE_CHECKING, Any, Iterable

import pyarrow as pa

from . import ict
from .actions import SUPPORTED_READER_FEATURES, Metadata, Protocol
from .errors import (ConcurrentModificationError, InvalidArgumentError, TableAlreadyExistsError,
                     UnsupportedFeatureError)
from .names import LOG_DIR, parse_log_name
from .schema import arrow_to_schema, schema_string, schema_to_arrow

if TYPE_CHECKING:  # pragma: no cover
    from .table import DeltaTable

# ----------------------------------------------------------------- feature tables
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

MANAGED_COMMIT_FEATURE = "managedCommit"
MANAGED_OWNER_PROPERTY = "delta.managedCommit.commitOwner"
MANAGED_OWNER_CONF_PROPERTY = "delta.managedCommit.commitOwnerConf"

#: Writer features this package can commit to without breaking their rules. Some are only
#: honoured while inactive for data-adding commits (see :func:`check_can_add_data`).
WRITABLE_FEATURES = frozenset({
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
    "columnMapping", "identityColumns", "deletionVectors", "timestampNtz", "domainMetadata",
    "v2Checkpoint", "vacuumProtocolCheck", "typeWidening", "typeWidening-preview",
    "allowColumnDefaults", "variantType", "variantType-preview", MANAGED_COMMIT_FEATURE,
    *ict.ICT_FEATURE_NAMES,
})

#: Features a new table may be created with through :func:`create_table`.
CREATABLE_FEATURES = frozenset({
    "appendOnly", "invariants", "checkConstraints", "changeDataFeed", "generatedColumns",
    "deletionVectors", "timestampNtz", "domainMetadata", "v2Checkpoint", "vacuumProtocolCheck",
    "typeWidening", "allowColumnDefaults", "variantType", MANAGED_COMMIT_FEATURE, ict.ICT_FEATURE,
})

_PROTOCOL_PROPERTIES = ("delta.minReaderVersion", "delta.minWriterVersion")
_FEATURE_PROPERTY_PREFIX = "delta.feature."


def _true(conf: dict[str, str], key: str) -> bool:
    return str(conf.get(key, "false")).strip().lower() == "true"


def _canonical(feature: str) -> str:
    return ict.ICT_FEATURE if feature in ict.ICT_FEATURE_NAMES else feature


def _walk_schema(node: Any, found: set[str]) -> None:
    """Collect features implied by column types and column metadata."""
    if isinstance(node, str):
        if node == "timestamp_ntz":
            found.add("timestampNtz")
        elif node == "variant":
            found.add("variantType")
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
        _walk_schema(json.loads(schema) if isinstance(schema, str) else schema, found)
    if _true(conf, "delta.appendOnly"):
        found.add("appendOnly")
    if any(k.startswith("delta.constraints.") for k in conf):
        found.add("checkConstraints")
    if _true(conf, "delta.enableChangeDataFeed"):
        found.add("changeDataFeed")
    if str(conf.get("delta.columnMapping.mode", "none")).lower() in ("name", "id"):
        found.add("columnMapping")
    if _true(conf, "delta.enableDeletionVectors"):
        found.add("deletionVectors")
    if _true(conf, "delta.enableRowTracking"):
        found.update(("rowTracking", "domainMetadata"))
    if _true(conf, "delta.enableTypeWidening"):
        found.add("typeWidening")
    if str(conf.get("delta.checkpointPolicy", "classic")).lower() == "v2":
        found.add("v2Checkpoint")
    if ict.property_enabled(conf):
        found.add(ict.ICT_FEATURE)
    if conf.get(MANAGED_OWNER_PROPERTY):
        found.update((MANAGED_COMMIT_FEATURE, ict.ICT_FEATURE))
    for key, value in conf.items():
        if key.startswith(_FEATURE_PROPERTY_PREFIX) and str(value).lower() in ("supported", "enabled"):
            found.add(_canonical(key[len(_FEATURE_PROPERTY_PREFIX):]))
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


def _supports(names: set[str], feature: str) -> bool:
    return feature in names or (feature in ict.ICT_FEATURE_NAMES and bool(names & ict.ICT_FEATURE_NAMES))


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


def check_can_add_data(protocol: Protocol, metadata: Metadata) -> None:
    """Refuse data-adding commits when an active feature demands checks we cannot run.

    CHECK constraints, column invariants, generated and identity columns are SQL
    expressions over the rows; the protocol requires writers to enforce them, and
    this package does not evaluate SQL, so it must not add rows to such tables.
    """
    _reader, writer = supported_features(protocol)
    active = features_in_use(metadata.schema_string, metadata.configuration)
    for f in ("checkConstraints", "invariants", "generatedColumns", "identityColumns"):
        if f in active and f in writer:
            raise UnsupportedFeatureError(
                f"table has active feature {f!r} (SQL expressions every new row must satisfy); this package "
                "cannot evaluate them, so it does not add data to this table", feature=f)


# --------------------------------------------------------------------- creation
def _normalize_schema(schema: Any) -> pa.Schema:
    if isinstance(schema, pa.Schema):
        out = schema
    elif isinstance(schema, (str, dict)):
        out = schema_to_arrow(schema)
    else:
        raise InvalidArgumentError(f"schema must be a pyarrow.Schema (or Delta schema JSON), got "
                                   f"{type(schema).__name__}")
    if len(out) == 0:
        raise InvalidArgumentError("a Delta table needs at least one column")
    return out


def validate_partition_columns(schema: pa.Schema, partition_by: Iterable[str]) -> tuple[str, ...]:
    """Partition columns must be distinct top-level primitive columns, and not all of them."""
    if isinstance(partition_by, str):
        partition_by = [partition_by]
    cols = tuple(partition_by or ())
    seen: set[str] = set()
    for c in cols:
        if not isinstance(c, str):
            raise InvalidArgumentError(f"partition column names must be strings, got {c!r}")
        if c in seen:
            raise InvalidArgumentError(f"partition column {c!r} is listed twice")
        seen.add(c)
        idx = schema.get_field_index(c)
        if idx < 0:
            raise InvalidArgumentError(f"partition column {c!r} is not a column of the schema "
                                       f"({', '.join(schema.names)})")
        t = schema.field(idx).type
        if pa.types.is_nested(t) or pa.types.is_dictionary(t):
            raise InvalidArgumentError(f"partition column {c!r} has type {t}; partition columns must be "
                                       "of a primitive type")
    if cols and len(cols) == len(schema):
        raise InvalidArgumentError("cannot use all columns as partition columns: no data would remain "
                                   "in the files")
    return cols


def normalize_properties(properties: dict[str, Any] | None) -> dict[str, str]:
    """Table properties as strings (booleans lower-case, as Spark writes them)."""
    out: dict[str, str] = {}
    for k, v in (properties or {}).items():
        if not isinstance(k, str) or not k:
            raise InvalidArgumentError(f"table property names must be non-empty strings, got {k!r}")
        if v is None:
            raise InvalidArgumentError(f"table property {k!r} has no value")
        out[k] = ("true" if v else "false") if isinstance(v, bool) else str(v)
    for key in (ict.ENABLE_PROPERTY, "delta.appendOnly", "delta.enableChangeDataFeed",
                "delta.enableDeletionVectors"):
        if key in out and out[key].strip().lower() not in ("true", "false"):
            raise InvalidArgumentError(f"table property {key} must be 'true' or 'false', got {out[key]!r}")
    return out


def protocol_for_new_table(schema_json: dict | str, configuration: dict[str, str]) -> tuple[Protocol, dict[str, str]]:
    """(protocol, configuration to store) for a new table.

    ``delta.minReaderVersion``/``delta.minWriterVersion`` and ``delta.feature.<name>``
    properties ask for protocol support and, as in Delta Spark, are not stored.
    """
    conf = dict(configuration)
    try:
        min_reader = int(conf.pop("delta.minReaderVersion", 1))
        min_writer = int(conf.pop("delta.minWriterVersion", 2))
    except ValueError:
        raise InvalidArgumentError("delta.minReaderVersion / delta.minWriterVersion must be integers") from None
    if not (1 <= min_reader <= 3 and 1 <= min_writer <= 7):
        raise InvalidArgumentError(f"unsupported protocol versions reader={min_reader} writer={min_writer}")
    if min_reader == 3 and min_writer < 7:
        raise InvalidArgumentError("reader version 3 requires writer version 7")
    features = features_in_use(schema_json, configuration)
    stored = {k: v for k, v in conf.items() if not k.startswith(_FEATURE_PROPERTY_PREFIX)}
    for key, value in conf.items():
        if key.startswith(_FEATURE_PROPERTY_PREFIX) and str(value).lower() not in ("supported", "enabled"):
            raise InvalidArgumentError(f"{key} must be 'supported', got {value!r}")
    unknown = sorted(f for f in features if f not in CREATABLE_FEATURES)
    if unknown:
        raise UnsupportedFeatureError(
            f"cannot create a table with feature(s) {', '.join(unknown)}: this package cannot write them",
            feature=unknown[0])
    base = Protocol(1, 2)
    return protocol_with_features(base, features, min_reader=min_reader, min_writer=min_writer), stored


def table_has_commits(table: "DeltaTable") -> bool:
    """Any commit or checkpoint in ``_delta_log`` (a listing only; nothing is read)."""
    for info in table.storage.list_dir(LOG_DIR):
        if parse_log_name(info.name, info.path, info.size, info.mtime_ms) is not None:
            return True
    return False


def _owner_properties(owner: Any) -> dict[str, str]:
    """Table properties that name a commit owner (``delta.managedCommit.*``)."""
    from .commit_owner.conf import dumps_owner_conf
    name = getattr(owner, "name", None)
    if not name:
        raise InvalidArgumentError(f"commit owner {owner!r} has no name")
    props = {MANAGED_OWNER_PROPERTY: str(name)}
    conf = getattr(owner, "owner_conf", None)
    conf = conf() if callable(conf) else conf
    if conf:
        props[MANAGED_OWNER_CONF_PROPERTY] = dumps_owner_conf(conf)
    return props


def create_table(cls: type, uri: str, schema: Any, partition_by: Iterable[str] = (),
                 properties: dict[str, Any] | None = None, name: str | None = None,
                 description: str | None = None, commit_owner: Any = None,
                 storage_options: dict[str, Any] | None = None, single_writer: bool = False,
                 conditional_put: bool | None = None,
                 **commit_kwargs: Any) -> "DeltaTable":
    """Create a table at ``uri`` as version 0 and return it (a ``cls`` instance).

    ``commit_kwargs`` go to the :class:`~.transaction.Transaction` (``job``,
    ``user_metadata``, ``clock``...). With ``commit_owner``, the table is a
    managed-commit table: version 0 is still written with put-if-absent straight
    into ``_delta_log`` (so racing creators cannot both win), then the owner is
    asked to ``register_table``.
    """
    from .transaction import Transaction

    arrow_schema = _normalize_schema(schema)
    schema_json = arrow_to_schema(arrow_schema)       # validates column names and types
    cols = validate_partition_columns(arrow_schema, partition_by)
    props = normalize_properties(properties)
    if commit_owner is not None:
        props.update(_owner_properties(commit_owner))
        props[ict.ENABLE_PROPERTY] = "true"
    elif props.get(MANAGED_OWNER_PROPERTY):
        raise InvalidArgumentError(f"{MANAGED_OWNER_PROPERTY} is set by passing commit_owner=..., "
                                   "not as a property")
    protocol, stored = protocol_for_new_table(schema_json, props)
    metadata = Metadata(id=str(uuid.uuid4()), schema_string=schema_string(arrow_schema),
                        partition_columns=cols, configuration=stored, name=name,
                        description=description,
                        created_time=int((commit_kwargs.get("clock") or ict.system_clock)()))

    table = cls(uri, storage_options=storage_options, commit_owner=commit_owner, single_writer=single_writer,
                conditional_put=conditional_put)
    if table_has_commits(table):
        raise TableAlreadyExistsError(f"a Delta table already exists at {table.uri}")
    params = {"isManaged": "false", "description": description, "partitionBy": list(cols),
              "properties": stored}
    params.update(commit_kwargs.pop("operation_parameters", None) or {})
    txn = Transaction(table, operation=commit_kwargs.pop("operation", "CREATE TABLE"),
                      operation_parameters=params, read_version=-1, **commit_kwargs)
    txn.set_protocol(protocol)
    txn.set_metadata(metadata)
    txn.validate()
    proposed = commit_owner is not None and hasattr(commit_owner, "propose_ownership")
    if proposed:
        # two-phase hand-over of the RFC: the owner agrees first, so a creator that dies after
        # writing version 0 still leaves a table the owner confirms at its next commit
        commit_owner.propose_ownership(metadata.id, table.uri, 0)
    try:
        txn.commit()
    except BaseException as e:
        if proposed:
            commit_owner.forget_proposal(table.storage, metadata.id, 0)
        if isinstance(e, ConcurrentModificationError) and e.winning_version == 0:
            raise TableAlreadyExistsError(
                f"a Delta table was created at {table.uri} concurrently (version 0 exists)") from None
        raise
    if commit_owner is not None:
        commit_owner.register_table(metadata.id, table.uri, 0)
    return table
