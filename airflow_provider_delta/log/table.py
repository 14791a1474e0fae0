"""``DeltaTable``: the front object of the log package.

It is a :class:`~.table_log.TableLog` (where the table lives, who serves its newest
commits, every read question) with the writes and maintenance added. Each method
delegates to the module that holds the logic, so this file stays a map of the API:
creation (:mod:`.create`), transactions (:mod:`.transaction`), data writes
(:mod:`.writer`), checkpoints (:mod:`.checkpoint`), log compaction
(:mod:`.compaction`), metadata cleanup (:mod:`.cleanup`), vacuum (:mod:`.vacuum`),
OPTIMIZE (:mod:`.optimize`),
in-commit timestamps and managed commits (:mod:`.transaction`, :mod:`.managed`).
Those modules are reached through :mod:`.operations`, which imports each on first use:
opening a table to read it loads only the read engine.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from . import operations as ops
from .read.table_log import TableLog

if TYPE_CHECKING:
    import pyarrow as pa

    from .base.commit_owner.base import CommitOwner
    from .base.commit_source import CommitSource
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
    @classmethod
    def create(cls, uri: str, schema: "pa.Schema", partition_by: Iterable[str] = (),
               properties: dict[str, str] | None = None, name: str | None = None,
               description: str | None = None, commit_owner: CommitSource | None = None,
               storage_options: dict[str, Any] | None = None, single_writer: bool = False,
               conditional_put: bool | None = None, **commit_kwargs: Any) -> "DeltaTable":
        """Create a new table (version 0); fails with TableAlreadyExistsError if one exists."""
        table = cls(uri, storage_options=storage_options, commit_owner=commit_owner,
                    single_writer=single_writer, conditional_put=conditional_put)
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
