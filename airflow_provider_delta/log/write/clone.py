"""Shallow CLONE: a new table whose files are the source's, referenced where they are.

The rules are Delta Spark's ``CloneTableBase`` / ``CloneTableCommand`` for a Delta source:

- the target location must hold nothing yet and lie inside no table whose files the clone lists
  (the source, and for a clone of a clone the table its absolute paths point into): that
  table's vacuum would delete the clone's own files (a check of ours; InvalidArgumentError);
- the target location must hold nothing yet (a Delta table there is
  TableAlreadyExistsError, any other file InvalidArgumentError); nothing is written then;
- version 0 of the clone adds every live file of the source version with its path made
  an absolute URI (``file:/...`` for local tables, the store's URL otherwise), deletion
  vectors stored beside the source as absolute ``p`` references (inline ones as they
  are), statistics, tags and partition values kept, ``dataChange=true``, no row ids;
- the source's protocol and metadata, with a new table id and without name and
  description (the target's, none for a new table);
- ``commitInfo`` (``readVersion`` -1, ``isolationLevel`` ``Serializable``, as ``commitLarge``
  writes it) says ``CLONE`` with ``source`` (``delta.`<uri>```) and ``sourceVersion``,
  and Delta Spark's metrics (``sourceTableSize``, ``sourceNumOfFiles`` and the
  removed/copied counts and sizes, 0 for a shallow clone of a new table).

Commit coordination is not copied (Delta Spark drops coordinated-commit properties and
the catalog-owned feature), nor the multi-table transaction feature or the catalog id our
SQL catalog records (the clone belongs to no catalog): a clone of a managed-commit or catalog-managed source is a
plain filesystem table, unless the clone's table object has a commit owner of its own,
which then manages it from version 0 on. In-commit timestamps, when the source has them,
apply from the clone's version 0 (the source's enablement version means nothing there).

The clone's history is its own; it shares the source's data files. Everything the clone
writes goes below its own root, and vacuum and metadata cleanup only ever delete below
the table's own root, so nothing done to the clone deletes a source file. The other way
round is the nature of a shallow clone: a vacuum of the *source* does not know about the
clone and may delete files the clone still reads once the source no longer references
them (Delta Spark behaves the same).
"""
from __future__ import annotations

import os
import uuid
from dataclasses import dataclass
from typing import Any, Iterable

from ..base import ict
from ..base.actions import Metadata, Protocol
from ..base.commit_actions import AddFile
from ..base.path_spelling import encode_path
from ..base.errors import InvalidArgumentError, TableAlreadyExistsError
from ..base.catalog_store.identity import CATALOG_ID_PROPERTY
from ..base.features import (COMMIT_COORDINATION_FEATURES, COMMIT_COORDINATOR_PROPERTIES,
                             MANAGED_OWNER_CONF_PROPERTY, MULTI_TABLE_TRANSACTION_FEATURES, Operation)
from ..base.storage import Storage
from ..read.data_paths import Undecided, file_uri, fsspec_uri, split_uri, table_location, table_root_of, within
from ..read.deletion_vectors import dv_file_path
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog
from .create import commit_new_table, owner_properties, table_has_commits
from .restore import file_actions
from .transaction import Transaction

CLONE_OPERATION = "CLONE"
_NOT_COPIED_PROPERTIES = (*COMMIT_COORDINATOR_PROPERTIES, MANAGED_OWNER_CONF_PROPERTY, CATALOG_ID_PROPERTY,
                          ict.ENABLEMENT_VERSION_PROPERTY, ict.ENABLEMENT_TIMESTAMP_PROPERTY)
#: writer features only a commit coordinator (a catalog) serves: a filesystem clone has none
_NOT_COPIED_FEATURES = COMMIT_COORDINATION_FEATURES | MULTI_TABLE_TRANSACTION_FEATURES


@dataclass(frozen=True)
class CloneResult:
    """The clone's first version (0), the source version it copies, and Delta Spark's metrics."""

    version: int
    source_version: int
    metrics: dict[str, int]


