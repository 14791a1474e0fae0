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
  ``txn`` when asked, every live file removed on ``overwrite``, all validated.
"""
from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any, Callable, Iterable

import pyarrow as pa

from ..base import ict
from ..base.arrow_build import empty_table
from ..base.actions import Metadata, Protocol
from ..base.errors import InvalidArgumentError, UnsupportedFeatureError
from ..base.features import (Operation, check_can_add_data, column_mapping_mode, normalize_properties,
                       protocol_for_new_table)
from ..base.commit_source import require_through
from ..base.schema import arrow_to_schema, schema_string, schema_to_arrow, validate_partition_columns
from ..base.schema_fit import conform_to_schema
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog
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

    @property
    def creates_table(self) -> bool:
        return self.read_version == -1

    def operation_parameters(self) -> dict[str, Any]:
        return {"mode": self.mode.capitalize(), "partitionBy": list(self.partition_columns)}


def plan_write(uri: str, snap: Snapshot | None, data_schema: pa.Schema, mode: str = "append",
               partition_by: tuple[str, ...] | None = None, properties: dict[str, Any] | None = None,
               overwrite_schema: bool = False, name: str | None = None, description: str | None = None,
               clock: Callable[[], int] | None = None) -> WritePlan:
    """Decide what writing data of ``data_schema`` into the table (``snap``; None: no table) commits."""
    check_mode(mode)
    if snap is None or (mode == "overwrite" and overwrite_schema):
        # the data defines the schema (new table, or an overwrite that replaces it)
        schema = schema_to_arrow(schema_string(data_schema))     # canonical Delta types
        keep = snap.partition_columns if snap is not None and partition_by is None else ()
        cols = validate_partition_columns(schema, partition_by if partition_by is not None else keep)
        conform_to_schema(empty_table(data_schema), schema)
        if snap is None:
            protocol, stored = protocol_for_new_table(arrow_to_schema(schema), normalize_properties(properties))
            metadata = Metadata(str(uuid.uuid4()), schema_string(schema), cols, stored, name, description,
                                created_time=int((clock or ict.system_clock)()))
            plan = WritePlan(uri, mode, schema, metadata.schema_string, cols, stored, -1, protocol, metadata)
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
        txn.remove_files(txn.read_files().column("path").to_pylist())
    txn.validate()
    return txn
