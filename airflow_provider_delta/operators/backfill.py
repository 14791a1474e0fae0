"""``DeltaBackfillOperator``: copy a managed-commit table's ratified commits into ``_delta_log``.

On a managed-commit table, recent commits live in ``_delta_log/_commits`` until the
commit owner backfills them as ``<version>.json``; readers that only list the file
system (and checkpoints) need them there. On a filesystem table every commit is
already in ``_delta_log``, so the operator reports that and changes nothing.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..hooks.arguments import optional_int
from .base import DeltaBaseOperator

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


class DeltaBackfillOperator(DeltaBaseOperator):
    """Backfill a managed-commit table up to ``version`` (default: its latest version).

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param version: backfill up to this version (templated); None means the latest
    :param delta_conn_id: ``delta`` connection; its ``commit_owner`` extra names the owner

    Returns the log's backfill report plus ``table_uri`` and ``version`` (the latest
    version): ``managed``, ``from``/``to`` and ``backfilled`` (the versions this run
    copied; empty when there was nothing to do, and always on a filesystem table, where
    ``managed`` is False), ``backfilled_version`` and ``latest_version``.
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "version")

    def __init__(self, *, table_uri: str, version: int | str | None = None, **kwargs: Any) -> None:
        super().__init__(table_uri=table_uri, **kwargs)
        self.version = version

    def execute(self, context: "Context") -> dict[str, Any]:
        version = optional_int(self.version, "version")
        table = self.hook.get_table(self.table_uri)
        report = dict(self.hook.backfill(self.table_uri, version) or {})
        latest = report.get("latest_version")
        result = {**report, "table_uri": table.uri,
                  "version": int(latest) if latest is not None else table.latest_version()}
        if report.get("managed"):
            self.log.info("Backfilled %s: versions %s (backfilled up to %s, latest %s)", table.uri,
                          report.get("backfilled"), report.get("backfilled_version"), latest)
        else:
            self.log.info("%s is a filesystem table: every commit is already in _delta_log, nothing to "
                          "backfill (latest version %s)", table.uri, result["version"])
        backfilled = list(report.get("backfilled") or [])
        if backfilled:      # versions newly visible in _delta_log (to readers without the commit owner)
            self.emit_asset_events(context, {"version": result["version"], "backfilled": backfilled})
        else:
            self.record_lineage(result["version"])
            self.drop_asset_events("nothing was backfilled")
        return result
