"""A Spark write staged into a multi-table transaction of the catalog (write-audit-publish).

The driver writes the data files as for any commit (:func:`.commit.commit_dataframe`), but
hands the commit to the group (the participant's ``enlist``) and stages it: the staged commit
is written to ``_delta_log/_staged_commits`` and recorded as the group's member for this
table, nothing becomes visible until the publish task group-ratifies every member at once.

A retried task must not stage twice: the member records the writer (a try-independent key of
the task), and :meth:`GroupWrite.staged_version` finds the member an earlier try staged, before
any input is read. The table must be catalog-managed and exist (tables are created outside
groups). If staging fails after the data files were written, the files stay unreferenced
(vacuum removes them); an abort of the group deletes the data files of staged members.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..log import DeltaTable, InvalidArgumentError, SqlCatalog
from .commit import commit_dataframe

if TYPE_CHECKING:  # pragma: no cover
    from pyspark.sql import DataFrame


class GroupWrite:
    """The output table of a job as a participant of the catalog group ``transaction_id``.

    ``catalog`` is the output side's ``{"url": ...}`` secret (the delta connection's catalog).
    """

    def __init__(self, catalog: Any, storage_options: dict[str, Any] | None, transaction_id: str,
                 table_uri: str, writer: str | None):
        if not isinstance(catalog, dict) or not catalog.get("url"):
            raise InvalidArgumentError(
                f"staging into transaction {transaction_id} needs the output's catalog: give the delta connection "
                "a 'catalog' extra ({\"url\": \"<SQLAlchemy URL>\"})")
        self.catalog = SqlCatalog(catalog["url"], storage_options=storage_options)
        self.group = self.catalog.group(transaction_id)
        self.writer = writer
        self.table = DeltaTable(table_uri, storage_options=storage_options, catalog=self.catalog)

    def staged_version(self) -> int | None:
        """The version this writer already staged in the group (a retry: skip the job), else None."""
        return self.group.staged_version(self.table.uri, self.writer)

    def stage(self, df: "DataFrame", **commit_args: Any) -> int | None:
        """Write ``df`` and stage its commit into the group; the proposed version (None: the
        table already holds the job's ``app_id`` version, nothing was staged)."""
        participant = self.group.table(self.table.uri, self.writer)
        if commit_dataframe(df, self.table, enlist=participant.enlist, **commit_args) is None:
            return None
        self.group.stage()       # a concurrent try of this writer that staged first: its member is kept
        return self.staged_version()

    def dispose(self) -> None:
        self.catalog.dispose()