def absolute_uri(storage: Storage, rel: str) -> str:
    """A log path as the absolute URI Delta Spark writes for it (``file:/abs`` locally): the one rule of
    :func:`~..read.data_paths.file_uri` (a scheme-less ``/t/x`` is on the table's own file system)."""
    return file_uri(storage.root, rel, "file:")


def table_uri_text(storage: Storage) -> str:
    """The table's location in Delta Spark's qualified form (``file:/abs`` locally)."""
    return ("file:" + storage.root) if storage.is_local else storage.root


def absolute_add(storage: Storage, add: AddFile) -> AddFile:
    """``add`` as a clone lists it: absolute data and DV paths, ``dataChange=true``, no row ids."""
    dv = add.deletion_vector
    if dv and dv.get("storageType") == "u":
        location = absolute_uri(storage, dv_file_path(dv) or "")
        dv = {**dv, "storageType": "p", "pathOrInlineDv": encode_path(location)}
    return AddFile(absolute_uri(storage, add.path), add.size, dict(add.partition_values), add.modification_time,
                   True, add.stats, add.tags, dv)


def cloned_protocol(source: Protocol) -> Protocol:
    """The source's protocol without commit coordination (the clone commits to its own filesystem) and
    without the multi-table transaction feature, which only a catalog serves."""
    if not source.reader_features and not source.writer_features:
        return source
    drop = _NOT_COPIED_FEATURES
    reader = None if source.reader_features is None else tuple(f for f in source.reader_features if f not in drop)
    writer = None if source.writer_features is None else tuple(f for f in source.writer_features if f not in drop)
    return Protocol(source.min_reader_version, source.min_writer_version, reader, writer)


def cloned_metadata(source: Metadata, extra_properties: dict[str, str]) -> Metadata:
    """The source's metadata with a new id, no name or description, coordination not copied."""
    conf = {k: v for k, v in source.configuration.items() if k not in _NOT_COPIED_PROPERTIES}
    conf.update(extra_properties)
    return Metadata(str(uuid.uuid4()), source.schema_string, source.partition_columns, conf, None, None,
                    source.format_provider, dict(source.format_options), source.created_time)


def _inside(a: Storage, b: Storage, undecided: bool) -> bool:
    """Whether location ``a`` is ``b`` or below it (local locations compared with symlinks resolved;
    remote ones by :func:`~..read.data_paths.table_location`, whatever their spelling: ``s3a://b/t/x`` lies
    inside ``s3://b/t``, ``az://c/t/x`` with the account in the options inside
    ``abfss://c@acct.dfs.core.windows.net/t``). ``undecided`` answers where that cannot be known."""
    if a.is_local != b.is_local:
        return False
    if a.is_local:
        root_a, root_b = os.path.realpath(a.root).rstrip("/") + "/", os.path.realpath(b.root).rstrip("/") + "/"
        return root_a.startswith(root_b)
    parts_a, parts_b = split_uri(a.root), split_uri(b.root)
    assert parts_a is not None and parts_b is not None, "a non-local table root is a URL"
    where = within(table_location(parts_a, a.storage_options), table_location(parts_b, b.storage_options))
    return undecided if isinstance(where, Undecided) else where is not None


def referenced_roots(source: TableLog, adds: Iterable[AddFile]) -> list[Storage]:
    """The roots of every table whose files ``adds`` (the source's, as it lists them) name: the
    source's own, and for absolute paths (a clone of a clone) the table each one lies in.

    One lookup per folder not already inside a known root (a source's files sit in few tables).
    """
    roots = [source.storage]
    for add in adds:
        paths = [add.path]
        if add.deletion_vector and add.deletion_vector.get("storageType") in ("u", "p"):
            paths.append(dv_file_path(add.deletion_vector) or "")
        for p in paths:
            if split_uri(p) is None:
                continue                                  # relative: under the source's own root
            folder_uri = fsspec_uri(absolute_uri(source.storage, p)).rsplit("/", 1)[0]   # s3n:// as s3://
            folder = Storage(folder_uri, source.storage.storage_options)
            if not any(_inside(folder, r, undecided=False) for r in roots):   # when unsure, look it up
                roots.append(table_root_of(source.storage, p))
    return roots


