"""Planning a write: the one place that decides what a data write commits besides its files.

``DeltaTable.write`` (Arrow data, files written by this package) and the Spark
commit path (files written by Spark) make the same decisions before any file is
written, so they make them here:

- a new table: its schema from the data (canonical Delta types), partition columns
  checked, properties normalized, the lowest protocol for the features in use;
- an existing table: the data's schema fits (:mod:`.schema_fit`), partitioning is
  unchanged, the table's protocol lets this package write and add data, and
  column mapping is refused (data files would need physical column names);
- ``overwrite`` with ``overwrite_schema``: the data's schema and partitioning
  replace the table's, keeping its id and properties;
- the transaction: operation parameters as Delta Spark writes them, the exactly-once
  ``txn`` when asked, every live file removed on ``overwrite``, all validated;
- a write that creates the table and loses version 0 to an identical create goes on
  against the table as it now is (:class:`PlannedWrite`);
- properties given for the create only (``create_only_properties=True``, the Spark commit path):
  checked always, applied when the write creates the table, else kept out of the commit and listed
  where they differ from the table's (:attr:`WritePlan.unapplied_properties`), as Delta Spark's
  DataFrame writes (``WriteIntoDelta``) take ``delta.*`` options only for a new table.
"""
from __future__ import annotations

import dataclasses
import uuid
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable

import pyarrow as pa

from ..base import ict
from ..base.arrow_build import empty_table
from ..base.actions import Metadata, Protocol
from ..base.commit_actions import AddFile
from ..base.errors import ConcurrentModificationError, InvalidArgumentError, UnsupportedFeatureError
from ..base.property_values import checked_properties
from ..base.features import (FEATURE_PROPERTY_PREFIX, Operation, check_can_add_data, column_mapping_mode,
                       protocol_for_new_table)
from ..base.commit_source import require_through
from ..base.schema import arrow_to_schema, schema_string, schema_to_arrow, validate_partition_columns
from ..base.schema_fit import conform_to_schema
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog
from .create import concurrent_create_differences
from .transaction import Transaction

MODES = ("append", "overwrite")


def check_mode(mode: Any) -> str:
    if mode not in MODES:
        raise InvalidArgumentError(f"mode must be one of {MODES}, got {mode!r}")
    return mode


def partition_arg(partition_by: Iterable[str] | str | None) -> tuple[str, ...] | None:
    """``partition_by`` as a tuple (None: not given)."""
    if partition_by is None:
        return None
    return (partition_by,) if isinstance(partition_by, str) else tuple(partition_by)


@dataclass(frozen=True)
class WritePlan:
    """What a write commits besides its data files, decided before any file is written."""

    uri: str
    mode: str
    #: the table schema after the write: the data must be conformed to it
    schema: pa.Schema
    #: the same schema as Delta schema JSON (the table's own text for an existing table)
    schema_string: str
    partition_columns: tuple[str, ...]
    #: table properties after the write (they drive statistics collection)
    configuration: dict[str, str]
    #: the version the write is based on; -1 when it creates the table
    read_version: int
    #: protocol and metadata to commit (None: the table's stay)
    protocol: Protocol | None = None
    metadata: Metadata | None = None
    #: the properties the caller gave, checked (``create_only_properties``: also when the table exists)
    properties: dict[str, str] = field(default_factory=dict)
    #: of :attr:`properties`, those the existing table does not hold as given (not applied: they are
    #: for the create only); empty when the write creates the table
    unapplied_properties: dict[str, str] = field(default_factory=dict)

    @property
    def creates_table(self) -> bool:
        return self.read_version == -1

    def operation_parameters(self) -> dict[str, Any]:
        return {"mode": self.mode.capitalize(), "partitionBy": list(self.partition_columns)}


