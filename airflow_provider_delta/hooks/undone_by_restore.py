"""The Airflow face of "a commit a later RESTORE undid is not done" (the log's rule:
:mod:`airflow_provider_delta.log.write.pair_undone_by_restore`).

A retry meets the same RESTORE and would fail the same way, so these errors are also Airflow's
``AirflowFailException``: the task fails at once, its retries unused. The hook and the Spark operators
raise them; they live here, below both.
"""
from __future__ import annotations

from airflow.providers.common.compat.sdk import AirflowFailException

from ..log import (PairRestoreUndecidedError, PairUndoneByRestoreError, PositionUndoneByRestoreError,
                   check_pair_not_undone)


class DeltaPairUndoneByRestoreError(PairUndoneByRestoreError, AirflowFailException):
    """The exactly-once pair is committed, but a later RESTORE undid its commit: the task fails without
    retrying (a retry is skipped again, by Delta Spark too); the message names the version to go above
    (``app_version`` of a Spark operator, ``txn_version`` of the hook). Also the log layer's
    :class:`~airflow_provider_delta.log.PairUndoneByRestoreError`."""


class DeltaPairRestoreUndecidedError(PairRestoreUndecidedError, AirflowFailException):
    """The exactly-once pair is committed, but a later RESTORE may have undone its commit and the log does not
    tell: neither skipping nor writing again is known to be right, so the task fails without retrying (a retry
    finds the same log); the message says what to check. Also the log layer's
    :class:`~airflow_provider_delta.log.PairRestoreUndecidedError` - not a claim that the rows are gone."""


class DeltaPositionUndoneByRestoreError(PositionUndoneByRestoreError, AirflowFailException):
    """An incremental run's position is recorded in its output, but a later RESTORE of the output undid the
    commit that recorded it: the task fails without retrying (the position stays recorded); the message
    names ``app_id`` and the ``initial_version`` to start again from. Also the log layer's
    :class:`~airflow_provider_delta.log.PositionUndoneByRestoreError`."""


def refuse_undone_pair(table, app_id: str, version: int, *, recorded: int | None = None,
                       version_parameter: str = "app_version") -> None:
    """Before skipping on a committed pair: fail the task when a later RESTORE undid its commit, rather
    than report a write whose rows are gone. ``version_parameter``: the caller's name for the pair's
    version, which the message tells the user to raise."""
    try:
        check_pair_not_undone(table, app_id, version, recorded=recorded, version_parameter=version_parameter)
    except PairUndoneByRestoreError as e:
        kind = DeltaPairRestoreUndecidedError if isinstance(e, PairRestoreUndecidedError) \
            else DeltaPairUndoneByRestoreError
        raise kind(str(e), version=e.version, restore_version=e.restore_version,
                   restored_version=e.restored_version) from None
