"""``@task.delta_snapshot``: a Python task handed a pinned snapshot of a Delta table.

For small steps that need a table's rows or metadata but not Spark: a check, a
count, a small export. The decorator resolves the version once (``version``, or the
version as of ``timestamp``, else the latest), opens that snapshot through the
``delta`` connection and passes it as the function's ``snapshot`` argument::

    @task.delta_snapshot(table_uri="/data/orders", timestamp="{{ data_interval_end }}")
    def count_orders(snapshot):
        return snapshot.to_pyarrow(columns=["order_id"]).num_rows

The pinned version goes to XCom ``version`` and into the task's OpenLineage input,
and the snapshot never moves while the function runs, whatever other writers commit.
With ``transaction`` (a staged multi-table transaction's id, e.g. from XCom) the
function gets the table as that group leaves it: the audit step of write-audit-publish.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Sequence

from airflow.providers.common.compat.sdk import DecoratedOperator, task_decorator_factory
from airflow.providers.standard.operators.python import PythonOperator

from ..hooks.arguments import optional_int, optional_value, parse_transaction_id
from ..operators.base import DeltaTaskMixin

if TYPE_CHECKING:  # pragma: no cover
    from airflow.sdk import Context

#: the argument of the decorated function that receives the snapshot
SNAPSHOT_ARG = "snapshot"


class _DeltaSnapshotDecoratedOperator(DeltaTaskMixin, DecoratedOperator, PythonOperator):
    """Run the function with ``snapshot=<the table pinned at the resolved version>``."""

    template_fields: Sequence[str] = ("templates_dict", "op_args", "op_kwargs", "table_uri", "delta_conn_id",
                                      "version", "timestamp", "transaction")
    template_fields_renderers = {"templates_dict": "json", "op_args": "py", "op_kwargs": "py"}
    custom_operator_name = "@task.delta_snapshot"
    lineage_role = "input"
    ui_color = "#00add4"

    def __init__(self, *, python_callable: Callable, op_args: Any, op_kwargs: Any, table_uri: str,
                 version: int | str | None = None, timestamp: Any = None, delta_conn_id: str | None = None,
                 transaction: str | None = None, **kwargs: Any) -> None:
        op_kwargs = {**(op_kwargs or {}), SNAPSHOT_ARG: None}     # filled in at execute time
        super().__init__(kwargs_to_upstream={"python_callable": python_callable, "op_args": op_args,
                                             "op_kwargs": op_kwargs},
                         python_callable=python_callable, op_args=op_args, op_kwargs=op_kwargs, **kwargs)
        self.table_uri = table_uri
        self.version = version
        self.timestamp = timestamp
        self.delta_conn_id = delta_conn_id
        #: a staged multi-table transaction's id: the function gets the table as that group leaves it
        self.transaction = transaction

    def execute(self, context: "Context") -> Any:
        tx_id = parse_transaction_id(self.transaction, "transaction", required=False)
        if tx_id is not None:
            snapshot = self.hook.snapshot(self.table_uri, transaction=tx_id)
            self.log.info("Audit view of %s in transaction %s (version %s) for %s", self.table_uri,
                          tx_id, snapshot.version, self.python_callable.__name__)
            self.op_kwargs = {**self.op_kwargs, SNAPSHOT_ARG: snapshot}
            return super().execute(context)
        version = self.hook.resolve_version(self.table_uri, version=optional_int(self.version, "version"),
                                            timestamp=optional_value(self.timestamp))
        snapshot = self.hook.get_table(self.table_uri).snapshot(version=version)
        self.log.info("Pinned %s at version %s for %s", self.table_uri, snapshot.version,
                      self.python_callable.__name__)
        self.record_lineage(snapshot.version)
        ti = context.get("ti")
        if ti is not None:
            ti.xcom_push(key="version", value=snapshot.version)
        self.op_kwargs = {**self.op_kwargs, SNAPSHOT_ARG: snapshot}
        return super().execute(context)


def delta_snapshot_task(python_callable: Callable | None = None, multiple_outputs: bool | None = None,
                        **kwargs: Any) -> Any:
    """``@task.delta_snapshot(table_uri=..., version=None, timestamp=None, delta_conn_id=None,
    transaction=None)``: the function runs with ``snapshot=`` the table pinned at one version.

    :param table_uri: the table (templated): absolute path or URL, or relative to the connection's
        base URI
    :param version: read this version (templated; an int or its text, ``""``/``"None"`` mean not
        given)
    :param timestamp: or the version as of this time (templated: epoch ms, datetime or ISO text such
        as ``{{ data_interval_end }}``), by the in-commit-timestamp rules; a time after the latest
        commit pins the latest version, a time still in the future is refused. Giving both
        ``version`` and ``timestamp`` is refused; neither: the latest version
    :param delta_conn_id: the ``delta`` connection (templated); None: none for an absolute
        ``table_uri``, ``delta_default`` for a relative one
    :param transaction: a multi-table transaction id of the connection's catalog (templated, e.g.
        from XCom): the snapshot is the table as that staged group leaves it (the audit of
        write-audit-publish); ``version`` and ``timestamp`` are then not used, and the task
        pushes no ``version`` XCom and records no lineage version. ``""``/``"None"`` (what a
        template of a missing XCom renders to) mean not given, as for ``version``
    :param multiple_outputs: as for ``@task``: True pushes each key of a returned dict as an XCom
        of its own; None (the default) infers it from the function's return annotation

    The decorated function must take a ``snapshot`` argument. Every other argument of
    ``@task`` (``task_id``, ``retries``, ``outlets``, ``templates_dict``, ...) works as for
    ``@task``. The task pushes the pinned version to XCom ``version`` (also its OpenLineage
    input version); ``return_value`` is what the function returns.
    """
    return task_decorator_factory(python_callable=python_callable, multiple_outputs=multiple_outputs,
                                  decorated_operator_class=_DeltaSnapshotDecoratedOperator, **kwargs)
