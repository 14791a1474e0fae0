"""``DeltaCloneOperator``: a shallow clone of a table (Delta Spark's SHALLOW CLONE), e.g. a test copy.

The clone is a new table whose files are the source's, referenced where they are: it
costs one commit, whatever the size of the source. Its history, writes, vacuum and
cleanup are its own and never touch the source's files. The task's table (``table_uri``)
is the clone, which the task creates; the source is its lineage input.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from ..hooks.arguments import refused_without_retry
from ..hooks.delta_table import DeltaTableHook
from ..log import CloneResult, DeltaError, TableAlreadyExistsError, clone_table, cloned_source_version
from .base import DeltaVersionAsOfOperator, earlier_try_commit, job_info, metrics_of

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


class DeltaCloneOperator(DeltaVersionAsOfOperator):
    """Shallow-clone ``source_uri`` (at ``version`` / ``timestamp``, default the latest) to ``table_uri``.

    :param source_uri: the table to clone (templated; absolute, or relative to ``source_conn_id``'s base URI)
    :param table_uri: where the clone is created (templated); the location must be new or empty
    :param version: clone this version of the source (templated)
    :param timestamp: or the version as of this time (templated); neither: the latest
    :param source_conn_id: ``delta`` connection of the source (default: ``delta_conn_id``)
    :param delta_conn_id: ``delta`` connection of the clone: its storage options, and its commit
        owner if it has one (the clone is then a managed-commit table; otherwise a filesystem
        table, also when the source is managed)

    Returns ``{"table_uri", "version", "source_uri", "source_version", "metrics"}``: the clone's
    URI and version (0), the source and the version cloned, and Delta Spark's CLONE metrics. The
    asset event (on the clone's outlets) says ``operation: "CLONE"`` and the source version.
    """

    template_fields: Sequence[str] = ("table_uri", "delta_conn_id", "source_uri", "source_conn_id", "version",
                                      "timestamp")

    def __init__(self, *, source_uri: str, table_uri: str, version: int | str | None = None, timestamp: Any = None,
                 source_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(table_uri=table_uri, version=version, timestamp=timestamp, **kwargs)
        self.source_uri = source_uri
        self.source_conn_id = source_conn_id

    def execute(self, context: "Context") -> dict[str, Any]:
        version, timestamp = self.version_as_of()
        earlier = False         # the clone is an earlier try's of this task run
        source_hook = DeltaTableHook(delta_conn_id=self.source_conn_id) if self.source_conn_id else self.hook
        source = source_hook.get_table(self.source_uri)
        target = self.hook.get_table(self.table_uri)
        try:
            with refused_without_retry("CLONE refused its arguments"):     # a target inside the source...
                result = clone_table(source, target, version, timestamp, job=job_info(context))
        except TableAlreadyExistsError:
            result = self._earlier_try_clone(source, target, version, timestamp, context)
            if result is None:
                raise
            earlier = True
        self.log.info("Cloned %s at version %d to %s (%d files, shallow)", source.uri, result.source_version,
                      target.uri, result.metrics["sourceNumOfFiles"])
        self.record_lineage(result.version, [(source.uri, result.source_version)])
        event = {"version": result.version, "committed": True, "operation": "CLONE", "source_uri": source.uri,
                 "source_version": result.source_version}
        if earlier:
            self.announce_earlier_try_commit(context, event, f"the clone {target.uri}")
        else:
            self.emit_asset_events(context, event)
        return {"table_uri": target.uri, "version": result.version, "source_uri": source.uri,
                "source_version": result.source_version, "metrics": dict(result.metrics)}

    def _earlier_try_clone(self, source: Any, target: Any, version: int | None, timestamp: Any,
                           context: "Context") -> CloneResult | None:
        """The target exists: when its version 0 is this task run's CLONE of this source at the version
        this try asks for (an earlier try committed it, then its worker died before reporting), the
        clone is done: its result; else None (refuse)."""
        info = earlier_try_commit(target, 0, "CLONE", context)
        if info is None:
            return None
        source_version = cloned_source_version(info.get("operationParameters"), source)
        if source_version is None:
            return None                     # that try cloned another table (the source rendered otherwise)
        if version is None and timestamp is not None:
            try:
                version = source.version_at(timestamp)
            except DeltaError:
                return None                 # cannot tell which version this try asks for: refuse
        if version is not None and source_version != version:
            return None                     # that try cloned another version than this one asks for
        self.log.info("%s is this task run's clone, committed by try %s, which did not report it or whose run was "
                      "cleared", target.uri, (info.get("job") or {}).get("try_number"))
        return CloneResult(version=0, source_version=source_version, metrics=metrics_of(info))
