"""``DeltaCheckpointOperator``: write a checkpoint, then optionally clean up old log files.

Checkpoints bound how much of the log every reader (and every sensor poke that
opens a snapshot) has to replay. On a managed-commit table a checkpoint may only
cover backfilled commits, so the default version is the latest backfilled one.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from .base import DeltaBaseOperator, optional_int

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


class DeltaCheckpointOperator(DeltaBaseOperator):
    """Checkpoint a table at ``version`` (default: latest backfilled), single or multi-part.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param version: version to checkpoint (templated); None means the latest backfilled version
    :param parts: number of checkpoint parts (templated); None or 1 writes a single file
    :param cleanup: afterwards delete log files older than the retention (metadata cleanup)
    :param delta_conn_id: ``delta`` connection

    Returns ``{"table_uri", "version", "parts", "cleanup"}`` where ``cleanup`` is the
    metadata cleanup report (or None when not asked for).
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "version", "parts")

    def __init__(self, *, table_uri: str, version: int | str | None = None, parts: int | str | None = None,
                 cleanup: bool = False, **kwargs: Any) -> None:
        super().__init__(table_uri=table_uri, **kwargs)
        self.version = version
        self.parts = parts
        self.cleanup = cleanup

    def execute(self, context: "Context") -> dict[str, Any]:
        version = optional_int(self.version, "version")
        parts = optional_int(self.parts, "parts")
        table = self.hook.get_table(self.table_uri)
        written = self.hook.checkpoint(self.table_uri, version=version, parts=parts)
        self.log.info("Wrote a %s checkpoint of %s at version %s",
                      f"{parts}-part" if parts and parts > 1 else "single-file", table.uri, written)
        cleanup = self.hook.cleanup_metadata(self.table_uri) if self.cleanup else None
        if cleanup is not None:
            self.log.info("Metadata cleanup of %s: %s", table.uri, _summary(cleanup))
        result = {"table_uri": table.uri, "version": int(written), "parts": parts or 1, "cleanup": cleanup}
        self.emit_asset_events(context, {"version": int(written), "checkpoint_version": int(written)})
        return result


def _summary(report: dict[str, Any]) -> str:
    return ", ".join(f"{k}={len(v) if isinstance(v, (list, tuple)) else v}" for k, v in report.items())
