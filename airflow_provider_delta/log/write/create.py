"""Creating a table: version 0, written once.

Creation validates everything first (schema, partition columns, properties, the
protocol the features in use need: see :mod:`.features`), then writes
``commitInfo``, ``protocol`` and ``metaData`` as version 0 with an atomic
put-if-absent, so two creators cannot both win; the loser gets
:class:`TableAlreadyExistsError` and nothing is written.

With a commit owner the table is a managed-commit table from the start: version 0
still goes straight into ``_delta_log`` (so racing creators cannot both win),
after the owner agreed to take the table (a proposal it forgets if the write
fails), and the owner registers the table once version 0 landed.

Losing the race for version 0 to an *identical* create (same schema, partitioning,
properties and protocol: :func:`definition_differences`) is not an error: two runs of
one task on a first deployment both create their output, and the table exists exactly
as both asked. ``create_table`` then returns 0 like the winner, and a write that creates
the table on its first commit goes on against the table as it now is
(:class:`~.write_plan.PlannedWrite`). Losing to a different create stays an error that
names the differences. A table that already existed before the create started is
always :class:`TableAlreadyExistsError`.
"""
from __future__ import annotations

import json
import uuid
from typing import Any, Iterable

import pyarrow as pa

from ..base import ict
from ..base.actions import Metadata, Protocol
from ..base.catalog_store.table_source import CatalogTableSource
from ..base.catalog_store.identity import CATALOG_ID_PROPERTY
from ..base.commit_owner.base import CommitOwner
from ..base.commit_owner.conf import dumps_owner_conf
from ..base.errors import ConcurrentModificationError, InvalidArgumentError, TableAlreadyExistsError
from ..base.property_values import checked_properties
from ..base.features import (CATALOG_MANAGED_FEATURE, ICT_FEATURE, MANAGED_OWNER_CONF_PROPERTY,
                             MANAGED_OWNER_PROPERTY, MULTI_TABLE_TRANSACTION_FEATURE,
                             protocol_for_new_table, protocol_with_features)
from ..base.names import LOG_DIR, parse_log_name
from ..base.schema import arrow_to_schema, schema_string, schema_to_arrow, validate_partition_columns
from ..read.table_log import TableLog
from .transaction import Transaction


#: What a table created through a catalog supports: catalog-managed commits (reader and writer
#: feature) with the features Delta Spark requires of them (in-commit timestamps, which PROTOCOL.md
#: requires too, and ``vacuumProtocolCheck``: CatalogOwnedTableFeature.requiredFeatures), and
#: taking part in multi-table transactions.
CATALOG_TABLE_FEATURES = (CATALOG_MANAGED_FEATURE, ICT_FEATURE, "vacuumProtocolCheck",
                          MULTI_TABLE_TRANSACTION_FEATURE)


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


def table_has_commits(table: TableLog) -> bool:
    """Any commit or checkpoint in ``_delta_log`` (a listing only; nothing is read)."""
    for info in table.storage.list_dir(LOG_DIR):
        if parse_log_name(info.name, info.path, info.size, info.mtime_ms) is not None:
            return True
    return False


def definition_differences(existing: Metadata, existing_protocol: Protocol, metadata: Metadata,
                           protocol: Protocol, *, with_properties: bool = True) -> list[str]:
    """What differs between a table's definition and the one a create meant (empty: the same table).

    A definition is what shapes every later read and write: schema, partition columns,
    properties and protocol. Table id, creation time, name and description do not
    count (two runs of one create differ in the first two; the last two are labels).
    ``with_properties=False``: properties, and the protocol they select, do not count either
    (a write whose properties apply only if it creates the table, as Delta Spark's DataFrame writes).
    """
    out = []
    if json.loads(existing.schema_string) != json.loads(metadata.schema_string):
        out.append(f"schema {existing.schema_string} instead of {metadata.schema_string}")
    if tuple(existing.partition_columns) != tuple(metadata.partition_columns):
        out.append(f"partition columns {list(existing.partition_columns)} instead of "
                   f"{list(metadata.partition_columns)}")
    if not with_properties:
        return out
    if dict(existing.configuration) != dict(metadata.configuration):
        out.append(f"properties {dict(existing.configuration)} instead of {dict(metadata.configuration)}")
    if _protocol_key(existing_protocol) != _protocol_key(protocol):
        out.append(f"protocol {existing_protocol.to_json()} instead of {protocol.to_json()}")
    return out


def _protocol_key(p: Protocol) -> tuple[Any, ...]:
    """A protocol with its feature lists as sets (writers may list features in any order)."""
    return (p.min_reader_version, p.min_writer_version, frozenset(p.reader_features or ()),
            frozenset(p.writer_features or ()))


