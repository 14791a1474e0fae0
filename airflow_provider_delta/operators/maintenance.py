"""Maintenance operators: metadata cleanup and vacuum, both dry runs unless told otherwise.

Both delete files, and a wrong retention deletes history readers still need (time
travel, running jobs). So the default only reports what would go; set
``dry_run=False`` once the report looks right. Every argument is templated, and the
flags that decide what is deleted (``dry_run``, ``enforce_retention``) are parsed
strictly before the table is touched: a template that renders to anything but a clear
true or false (``"None"`` from a missing conf key, say) fails the task without retry
and deletes nothing (:func:`~..hooks.arguments.flag`).

The XCom keeps the report's counts and the first :data:`~..hooks.payloads.MAX_LISTED`
paths of each list (``<list>_truncated`` says whether more were left out); the task
log names every path.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..hooks.payloads import MAX_LISTED, capped
from ..hooks.arguments import check_flags, flag, optional_hours
from .base import DeltaBaseOperator, job_info

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


def _count(report: dict[str, Any]) -> str:
    return ", ".join(f"{k}={len(v)}" for k, v in report.items() if isinstance(v, (list, tuple))) or str(report)


def bounded_report(report: dict[str, Any], log: Any, what: str) -> dict[str, Any]:
    """``report`` with every list cut to its first MAX_LISTED items, plus ``<key>_count`` and
    ``<key>_truncated``; each list in full goes to the task log first."""
    out: dict[str, Any] = {}
    for key, value in report.items():
        if isinstance(value, (list, tuple)):
            for item in value:
                log.info("%s %s: %s", what, key, item)
            cut = capped(list(value), MAX_LISTED)
            out[key] = cut["items"]
            out[f"{key}_count"] = cut["count"]
            out[f"{key}_truncated"] = cut["truncated"]
        else:
            out[key] = value
    return out


def _deleted(report: dict[str, Any]) -> int:
    """How many files a cleanup report (``deleted``) or a vacuum report (``num_files_deleted``) names."""
    if "num_files_deleted" in report:
        return int(report["num_files_deleted"])
    return len(report.get("deleted") or [])


class _DryRunLineage:
    """A dry run only reads the table: it is this task's lineage input, a real run its output.

    Asset events follow the same line: maintenance adds no table version, so a dry run, or
    a real run that deleted nothing, emits no event on the task's outlets (a DAG scheduled
    on the table would otherwise start for nothing); a real run that deleted files emits
    one with ``committed: false`` and what it did under ``maintenance``.
    """

    #: the parsed dry_run of this try (None before execute parsed it)
    _dry_run: bool | None = None

    @property
    def lineage_role(self) -> str:
        return "output" if self._dry_run is False else "input"

    def _report_deletions(self, context: "Context", what: str, report: dict[str, Any], dry_run: bool,
                          version: int) -> None:
        deleted = _deleted(report)
        self.record_lineage(version)  # type: ignore[attr-defined]
        if dry_run or not deleted:
            self.drop_asset_events(f"{what} {'was a dry run' if dry_run else 'deleted nothing'}")  # type: ignore[attr-defined]
            return
        self.emit_asset_events(context, {"version": version, "committed": False,  # type: ignore[attr-defined]
                                         "maintenance": what, "deleted_files": deleted})


class DeltaMetadataCleanupOperator(_DryRunLineage, DeltaBaseOperator):
    """Delete expired log files (commits and checkpoints) by Delta Spark's rules.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param retention_hours: keep log files younger than this; default: the table's
        ``delta.logRetentionDuration`` (30 days)
    :param dry_run: only report what would be deleted (default True); a bool or true/false/1/0/yes/no
    :param delta_conn_id: ``delta`` connection

    All arguments are templated. Returns the log layer's cleanup report (bounded, see the
    module docstring) plus ``table_uri``, ``dry_run`` and ``version``.
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "retention_hours", "dry_run")

    def __init__(self, *, table_uri: str, retention_hours: float | str | None = None, dry_run: bool = True,
                 **kwargs: Any) -> None:
        check_flags(dry_run=dry_run)
        super().__init__(table_uri=table_uri, **kwargs)
        self.retention_hours = retention_hours
        self.dry_run = dry_run

    def execute(self, context: "Context") -> dict[str, Any]:
        self._dry_run = flag(self.dry_run, "dry_run", deletes=True)
        kwargs: dict[str, Any] = {"dry_run": self._dry_run}
        hours = optional_hours(self.retention_hours, "retention_hours")
        if hours is not None:
            kwargs["retention_ms"] = int(round(hours * 3_600_000))
        report = dict(self.hook.cleanup_metadata(self.table_uri, **kwargs) or {})
        table = self.hook.get_table(self.table_uri)
        version = table.latest_version()
        self.log.info("Metadata cleanup of %s (dry_run=%s): %s", table.uri, kwargs["dry_run"], _count(report))
        result = {**bounded_report(report, self.log, "metadata cleanup"), "table_uri": table.uri,
                  "dry_run": kwargs["dry_run"], "version": version}
        self._report_deletions(context, "metadata cleanup", report, kwargs["dry_run"], version)
        return result


class DeltaVacuumOperator(_DryRunLineage, DeltaBaseOperator):
    """Delete data files no version within the retention references.

    :param table_uri: table location (absolute, or relative to the connection's base URI)
    :param retention_hours: keep unreferenced files younger than this; default:
        the table's ``delta.deletedFileRetentionDuration`` (7 days)
    :param dry_run: only report what would be deleted (default True); a bool or true/false/1/0/yes/no
    :param enforce_retention: refuse a retention below the table's minimum (default True); same spellings
    :param delta_conn_id: ``delta`` connection

    All arguments are templated. Returns the log layer's vacuum report (bounded: ``files_deleted``
    lists the first paths, ``files_deleted_count`` / ``num_files_deleted`` count them all) plus
    ``table_uri``, ``dry_run`` and ``version`` (the table version after vacuum). Vacuum commits
    nothing, so this task's ``job`` (dag, task, run, try) goes into the vacuum log line and the
    report's ``job``.
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "retention_hours", "dry_run",
                                      "enforce_retention")

    def __init__(self, *, table_uri: str, retention_hours: float | str | None = None, dry_run: bool = True,
                 enforce_retention: bool = True, **kwargs: Any) -> None:
        check_flags(dry_run=dry_run, enforce_retention=enforce_retention)
        super().__init__(table_uri=table_uri, **kwargs)
        self.retention_hours = retention_hours
        self.dry_run = dry_run
        self.enforce_retention = enforce_retention

    def execute(self, context: "Context") -> dict[str, Any]:
        dry_run = self._dry_run = flag(self.dry_run, "dry_run", deletes=True)
        enforce = flag(self.enforce_retention, "enforce_retention", deletes=True)
        hours = optional_hours(self.retention_hours, "retention_hours")
        report = dict(self.hook.vacuum(self.table_uri, retention_hours=hours, dry_run=dry_run,
                                       enforce_retention=enforce, job=job_info(context)) or {})
        table = self.hook.get_table(self.table_uri)
        version = table.latest_version()
        self.log.info("Vacuum of %s (dry_run=%s): %s", table.uri, dry_run, _count(report))
        result = {**bounded_report(report, self.log, "vacuum"), "table_uri": table.uri, "dry_run": dry_run,
                  "version": version}
        self._report_deletions(context, "vacuum", report, dry_run, version)
        return result