def _check_target(source: TableLog, target: TableLog, roots: list[Storage]) -> None:
    for root in roots:
        if _inside(target.storage, root, undecided=True) or _inside(root, target.storage, undecided=True):
            whose = "the source" if root is source.storage else f"the table at {root.uri}, whose files the clone lists,"
            raise InvalidArgumentError(
                f"cannot clone {source.uri} to {target.uri}: it lies inside {whose} (or holds it), so a vacuum of "
                "the outer table would delete the inner one's files")
    if table_has_commits(target):
        raise TableAlreadyExistsError(f"cannot clone to {target.uri}: a Delta table already exists there")
    storage = target.storage
    if storage.is_local:
        busy = os.path.isdir(storage.root) and bool(os.listdir(storage.root))
        busy = busy or (os.path.exists(storage.root) and not os.path.isdir(storage.root))
    else:
        busy = bool(storage.walk_files(""))
    if busy:
        raise InvalidArgumentError(f"cannot clone to {target.uri}: the location is not empty; clone to a new "
                                   "or empty location")


def cloned_source_version(operation_parameters: dict[str, Any] | None, source: TableLog) -> int | None:
    """The source version a CLONE commit's ``operationParameters`` record when they name ``source``'s
    location (as :func:`clone_table` writes it), else None: a clone of another table, or unreadable."""
    params = operation_parameters or {}
    if params.get("source") != f"delta.`{table_uri_text(source.storage)}`":
        return None
    try:
        return int(params.get("sourceVersion"))
    except (TypeError, ValueError):
        return None


def clone_table(source: TableLog, target: TableLog, version: Any = None, timestamp: Any = None,
                **commit_kwargs: Any) -> CloneResult:
    """Shallow-clone ``source`` (at ``version`` / ``timestamp``, default the latest) to ``target``.

    ``commit_kwargs`` go to the :class:`~.transaction.Transaction` (``job``, ``user_metadata``,
    ``clock``...). Nothing is written when the source cannot be read at that version, the
    target is not empty, or the clone could not be committed.
    """
    snap: Snapshot = source.snapshot(version=version, timestamp=timestamp)
    source.require(snap, Operation.READ)
    files = file_actions(snap).values()
    _check_target(source, target, referenced_roots(source, files))
    extra = {}
    if target.commit_owner is not None:
        extra = {**owner_properties(target.commit_owner), ict.ENABLE_PROPERTY: "true"}
    metadata = cloned_metadata(snap.metadata, extra)
    adds = [absolute_add(source.storage, a) for a in files]
    size = sum(a.size for a in adds)
    metrics = {"sourceTableSize": size, "sourceNumOfFiles": len(adds), "numRemovedFiles": 0,
               "numCopiedFiles": 0, "removedFilesSize": 0, "copiedFilesSize": 0}
    commit_kwargs.setdefault("operation_parameters", {"source": f"delta.`{table_uri_text(source.storage)}`",
                                                      "sourceVersion": snap.version})
    commit_kwargs.setdefault("operation_metrics", metrics)
    commit_kwargs.setdefault("large_commit_info", True)     # readVersion -1, as Delta Spark's commitLarge writes it
    txn = Transaction(target, operation=CLONE_OPERATION, read_version=-1, **commit_kwargs)
    txn.mark_read("all")          # it replaces the (empty) target: not a blind append, as Delta Spark records
    txn.set_protocol(cloned_protocol(snap.protocol))
    txn.set_metadata(metadata)
    txn.add_files(adds)
    return CloneResult(commit_new_table(target, txn, metadata), snap.version, metrics)
