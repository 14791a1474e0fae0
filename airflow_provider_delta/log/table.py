"""``DeltaTable``: the front object of the log package.

It is a :class:`~.table_log.TableLog` (where the table lives, who serves its newest
commits, every read question) with the writes and maintenance added. Each method
delegates to the module that holds the logic, so this file stays a map of the API:
creation (:mod:`.create`), transactions (:mod:`.transaction`), data writes
(:mod:`.writer`), checkpoints (:mod:`.checkpoint`), log compaction
(:mod:`.compaction`), metadata cleanup (:mod:`.cleanup`), vacuum (:mod:`.vacuum`),
restore (:mod:`.restore`), shallow clone (:mod:`.clone`), OPTIMIZE (:mod:`.optimize`),
in-commit timestamps and managed commits (:mod:`.transaction`, :mod:`.managed`).
Those modules are reached through :mod:`.operations`, which imports each on first use:
opening a table to read it loads only the read engine.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from . import operations as ops
from .base.errors import InvalidArgumentError
from .base.storage import normalize_uri
from .read.table_log import TableLog

if TYPE_CHECKING:
    import pyarrow as pa

    from .base.commit_owner.base import CommitOwner
    from .base.commit_source import CommitSource
    from .catalogs.sql_catalog import SqlCatalog
    from .read.snapshot import Snapshot
    from .write.transaction import Transaction


class DeltaTable(TableLog):
    """A Delta table at ``uri`` (local path, ``file://``, ``memory://`` or any fsspec URL).

    ``commit_owner`` makes reads see un-backfilled commits of a managed-commit table
    and routes commits through the owner. ``single_writer`` permits commits on
    storage without atomic put-if-absent (only safe with exactly one writer);
    ``conditional_put`` overrides whether the backend's ``open(mode="xb")`` is trusted
    as an atomic create (on by default for s3, gcs and azure).
    """

    # ----------------------------------------------------------------- writes
    def __init__(self, uri: str, storage_options: dict[str, Any] | None = None,
                 commit_owner: CommitSource | None = None, single_writer: bool = False,
                 conditional_put: bool | None = None, catalog: "SqlCatalog | None" = None):
        if catalog is not None:
            if commit_owner is not None:
                raise InvalidArgumentError("pass commit_owner or catalog, not both")
            commit_owner = catalog.source(uri, storage_options)
        super().__init__(uri, storage_options, commit_owner, single_writer, conditional_put)
        #: the catalog of a catalog-managed table (None otherwise)
        self.catalog = catalog

    def snapshot(self, version: int | None = None, timestamp: Any = None, allow_after_latest: bool = False,
                 transaction: str | None = None) -> "Snapshot":
        """The table at ``version``, ``timestamp`` or the latest; with ``transaction`` (a multi-table
        transaction id of the table's catalog) the table as that staged group leaves it: the audit view."""
        if transaction is None:
            return super().snapshot(version, timestamp, allow_after_latest)
        if version is not None or timestamp is not None:
            raise InvalidArgumentError("pass transaction alone, not with version or timestamp")
        if self.catalog is None:
            raise InvalidArgumentError("snapshot(transaction=...) needs the table opened with its catalog: "
                                       "DeltaTable(uri, catalog=...)")
        return self.catalog.group_snapshot(self, transaction)

    @classmethod
    def create(cls, uri: str, schema: "pa.Schema", partition_by: Iterable[str] = (),
               properties: dict[str, str] | None = None, name: str | None = None,
               description: str | None = None, commit_owner: CommitSource | None = None,
               storage_options: dict[str, Any] | None = None, single_writer: bool = False,
               conditional_put: bool | None = None, catalog: "SqlCatalog | None" = None,
               **commit_kwargs: Any) -> "DeltaTable":
        """Create a new table (version 0); fails with TableAlreadyExistsError if one exists.

        With ``catalog`` the table is catalog-managed (``catalogManaged``, in-commit timestamps,
        ``multiTableTransaction-dev``) and registered in that catalog.
        """
        table = cls(uri, storage_options=storage_options, commit_owner=commit_owner,
                    single_writer=single_writer, conditional_put=conditional_put, catalog=catalog)
        ops.create.create_table(table, schema, partition_by=partition_by, properties=properties, name=name,
                                description=description, **commit_kwargs)
        return table

    def transaction(self, operation: str = "WRITE", **kwargs: Any) -> Transaction:
        """An optimistic transaction; use as a context manager, it commits on a clean exit."""
        return ops.transaction.Transaction(self, operation=operation, **kwargs)

    def write(self, data: "pa.Table", mode: str = "append", partition_by: Iterable[str] | None = None,
              **kwargs: Any) -> int:
        """Write a (small) Arrow table as parquet files and commit it; returns the new version."""
        return ops.writer.write_table(self, data, mode=mode, partition_by=partition_by, **kwargs)

    # ------------------------------------------------------------- change feed
    def changes(self, start_version: Any = None, end_version: Any = None, *,
                columns: Iterable[str] | None = None, start_timestamp: Any = None,
                end_timestamp: Any = None) -> "pa.Table":
        """The change data feed of versions ``start_version``..``end_version`` (default: the latest).

        Bounds are versions (int) or times (datetime, ISO string; epoch ms through
        ``start_timestamp`` / ``end_timestamp``). Returns the changed rows plus
        ``_change_type``, ``_commit_version`` and ``_commit_timestamp`` (see :mod:`.change_feed`).
        """
        return ops.change_feed.read_changes(self, start_version, end_version, columns,
                                            start_timestamp=start_timestamp, end_timestamp=end_timestamp)

    def changes_since(self, processed_version: int | None, end_version: Any = None, *,
                      columns: Iterable[str] | None = None) -> "pa.Table":
        """The changes after ``processed_version`` (None: from version 0) up to ``end_version``.

        Empty (with the change-feed columns) when nothing was committed after it: the
        incremental step of a pipeline that records how far it got.
        """
        return ops.change_feed.read_changes_after(self, processed_version, end_version, columns)

    # ------------------------------------------------------------ maintenance
    def checkpoint(self, version: int | None = None, parts: int | None = None, *, v2: bool | None = None,
                   v2_format: str = "parquet", sidecars: int = 1) -> int:
        """Write a checkpoint; returns its version.

        Classic (multi-part if ``parts`` > 1) on most tables; on tables with the
        ``v2Checkpoint`` feature a UUID-named V2 checkpoint (``v2_format`` parquet or json)
        whose file actions are in ``sidecars`` files, unless ``v2=False``.
        """
        return ops.checkpoint.write_checkpoint(self, version=version, parts=parts, v2=v2, v2_format=v2_format,
                                               sidecars=sidecars)

    def compact_log(self, start: int, end: int) -> str:
        """Write the log compaction file of backfilled commits ``start``..``end``; returns its path."""
        return ops.compaction.write_log_compaction(self, start, end)

    def cleanup_metadata(self, **kwargs: Any) -> dict[str, Any]:
        """Delete expired log files by Delta Spark's rules; returns what was deleted."""
        return ops.cleanup.cleanup_metadata(self, **kwargs)

    def vacuum(self, retention_hours: float | None = None, dry_run: bool = True,
               enforce_retention: bool = True, **kwargs: Any) -> dict[str, Any]:
        """Delete unreferenced data files older than the retention; dry run by default."""
        return ops.vacuum.vacuum(self, retention_hours=retention_hours, dry_run=dry_run,
                                 enforce_retention=enforce_retention, **kwargs)

    def restore(self, version: int | None = None, *, timestamp: Any = None, **kwargs: Any) -> int:
        """Make the table's files those of ``version`` (or of the version as of ``timestamp``) again,
        in a new commit; returns the table's version afterwards (unchanged when ``version`` is the latest).

        Delta Spark's RESTORE: its metadata, the protocol never downgraded, ``dataChange=true``;
        refused, writing nothing, when a file of that version is gone. Concurrent blind appends are
        kept when the restore leaves the metadata as it is (see :mod:`.restore`); other concurrent changes fail with ConcurrentModificationError.
        ``kwargs``: ``enforce_retention``, ``expected_version`` (a rollback's guard: restore only if
        that is still the latest version, else UnexpectedVersionError) and the transaction's
        (``job``, ``user_metadata``, ...).
        """
        return ops.restore.restore_table(self, version, timestamp, **kwargs).version

    def clone(self, target_uri: str, *, version: int | None = None, timestamp: Any = None,
              storage_options: dict[str, Any] | None = None, commit_owner: CommitSource | None = None,
              **kwargs: Any) -> "DeltaTable":
        """Shallow-clone this table (at ``version`` / ``timestamp``, default the latest) to the empty
        location ``target_uri``; returns the clone.

        The clone lists this table's files by absolute URI and has its own history from a ``CLONE``
        commit (see :mod:`.clone`). ``storage_options`` default to this table's when the target is on
        the same kind of store. A managed-commit source gives a filesystem clone unless ``commit_owner``
        is given. ``kwargs`` go to the transaction (``job``, ``user_metadata``, ...).
        """
        if storage_options is None and normalize_uri(target_uri)[0] == self.storage.protocol:
            storage_options = self.storage.storage_options
        target = type(self)(target_uri, storage_options=storage_options, commit_owner=commit_owner)
        ops.clone.clone_table(self, target, version=version, timestamp=timestamp, **kwargs)
        return target

    def optimize(self, *, partition_filter: Any = None, target_size: int | str | None = None,
                 min_file_size: int | str | None = None, z_order_by: Iterable[str] | str | None = None,
                 max_concurrent: int | None = None, engine: Any = "local", **kwargs: Any) -> dict[str, Any]:
        """OPTIMIZE: compact small files per partition, Z-order, rewrite files without deleted rows.

        ``partition_filter``: ``[(column, op, value), ...]`` on partition columns. ``target_size``:
        bytes of the new files (default ``delta.targetFileSize``, else 1 GiB); ``min_file_size``:
        files below it are compacted (default: the target). ``z_order_by``: columns to cluster
        by on a Z-order curve (every file of a partition is rewritten). ``purge=True`` is
        ``REORG TABLE ... APPLY (PURGE)``: only files with deletion vectors, rewritten without
        their deleted rows. One commit, every action ``dataChange=false``. Returns the metrics,
        ``version`` None when there was nothing to do. See :mod:`.optimize`.
        """
        return ops.optimize.optimize(self, partition_filter=partition_filter, target_size=target_size,
                                     min_file_size=min_file_size, z_order_by=z_order_by,
                                     max_concurrent=max_concurrent, engine=engine, **kwargs)

    def enable_in_commit_timestamps(self, **kwargs: Any) -> int:
        """Turn on in-commit timestamps on an existing table; returns the enabling version."""
        return ops.transaction.enable_in_commit_timestamps(self, **kwargs)

    # -------------------------------------------------------- managed commits
    def backfill(self, version: int | None = None) -> dict[str, Any]:
        """Ask the commit owner to backfill ratified commits up to ``version`` (default: all)."""
        return ops.managed.backfill(self, version)

    def enable_managed_commits(self, owner: CommitOwner, **kwargs: Any) -> int:
        """Convert a filesystem table into a managed-commit table owned by ``owner``."""
        return ops.managed.enable_managed_commits(self, owner, **kwargs)

    def disable_managed_commits(self, **kwargs: Any) -> int:
        """Convert a managed-commit table back to filesystem commits."""
        return ops.managed.disable_managed_commits(self, **kwargs)