def concurrent_create_differences(table: TableLog, metadata: Metadata, protocol: Protocol, *,
                                  with_properties: bool = True) -> list[str]:
    """After losing version 0: how the table the winner created differs from ours (empty: identical)."""
    winner = table.snapshot(version=0)
    return definition_differences(winner.metadata, winner.protocol, metadata, protocol,
                                  with_properties=with_properties)


def owner_properties(owner: Any) -> dict[str, str]:
    """Table properties that name a commit owner (``delta.managedCommit.*``)."""
    if not isinstance(owner, CommitOwner):
        raise InvalidArgumentError(f"commit_owner must be a CommitOwner (e.g. SqlCommitOwner), got {owner!r}")
    if not owner.name:
        raise InvalidArgumentError(f"commit owner {owner!r} has no name")
    props = {MANAGED_OWNER_PROPERTY: str(owner.name)}
    conf = owner.owner_conf()
    if conf:
        props[MANAGED_OWNER_CONF_PROPERTY] = dumps_owner_conf(conf)
    return props


def create_table(table: TableLog, schema: Any, partition_by: Iterable[str] = (),
                 properties: dict[str, Any] | None = None, name: str | None = None,
                 description: str | None = None, **commit_kwargs: Any) -> int:
    """Create the table ``table`` points at as version 0 (returns 0).

    ``commit_kwargs`` go to the :class:`~.transaction.Transaction` (``job``,
    ``user_metadata``, ``clock``...). The table object's commit owner, if any, makes it
    a managed-commit table.
    """
    commit_owner = table.commit_owner
    catalog = commit_owner if isinstance(commit_owner, CatalogTableSource) else None
    arrow_schema = _normalize_schema(schema)
    schema_json = arrow_to_schema(arrow_schema)       # validates column names and types
    cols = validate_partition_columns(arrow_schema, partition_by)
    props = checked_properties(properties)
    if catalog is not None:
        props[ict.ENABLE_PROPERTY] = "true"     # catalog-managed tables need in-commit timestamps
        props[CATALOG_ID_PROPERTY] = catalog.store.catalog_id()   # which catalog holds it (register checks)
    elif commit_owner is not None:
        props.update(owner_properties(commit_owner))
        props[ict.ENABLE_PROPERTY] = "true"
    elif props.get(MANAGED_OWNER_PROPERTY):
        raise InvalidArgumentError(f"{MANAGED_OWNER_PROPERTY} is set by passing commit_owner=..., "
                                   "not as a property")
    protocol, stored = protocol_for_new_table(schema_json, props)
    if catalog is not None:
        protocol = protocol_with_features(protocol, CATALOG_TABLE_FEATURES)
    metadata = Metadata(id=str(uuid.uuid4()), schema_string=schema_string(arrow_schema),
                        partition_columns=cols, configuration=stored, name=name,
                        description=description,
                        created_time=int((commit_kwargs.get("clock") or ict.system_clock)()))

    if table_has_commits(table):
        raise TableAlreadyExistsError(f"a Delta table already exists at {table.uri}")
    params = {"isManaged": "false", "description": description, "partitionBy": list(cols),
              "properties": stored}
    params.update(commit_kwargs.pop("operation_parameters", None) or {})
    txn = Transaction(table, operation=commit_kwargs.pop("operation", "CREATE TABLE"),
                      operation_parameters=params, read_version=-1, **commit_kwargs)
    txn.set_protocol(protocol)
    txn.set_metadata(metadata)
    try:
        return commit_new_table(table, txn, metadata)
    except TableAlreadyExistsError:           # lost the race for version 0 (it was absent above)
        differences = concurrent_create_differences(table, metadata, protocol)
        if differences:
            raise TableAlreadyExistsError(
                f"a different Delta table was created at {table.uri} concurrently (version 0 exists): "
                + "; ".join(differences)) from None
        return 0                              # lost to an identical create: the table exists as asked


def commit_new_table(table: TableLog, txn: Transaction, metadata: Metadata) -> int:
    """Commit ``txn`` (read version -1, carrying ``metadata``) as version 0 of ``table``; returns 0.

    Validates first (nothing is written on bad input). With the table object's commit
    owner, the owner agrees to take the table before version 0 is written and registers
    it afterwards; a creator that loses the race gets TableAlreadyExistsError.
    """
    commit_owner = table.commit_owner
    catalog = commit_owner if isinstance(commit_owner, CatalogTableSource) else None
    txn.validate()
    proposed = isinstance(commit_owner, CommitOwner)
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
    if isinstance(commit_owner, CommitOwner):
        commit_owner.register_table(metadata.id, table.uri, 0)
    if catalog is not None:
        # version 0 is published directly (put-if-absent decides between racing creators), and
        # the catalog takes the table over from there (PROTOCOL.md, creating catalog-managed tables)
        catalog.register(metadata.id)
    return 0
