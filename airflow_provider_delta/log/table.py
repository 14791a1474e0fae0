"""``DeltaTable``: the entry point of the log layer.

A thin facade: it owns the :class:`Storage` and the optional commit owner, and
delegates each operation to the module that holds its logic (segment/snapshot/
history for reads, transaction/writer/checkpoint/maintenance for writes,
managed for managed commits). Keeping the facade thin keeps those modules small
and separately testable.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

from .errors import InvalidArgumentError
from .storage import Storage

if TYPE_CHECKING:  # pragma: no cover
    import pyarrow as pa
    from .snapshot import Snapshot
    from .transaction import Transaction


def _version_arg(value: Any, name: str = "version") -> int:
    """A version/limit argument as an int; anything else is an InvalidArgumentError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    return value


class DeltaTable:
    """A Delta table at ``uri`` (local path, ``file://``, ``memory://`` or any fsspec URL).

    ``commit_owner`` makes reads see un-backfilled commits of a managed-commit table
    and routes commits through the owner. ``single_writer`` permits commits on
    storage without atomic put-if-absent (only safe with exactly one writer);
    ``conditional_put`` overrides whether the backend's ``open(mode="xb")`` is trusted
    as an atomic create (on by default for s3, gcs and azure).
    """

    def __init__(self, uri: str, storage_options: dict[str, Any] | None = None,
                 commit_owner: Any = None, single_writer: bool = False,
                 conditional_put: bool | None = None):
        if not uri:
            raise InvalidArgumentError("a table URI is required")
        self.storage = Storage(uri, storage_options, single_writer=single_writer,
                               conditional_put=conditional_put)
        self.commit_owner = commit_owner
        self._snapshot_cache: "Snapshot | None" = None

    def __repr__(self) -> str:
        return f"DeltaTable({self.uri!r})"

    @property
    def uri(self) -> str:
        return self.storage.uri

    # ------------------------------------------------------------------ reads
    def snapshot(self, version: int | None = None, timestamp: Any = None,
                 allow_after_latest: bool = False) -> "Snapshot":
        """The table state at ``version``, at ``timestamp`` (epoch ms, datetime or ISO string), or the latest.

        The latest snapshot is refreshed incrementally from the previous one this object
        loaded, reading only commits newer than it. See :meth:`version_at` for how a
        timestamp is resolved.
        """
        from .snapshot import load_snapshot
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("pass either version or timestamp, not both")
        if version is not None:
            version = _version_arg(version)
        if timestamp is not None:
            version = self.version_at(timestamp, allow_after_latest=allow_after_latest)
        if version is None and self._snapshot_cache is not None:
            snap = self._snapshot_cache.update()
        else:
            snap = load_snapshot(self, version)
        if version is None:
            self._snapshot_cache = snap
        return snap

    def latest_version(self) -> int:
        """The newest version, from a directory listing (plus the commit owner's tail): no file is read."""
        from .segment import latest_version
        return latest_version(self)

    def version_at(self, timestamp: Any, allow_after_latest: bool = False) -> int:
        """The newest version whose commit timestamp is at or before ``timestamp``.

        A time before the earliest reconstructable version raises TimestampOutOfRangeError;
        so does a time after the latest commit unless ``allow_after_latest`` (Delta Spark's rules).
        """
        from .history import version_at
        return version_at(self, timestamp, allow_after_latest=allow_after_latest)

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Commits newest first, with version, timestamp and commitInfo fields."""
        from .history import history
        return history(self, None if limit is None else _version_arg(limit, "limit"))

    def read_commit(self, version: int) -> list[dict[str, Any]]:
        """The actions of one commit as parsed JSON dicts (un-backfilled ones via the owner)."""
        from .segment import read_commit
        return read_commit(self, _version_arg(version))

    # ----------------------------------------------------------------- writes
    @classmethod
    def create(cls, uri: str, schema: "pa.Schema", partition_by: Iterable[str] = (),
               properties: dict[str, str] | None = None, name: str | None = None,
               description: str | None = None, commit_owner: Any = None,
               storage_options: dict[str, Any] | None = None, single_writer: bool = False,
               conditional_put: bool | None = None, **commit_kwargs: Any) -> "DeltaTable":
        """Create a new table (version 0); fails with TableAlreadyExistsError if one exists."""
        from .create import create_table
        return create_table(cls, uri, schema, partition_by=partition_by, properties=properties,
                            name=name, description=description, commit_owner=commit_owner,
                            storage_options=storage_options, single_writer=single_writer,
                            conditional_put=conditional_put, **commit_kwargs)

    def transaction(self, operation: str = "WRITE", **kwargs: Any) -> "Transaction":
        """An optimistic transaction; use as a context manager, it commits on a clean exit."""
        from .transaction import Transaction
        return Transaction(self, operation=operation, **kwargs)

    def write(self, data: "pa.Table", mode: str = "append", partition_by: Iterable[str] | None = None,
              **kwargs: Any) -> int:
        """Write a (small) Arrow table as parquet files and commit them; returns the new version."""
        from .writer import write_table
        return write_table(self, data, mode=mode, partition_by=partition_by, **kwargs)

    def checkpoint(self, version: int | None = None, parts: int | None = None) -> int:
        """Write a classic checkpoint (multi-part if ``parts`` > 1); returns its version."""
        from .checkpoint import write_checkpoint
        return write_checkpoint(self, version=version, parts=parts)

    def compact_log(self, start: int, end: int) -> str:
        """Write the log compaction file of backfilled commits ``start``..``end``; returns its path."""
        from .compaction import write_log_compaction
        return write_log_compaction(self, start, end)

    def cleanup_metadata(self, **kwargs: Any) -> dict[str, Any]:
        """Delete expired log files by Delta Spark's rules; returns what was deleted."""
        from .maintenance import cleanup_metadata
        return cleanup_metadata(self, **kwargs)

    def vacuum(self, retention_hours: float | None = None, dry_run: bool = True,
               enforce_retention: bool = True, **kwargs: Any) -> dict[str, Any]:
        """Delete unreferenced data files older than the retention; dry run by default."""
        from .maintenance import vacuum
        return vacuum(self, retention_hours=retention_hours, dry_run=dry_run,
                      enforce_retention=enforce_retention, **kwargs)

    def enable_in_commit_timestamps(self, **kwargs: Any) -> int:
        """Turn on in-commit timestamps on an existing table; returns the enabling version."""
        from .transaction import enable_in_commit_timestamps
        return enable_in_commit_timestamps(self, **kwargs)

    # -------------------------------------------------------- managed commits
    def backfill(self, version: int | None = None) -> dict[str, Any]:
        """Ask the commit owner to backfill ratified commits up to ``version`` (default: all)."""
        from .managed import backfill
        return backfill(self, version)

    def enable_managed_commits(self, owner: Any, **kwargs: Any) -> int:
        """Convert a filesystem table into a managed-commit table owned by ``owner``."""
        from .managed import enable_managed_commits
        return enable_managed_commits(self, owner, **kwargs)

    def disable_managed_commits(self, **kwargs: Any) -> int:
        """Convert a managed-commit table back to filesystem commits."""
        from .managed import disable_managed_commits
        return disable_managed_commits(self, **kwargs)
