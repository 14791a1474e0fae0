"""The Arrow shapes of log actions: one definition for every reader and writer of them.

Replay (JSON commits), the checkpoint reader and the checkpoint writer all move
``add``/``remove``/``txn``/``metaData``/``protocol``/``domainMetadata`` actions
through Arrow. They must agree on field names and types to the letter (a
checkpoint we write is read back by the same code, and by other engines), so
the types live here and nowhere else:

- the *protocol* shapes (``DV_TYPE``, ``REMOVE_TYPE``... with the JSON field
  names of PROTOCOL.md), used where actions are read or written as structs;
- the *normalized file-action table* (``FILE_ACTION_SCHEMA``): adds and removes
  side by side in snake_case columns, the form replay reconciles and
  ``Snapshot.files()`` returns;
- the mapping between the two (``ADD_FIELDS``, ``REMOVE_FIELDS``).
"""
from __future__ import annotations

import pyarrow as pa

from .arrow_build import empty_table
from .path_spelling import LOG_PATH_COLUMN

STR_MAP = pa.map_(pa.string(), pa.string())
STR_LIST = pa.list_(pa.field("element", pa.string()))

#: ``deletionVector`` descriptor (PROTOCOL.md, "Deletion Vector Descriptor Schema").
DV_TYPE = pa.struct([
    ("storageType", pa.string()), ("pathOrInlineDv", pa.string()), ("offset", pa.int32()),
    ("sizeInBytes", pa.int32()), ("cardinality", pa.int64()), ("maxRowIndex", pa.int64()),
])
TXN_TYPE = pa.struct([("appId", pa.string()), ("version", pa.int64()), ("lastUpdated", pa.int64())])
REMOVE_TYPE = pa.struct([
    ("path", pa.string()), ("deletionTimestamp", pa.int64()), ("dataChange", pa.bool_()),
    ("extendedFileMetadata", pa.bool_()), ("partitionValues", STR_MAP), ("size", pa.int64()),
    ("deletionVector", DV_TYPE), ("baseRowId", pa.int64()), ("defaultRowCommitVersion", pa.int64()),
])
METADATA_TYPE = pa.struct([
    ("id", pa.string()), ("name", pa.string()), ("description", pa.string()),
    ("format", pa.struct([("provider", pa.string()), ("options", STR_MAP)])),
    ("schemaString", pa.string()), ("partitionColumns", STR_LIST), ("configuration", STR_MAP),
    ("createdTime", pa.int64()),
])
PROTOCOL_TYPE = pa.struct([
    ("minReaderVersion", pa.int32()), ("minWriterVersion", pa.int32()),
    ("readerFeatures", STR_LIST), ("writerFeatures", STR_LIST),
])
DOMAIN_TYPE = pa.struct([("domain", pa.string()), ("configuration", pa.string()), ("removed", pa.bool_())])
#: V2-spec checkpoints only: one ``checkpointMetadata`` action, and ``sidecar`` actions naming the
#: parquet files in ``_delta_log/_sidecars/`` that hold the checkpoint's adds and removes.
CHECKPOINT_METADATA_TYPE = pa.struct([("version", pa.int64()), ("tags", STR_MAP)])
SIDECAR_TYPE = pa.struct([("path", pa.string()), ("sizeInBytes", pa.int64()), ("modificationTime", pa.int64()),
                          ("tags", STR_MAP)])
#: ``add`` fields every checkpoint carries; ``stats``, ``partitionValues_parsed`` and
#: ``stats_parsed`` follow the table's properties (see the checkpoint writer).
ADD_BASE_FIELDS = [
    pa.field("path", pa.string()), pa.field("partitionValues", STR_MAP), pa.field("size", pa.int64()),
    pa.field("modificationTime", pa.int64()), pa.field("dataChange", pa.bool_()), pa.field("tags", STR_MAP),
    pa.field("deletionVector", DV_TYPE), pa.field("baseRowId", pa.int64()),
    pa.field("defaultRowCommitVersion", pa.int64()), pa.field("clusteringProvider", pa.string()),
]

#: Columns of a normalized file-action table (adds and removes together).
FILE_ACTION_SCHEMA = pa.schema([
    ("path", pa.string()),          # decoded: the file to open
    (LOG_PATH_COLUMN, pa.string()),  # as the log spells it: the reconciliation key (.path_spelling)
    ("partition_values", STR_MAP),
    ("size", pa.int64()),
    ("modification_time", pa.int64()),
    ("data_change", pa.bool_()),
    ("stats", pa.string()),
    ("tags", STR_MAP),
    ("deletion_vector", DV_TYPE),
    ("base_row_id", pa.int64()),
    ("default_row_commit_version", pa.int64()),
    ("clustering_provider", pa.string()),
    ("deletion_timestamp", pa.int64()),
    ("extended_file_metadata", pa.bool_()),
    ("is_add", pa.bool_()),
    ("version", pa.int64()),
    ("seq", pa.int64()),
])
FILE_ACTION_TYPES = {f.name: f.type for f in FILE_ACTION_SCHEMA}

#: (JSON field name, normalized column name) of add / remove actions
ADD_FIELDS = [("path", "path"), ("partitionValues", "partition_values"), ("size", "size"),
              ("modificationTime", "modification_time"), ("dataChange", "data_change"),
              ("stats", "stats"), ("tags", "tags"), ("deletionVector", "deletion_vector"),
              ("baseRowId", "base_row_id"), ("defaultRowCommitVersion", "default_row_commit_version"),
              ("clusteringProvider", "clustering_provider")]
REMOVE_FIELDS = [("path", "path"), ("partitionValues", "partition_values"), ("size", "size"),
                 ("dataChange", "data_change"), ("deletionVector", "deletion_vector"),
                 ("baseRowId", "base_row_id"), ("defaultRowCommitVersion", "default_row_commit_version"),
                 ("deletionTimestamp", "deletion_timestamp"),
                 ("extendedFileMetadata", "extended_file_metadata"), ("tags", "tags"), ("stats", "stats")]

#: Columns of ``Snapshot.files()`` and ``Snapshot.tombstones()``.
FILE_COLUMNS = ["path", LOG_PATH_COLUMN, "partition_values", "size", "modification_time", "data_change", "stats",
                "tags", "deletion_vector", "base_row_id", "default_row_commit_version"]
TOMBSTONE_COLUMNS = ["path", LOG_PATH_COLUMN, "deletion_timestamp", "data_change", "extended_file_metadata",
                     "partition_values", "size", "deletion_vector", "base_row_id",
                     "default_row_commit_version"]


def empty_file_actions() -> pa.Table:
    return empty_table(FILE_ACTION_SCHEMA)
