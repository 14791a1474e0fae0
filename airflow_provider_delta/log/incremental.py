"""Processing a table's change feed incrementally, exactly once.

A consumer turns the changes of a source table into commits on an output table.
Its position ("the source's changes up to version v are in the output") is kept
where its output is: every output commit records ``txn(app_id, v)`` together with
the data, atomically. So the position is durable and exact without any state of
its own:

* a crash before the output commit leaves the old position, and the retry reads the
  same changes again (nothing is skipped);
* a crash after it leaves the new position, and the retry finds nothing left to do
  (nothing is processed twice); a concurrent duplicate run loses the commit race on
  the same ``app_id`` (:mod:`.conflicts`) and then finds nothing left either.

Each step reads the changes after the position up to a source version pinned for
it (``end_version``, e.g. the version a commit sensor saw), so a step's input is
fixed before it starts, and the next step starts exactly where this one ended.
The position lives as long as the output table keeps its ``txn`` records
(``delta.setTransactionRetentionDuration``, unset by default: forever).

A consumer that changed its ``app_id`` (the Airflow operators' default id changed in 0.2.0)
names its former ids (``former_app_ids``): while the output holds no position under its
``app_id``, it continues from the furthest position recorded under a former one, and its
next commit records the position under ``app_id``. A position under ``app_id`` always wins.

A position whose commit a later RESTORE of the output undid is not taken: the output holds the
restored version's data, not the changes up to the position, and a RESTORE keeps the ``txn``
records. :func:`pending_changes` (so :func:`process_changes` and the Airflow operators) fails with
:class:`~.base.errors.PositionUndoneByRestoreError`, which names the input version to start again
from under another ``app_id`` (:mod:`.write.pair_undone_by_restore`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import pyarrow as pa

from .read.change_feed import read_changes
from .base.errors import InvalidArgumentError, TableNotFoundError
from .read.table_log import TableLog, version_arg
from .write.pair_undone_by_restore import check_position_not_undone
from .write.writer import write_table


@dataclass(frozen=True)
class ChangeRange:
    """The source versions a consumer has not processed yet: ``start``..``end`` (both included)."""

    source_uri: str
    app_id: str
    #: the last source version whose changes are in the output (None: nothing processed yet)
    processed: int | None
    #: the source version pinned for this step
    end: int
    #: where a consumer without a position starts
    initial: int = 0
    #: the former id whose position ``processed`` is (None: ``app_id``'s own, or no position)
    resumed_from: str | None = None

    @property
    def start(self) -> int:
        return self.initial if self.processed is None else self.processed + 1

    @property
    def empty(self) -> bool:
        """Nothing to process: the output already holds the changes up to ``end``."""
        return self.start > self.end


@dataclass(frozen=True)
class IncrementalStep:
    """What :func:`process_changes` did: the range, the output version it committed (None: nothing to
    do) and how many change rows it read."""

    range: ChangeRange
    version: int | None
    rows: int = 0


def processed_version(output: TableLog, app_id: str) -> int | None:
    """The consumer's position: the version of ``app_id``'s last ``txn`` in ``output`` (None if none)."""
    return _position(output, app_id, ())[0]


def _position(output: TableLog, app_id: str, former_app_ids: Sequence[str]) -> tuple[int | None, str | None]:
    """``app_id``'s position in ``output``, else the furthest one of ``former_app_ids`` and that id."""
    try:
        snap = output.snapshot()
    except TableNotFoundError:
        return None, None
    own = snap.transaction_version(app_id)
    if own is not None:
        return own, None
    found = [(v, former) for former in former_app_ids if (v := snap.transaction_version(former)) is not None]
    if not found:
        return None, None
    return max(found, key=lambda pair: pair[0])


def pending_changes(source: TableLog, output: TableLog, app_id: str, end_version: int | None = None,
                    initial_version: int = 0, former_app_ids: Sequence[str] = ()) -> ChangeRange:
    """The range of source versions ``app_id`` has yet to process, up to ``end_version`` (default: latest).

    Without a position under ``app_id``, the furthest one under ``former_app_ids`` counts
    (``resumed_from`` names it); commits record the position under ``app_id``. A position whose commit a
    later RESTORE of ``output`` undid raises :class:`~.base.errors.PositionUndoneByRestoreError`."""
    if not isinstance(app_id, str) or not app_id.strip():
        raise InvalidArgumentError("app_id must be a non-empty string: it names the consumer's position")
    if isinstance(former_app_ids, str) or not all(isinstance(f, str) and f.strip() for f in former_app_ids):
        raise InvalidArgumentError("former_app_ids must be a sequence of non-empty strings")
    initial_version = version_arg(initial_version, "initial_version")
    end = source.latest_version() if end_version is None else version_arg(end_version, "end_version")
    processed, resumed_from = _position(output, app_id, former_app_ids)
    if processed is not None:   # a position whose commit a later RESTORE of the output undid is not taken
        check_position_not_undone(output, resumed_from or app_id, processed, initial_version)
    return ChangeRange(source.uri, app_id, processed, end, initial_version, resumed_from)


def process_changes(source: TableLog, output: TableLog, app_id: str,
                    transform: Callable[[pa.Table], pa.Table] | None = None, end_version: int | None = None,
                    initial_version: int = 0, former_app_ids: Sequence[str] = (),
                    **write_kwargs: Any) -> IncrementalStep:
    """Append ``transform(changes)`` (default: the change rows themselves) to ``output``, exactly once.

    The changes are those of :func:`pending_changes`; the output commit records
    ``txn(app_id, end)`` (also when the range started at a position of ``former_app_ids``). A transform may return an empty table: the commit still
    moves the position. Other keywords go to the writer (``partition_by``,
    ``properties`` when the output is created, ``user_metadata``...).
    """
    rng = pending_changes(source, output, app_id, end_version, initial_version, former_app_ids)
    if rng.empty:
        return IncrementalStep(rng, None)
    changes = read_changes(source, rng.start, rng.end)
    data = changes if transform is None else transform(changes)
    if not isinstance(data, pa.Table):
        raise InvalidArgumentError(f"the transform returned {type(data).__name__}, not a pyarrow.Table")
    version = write_table(output, data, mode="append", app_id=app_id, app_version=rng.end, **write_kwargs)
    return IncrementalStep(rng, version, changes.num_rows)
