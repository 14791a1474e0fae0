"""Write-audit-publish across tables: the Airflow tasks around a multi-table transaction.

A DAG begins a transaction in the ``delta`` connection's ``SqlCatalog``
(:class:`DeltaBeginTransactionOperator`, the id goes to XCom), writer tasks stage their
table's commit into it (``DeltaTableHook.stage_write(transaction_id, ...)`` in a
``@task``), audit tasks read the staged view (``@task.delta_snapshot(transaction=...)``),
and :class:`DeltaPublishTransactionOperator` group-ratifies and publishes every table at
once. :class:`DeltaAbortTransactionOperator` (with ``trigger_rule="one_failed"`` after the
audit) gives the group up: nothing of it ever becomes visible, its staged commits and data
files are deleted. See ``dags_examples/delta_write_audit_publish.py``.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Sequence

from airflow.sdk import BaseOperator

from ..hooks import DeltaTableHook
from ..hooks.arguments import DeltaArgumentError, parse_transaction_id
from ..hooks.run_identity import run_task_key

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context


class _TransactionOperator(BaseOperator):
    template_fields: Sequence[str] = ("delta_conn_id",)
    ui_color = "#00add4"

    def __init__(self, *, delta_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delta_conn_id = delta_conn_id

    @property
    def hook(self) -> DeltaTableHook:
        return DeltaTableHook(delta_conn_id=self.delta_conn_id)


class _GivenTransactionOperator(_TransactionOperator):
    """An operator on an existing transaction: ``transaction_id`` (templated) is required."""

    template_fields: Sequence[str] = ("transaction_id", "delta_conn_id")

    def __init__(self, *, transaction_id: str, delta_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(delta_conn_id=delta_conn_id, **kwargs)
        self.transaction_id = transaction_id

    def given_transaction(self) -> str:
        """The rendered id; a missing one (``"None"``, ``""``) fails the task at once, nothing changed."""
        return parse_transaction_id(self.transaction_id, "transaction_id", required=True)


class DeltaBeginTransactionOperator(_TransactionOperator):
    """Record a multi-table transaction in the connection's catalog; returns its id (XCom).

    :param delta_conn_id: the ``delta`` connection whose ``catalog`` extra names the
        ``SqlCatalog`` (templated); required in practice: without a catalog the task fails
        with ``InvalidArgumentError``

    Returns the transaction's id (XCom ``return_value``): a string for the writer tasks'
    ``stage_write``, the audit's ``transaction=`` and the publish and abort tasks. The group
    is recorded as open, with no table yet; a run that never publishes or aborts it leaves
    only that record (nothing staged is visible).

    The begin is idempotent per task instance (``<dag_id>:<task_id>[<map_index>]@<run_id>``):
    a retry, or the task cleared and run again, returns the transaction its earlier try began
    (with whatever was staged into it, or its published versions), never a second group. Once
    that transaction is aborted (a failed audit), the next run of the task begins a new one.

    There is no ``transaction_id`` parameter: the begin task makes the id. Passing one is
    refused when the DAG is parsed (:class:`~..hooks.arguments.DeltaArgumentError`).
    """

    def __init__(self, *, delta_conn_id: str | None = None, **kwargs: Any) -> None:
        if "transaction_id" in kwargs:
            raise DeltaArgumentError(
                "DeltaBeginTransactionOperator takes no transaction_id: it begins the transaction and returns its "
                "id (the same id in every try of the task). Pass transaction_id to the writer, audit, publish and "
                "abort tasks instead, e.g. \"{{ ti.xcom_pull(task_ids='begin') }}\".")
        super().__init__(delta_conn_id=delta_conn_id, **kwargs)

    def execute(self, context: "Context") -> str:
        key = run_task_key(context, self)
        tx_id = self.hook.begin_transaction(key)
        self.log.info("Multi-table transaction %s (begun for %s)", tx_id, key)
        return tx_id


class DeltaPublishTransactionOperator(_GivenTransactionOperator):
    """Group-ratify and publish the transaction ``transaction_id`` (templated, e.g. from XCom);
    returns ``{table uri: version}``. Every table changes, or (on a conflict) none does.

    :param transaction_id: the id :class:`DeltaBeginTransactionOperator` returned (templated,
        e.g. ``"{{ ti.xcom_pull(task_ids='begin') }}"``)
    :param delta_conn_id: the ``delta`` connection whose ``catalog`` extra names the catalog
        the transaction was begun in (templated)

    Returns ``{table uri: version}`` (absolute URIs), the version each table's commit got (XCom
    ``return_value``). Commits that landed on a table since its write was staged move the
    group to the next free versions, by Delta's conflict rules; a conflicting one aborts the
    group (``ConcurrentModificationError``) and no table changes. An aborted group or an
    unknown id fails with ``GroupCommitError``, a group with no staged write with
    ``InvalidArgumentError``. A retry after the group was ratified returns the same versions
    and commits nothing again. A ``transaction_id`` that renders to nothing (``"None"``, ``""``:
    no XCom from the named begin task) fails at once with ``DeltaArgumentError``, without a
    retry, and no transaction changes.
    """

    def execute(self, context: "Context") -> dict[str, int]:
        tx_id = self.given_transaction()
        versions = self.hook.publish_transaction(tx_id)
        self.log.info("Published transaction %s: %s", tx_id, versions)
        return versions


class DeltaAbortTransactionOperator(_GivenTransactionOperator):
    """Abort the transaction ``transaction_id``: never ratified, its staged commits removed.

    :param transaction_id: the id :class:`DeltaBeginTransactionOperator` returned (templated)
    :param delta_conn_id: the ``delta`` connection whose ``catalog`` extra names the catalog
        the transaction was begun in (templated)

    Run it with ``trigger_rule="one_failed"`` after the writers and the audit. The catalog
    first marks the group aborted (it can never be ratified after that), then its staged
    commits and the data files they added are deleted; no table changes. Returns the group's
    state, ``"aborted"`` (XCom ``return_value``); aborting an aborted group again succeeds. A
    ratified group cannot be aborted: ``GroupCommitError``, and nothing is deleted. A
    ``transaction_id`` that renders to nothing fails with ``DeltaArgumentError`` (no retry) and
    nothing is deleted.
    """

    def execute(self, context: "Context") -> str:
        tx_id = self.given_transaction()
        state = self.hook.abort_transaction(tx_id)
        self.log.info("Aborted transaction %s", tx_id)
        return state