def plan_write(uri: str, snap: Snapshot | None, data_schema: pa.Schema, mode: str = "append",
               partition_by: tuple[str, ...] | None = None, properties: dict[str, Any] | None = None,
               overwrite_schema: bool = False, name: str | None = None, description: str | None = None,
               clock: Callable[[], int] | None = None, create_only_properties: bool = False) -> WritePlan:
    """Decide what writing data of ``data_schema`` into the table (``snap``; None: no table) commits.

    ``properties`` apply to a table the write creates; given for an existing table they are an
    error, unless ``create_only_properties``: then they are checked and left out (see the module doc).
    """
    check_mode(mode)
    if create_only_properties and snap is not None:
        plan = plan_write(uri, snap, data_schema, mode, partition_by, None, overwrite_schema, name, description,
                          clock)
        given = checked_properties(properties)
        return dataclasses.replace(plan, properties=given,
                                   unapplied_properties=_unapplied(given, snap.metadata, snap.protocol))
    if snap is None or (mode == "overwrite" and overwrite_schema):
        # the data defines the schema (new table, or an overwrite that replaces it)
        schema = schema_to_arrow(schema_string(data_schema))     # canonical Delta types
        keep = snap.partition_columns if snap is not None and partition_by is None else ()
        cols = validate_partition_columns(schema, partition_by if partition_by is not None else keep)
        conform_to_schema(empty_table(data_schema), schema)
        if snap is None:
            given = checked_properties(properties)
            protocol, stored = protocol_for_new_table(arrow_to_schema(schema), given)
            metadata = Metadata(str(uuid.uuid4()), schema_string(schema), cols, stored, name, description,
                                created_time=int((clock or ict.system_clock)()))
            plan = WritePlan(uri, mode, schema, metadata.schema_string, cols, stored, -1, protocol, metadata, given)
        else:
            if properties:
                raise InvalidArgumentError("properties can only be given when the table is created")
            old = snap.metadata
            metadata = Metadata(old.id, schema_string(schema), cols, dict(old.configuration), old.name,
                                old.description, old.format_provider, dict(old.format_options), old.created_time)
            plan = WritePlan(uri, mode, schema, metadata.schema_string, cols, dict(old.configuration), snap.version,
                             None, metadata)
    else:
        if properties:
            raise InvalidArgumentError("properties can only be given when the table is created; use "
                                       "a transaction's set_properties to change them")
        if overwrite_schema:
            raise InvalidArgumentError("overwrite_schema=True needs mode='overwrite'")
        cols = tuple(snap.partition_columns)
        if partition_by is not None and tuple(partition_by) != cols:
            raise InvalidArgumentError(
                f"{uri} is partitioned by {list(cols)}, not {list(partition_by)}; "
                "use mode='overwrite' with overwrite_schema=True to change partitioning")
        require_through(snap.log.commit_source, snap.protocol, Operation.COMMIT, f"{uri} at version {snap.version}")
        check_can_add_data(snap.protocol, snap.metadata)
        conform_to_schema(empty_table(data_schema), snap.schema)   # raises on a mismatch
        plan = WritePlan(uri, mode, snap.schema, snap.metadata.schema_string, cols,
                         dict(snap.metadata.configuration), snap.version)
    if column_mapping_mode(plan.configuration) != "none":
        raise UnsupportedFeatureError(
            f"{uri} uses column mapping; writing its data files needs physical column names, which this "
            "package does not produce (Spark writes logical column names too)", feature="columnMapping")
    return plan


def _unapplied(given: dict[str, str], metadata: Metadata, protocol: Protocol) -> dict[str, str]:
    """Of ``given`` properties, those the table (``metadata``, ``protocol``) does not hold as given."""
    features = set(protocol.reader_features or ()) | set(protocol.writer_features or ())
    return {k: v for k, v in given.items()
            if (k[len(FEATURE_PROPERTY_PREFIX):] not in features if k.startswith(FEATURE_PROPERTY_PREFIX)
                else metadata.configuration.get(k) != v)}


def write_transaction(table: TableLog, plan: WritePlan, *, app_id: str | None = None,
                      app_version: int | None = None, operation: str = "WRITE",
                      operation_parameters: dict[str, Any] | None = None, **txn_kwargs: Any) -> Transaction:
    """The write's commit, validated before any data file is written (the caller adds the files).

    ``overwrite`` removes every live file of the read version; ``app_id``/``app_version``
    record the exactly-once ``txn`` (a concurrent commit of the same app id conflicts).
    """
    txn = Transaction(table, operation=operation,
                      operation_parameters={**plan.operation_parameters(), **(operation_parameters or {})},
                      read_version=plan.read_version, **txn_kwargs)
    if plan.protocol is not None:
        txn.set_protocol(plan.protocol)
    if plan.metadata is not None:
        txn.set_metadata(plan.metadata)
    if app_id is not None:
        txn.set_txn(app_id, app_version)  # type: ignore[arg-type]
    if not plan.creates_table and plan.mode == "overwrite":
        # each path once: a file live under two spellings is removed under both (base/path_spelling.py)
        txn.remove_files(dict.fromkeys(txn.read_files().column("path").to_pylist()))
    txn.validate()
    return txn


class PlannedWrite:
    """A write's transaction, built from its plan before any data file is written, and its commit.

    Committing is where a write that creates the table can lose version 0 to another
    writer creating it at the same moment (two runs of one task on a first deployment).
    If that writer created the same table (:func:`.create.definition_differences`),
    this write is planned again from the table as it now is and committed with the same
    data files: an append adds them, an overwrite replaces what the winner wrote (the
    same as if it had started a moment later). The original
    :class:`ConcurrentModificationError` stands when the winner already recorded this
    write's ``app_id`` version (the same write, retried elsewhere: the caller skips);
    one naming the differences when the winner created a different table (with
    ``create_only_properties``, properties and the protocol they select do not count: the write
    goes on without its properties, listed in the new plan's ``unapplied_properties``).
    """

    def __init__(self, table: TableLog, plan: WritePlan, *, create_only_properties: bool = False, **txn_args: Any):
        self.table = table
        self.plan = plan
        #: the plan's properties were for the create only (:func:`plan_write`): a winner created with
        #: other properties is the table this write goes on against
        self.create_only_properties = create_only_properties
        self._txn_args = txn_args
        self.txn = write_transaction(table, plan, **txn_args)

    @property
    def outcome_unknown(self) -> bool:
        """True if a commit owner failed in a way that leaves the outcome unknown (keep the files)."""
        return self.txn.outcome_unknown

    def commit(self, adds: list[AddFile]) -> int:
        """Commit the data files ``adds`` (written for :attr:`plan`); returns the version."""
        self.txn.add_files(adds)
        try:
            return self.txn.commit()
        except ConcurrentModificationError as lost:
            if not self.plan.creates_table or lost.winning_version != 0:
                raise
            self._replan_after_lost_create(lost)
        self.txn.add_files(adds)
        return self.txn.commit()

    def _replan_after_lost_create(self, lost: ConcurrentModificationError) -> None:
        assert self.plan.metadata is not None and self.plan.protocol is not None
        differences = concurrent_create_differences(self.table, self.plan.metadata, self.plan.protocol,
                                                    with_properties=not self.create_only_properties)
        if differences:
            raise ConcurrentModificationError(
                f"another writer created {self.table.uri} concurrently as a different table than this write "
                "would have: " + "; ".join(differences), winning_version=0, reason=lost.reason) from None
        snap = self.table.snapshot()
        app_id, app_version = self._txn_args.get("app_id"), self._txn_args.get("app_version")
        if app_id is not None and app_version is not None:
            recorded = snap.transaction_version(app_id)
            if recorded is not None and recorded >= app_version:
                raise lost
        self.plan = plan_write(self.table.uri, snap, self.plan.schema, self.plan.mode, self.plan.partition_columns,
                               self.plan.properties if self.create_only_properties else None,
                               create_only_properties=self.create_only_properties)
        self.txn = write_transaction(self.table, self.plan, **self._txn_args)
