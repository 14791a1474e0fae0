"""Typed errors of the Delta log layer.

Every error raised on purpose by :mod:`airflow_provider_delta.log` derives from
:class:`DeltaError`, so callers (and Airflow tasks) can catch one class and still
tell the cases apart by type. Messages are written for the person reading a task
log: they say what is wrong and, where it helps, what to do about it.
"""
from __future__ import annotations


class DeltaError(Exception):
    """Base class of every error this package raises deliberately."""


class TableNotFoundError(DeltaError):
    """The location holds no Delta table (no ``_delta_log`` or no commits in it)."""


class DataFileNotFoundError(DeltaError):
    """A data file the log references is gone (deleted by hand, or vacuumed too early)."""

    def __init__(self, message: str, path: str | None = None):
        super().__init__(message)
        self.path = path


class ChangeDataFeedNotEnabledError(DeltaError):
    """A change-feed read covers a version at which ``delta.enableChangeDataFeed`` was not on.

    Without the property a writer records no change data for updates and deletes, so
    the changes of that version cannot be told apart; ``version`` names it.
    """

    def __init__(self, message: str, version: int | None = None):
        super().__init__(message)
        self.version = version


class TableAlreadyExistsError(DeltaError):
    """``DeltaTable.create`` was asked to create a table where one already exists."""


class VersionNotFoundError(DeltaError):
    """A version outside the range that can be reconstructed was requested."""

    def __init__(self, message: str, version: int | None = None,
                 earliest: int | None = None, latest: int | None = None):
        super().__init__(message)
        self.version = version
        self.earliest = earliest
        self.latest = latest


class UnexpectedVersionError(DeltaError):
    """A guarded operation found the table at another version than the caller expected, and did nothing.

    A rollback that must undo only its own commit gives that commit's version as the expected
    latest; ``expected`` and ``latest`` say what it expected and what it found. Retrying gives the
    same answer: someone must look at the commits after ``expected``.
    """

    def __init__(self, message: str, expected: int | None = None, latest: int | None = None):
        super().__init__(message)
        self.expected = expected
        self.latest = latest


class TimestampOutOfRangeError(DeltaError):
    """A time-travel timestamp lies before the earliest or after the latest commit."""

    def __init__(self, message: str, timestamp: int | None = None,
                 earliest: int | None = None, latest: int | None = None):
        super().__init__(message)
        self.timestamp = timestamp
        self.earliest = earliest
        self.latest = latest


class UnsupportedFeatureError(DeltaError):
    """The table needs a protocol version or table feature this package cannot honour."""

    def __init__(self, message: str, feature: str | None = None):
        super().__init__(message)
        self.feature = feature


class CatalogRequiredError(UnsupportedFeatureError):
    """The table is catalog-managed and was opened without its catalog: PROTOCOL.md gives
    filesystem-only clients no access to it (its newest commits may exist only in the catalog,
    so a listing of ``_delta_log`` answers a stale table). Open it through its catalog."""


class CorruptLogError(DeltaError):
    """A log file cannot be parsed, or the log is structurally broken (gaps, missing actions)."""

    def __init__(self, message: str, path: str | None = None, line: int | None = None):
        super().__init__(message)
        self.path = path
        self.line = line


class DeletionVectorError(CorruptLogError):
    """A deletion vector cannot be read or disagrees with its descriptor (bad magic number,
    size, checksum, cardinality, or a missing DV file); ``path`` names the DV file if it has one."""


class InvalidTableStateError(DeltaError):
    """The table's properties and protocol contradict each other (e.g. a feature without its property)."""


class InvalidArgumentError(DeltaError, ValueError):
    """A caller passed a value that cannot be used; nothing was changed."""


class StorageError(DeltaError):
    """The storage backend cannot do what is needed (e.g. no atomic put-if-absent)."""


class ConditionalCreateError(StorageError):
    """The store accepted a create-only write over an existing object; ``driver`` names the
    fsspec driver and its version. Committing there could silently lose a commit."""

    def __init__(self, message: str, driver: str | None = None):
        super().__init__(message)
        self.driver = driver


class CommitFailedError(DeltaError):
    """A commit did not land.

    ``retryable`` says whether trying again (at a newer version) may succeed;
    ``conflict`` says whether a concurrent commit caused the failure.
    """

    def __init__(self, message: str, retryable: bool = False, conflict: bool = False,
                 version: int | None = None):
        super().__init__(message)
        self.retryable = retryable
        self.conflict = conflict
        self.version = version


class PairUndoneByRestoreError(CommitFailedError):
    """A writer's exactly-once pair (``txn(appId, version)``) is recorded, so its write would be skipped,
    but a later RESTORE undid the commit that holds it: the table has none of that write's rows.

    ``version``: the commit holding the pair; ``restore_version``: the RESTORE that undid it;
    ``restored_version``: the version it restored (None when its target cannot be resolved).
    Not retryable: a retry with the same pair is skipped again (by Delta Spark too).
    """

    def __init__(self, message: str, version: int | None = None, restore_version: int | None = None,
                 restored_version: int | None = None):
        super().__init__(message, retryable=False, version=version)
        self.restore_version = restore_version
        self.restored_version = restored_version


class PairRestoreUndecidedError(PairUndoneByRestoreError):
    """A writer's exactly-once pair is recorded, so its write would be skipped, but a later RESTORE that
    records no version may have undone its commit, and what that RESTORE did does not tell: neither
    skipping (rows perhaps gone) nor writing again (rows perhaps there twice) is known to be right.

    Not a claim that the rows are gone: the message says what to check. ``restored_version`` is None.
    Not retryable: a retry finds the same log.
    """


class PositionUndoneByRestoreError(PairUndoneByRestoreError):
    """An incremental consumer's position (its output's ``txn(app_id, v)``) is recorded, but a later RESTORE
    of the output undid the commit that recorded it: taking it would skip the restored-away changes for good.

    Besides :class:`PairUndoneByRestoreError`'s attributes: ``app_id``, ``position`` (the recorded input
    version) and ``restart_from`` (the input version to start again from under another ``app_id``, given as
    ``initial_version``; None when it cannot be read). Not retryable: the position stays recorded.
    """

    def __init__(self, message: str, version: int | None = None, restore_version: int | None = None,
                 restored_version: int | None = None, app_id: str | None = None, position: int | None = None,
                 restart_from: int | None = None):
        super().__init__(message, version=version, restore_version=restore_version,
                         restored_version=restored_version)
        self.app_id = app_id
        self.position = position
        self.restart_from = restart_from


class CommitOwnerUnavailableError(CommitFailedError):
    """The commit owner's database cannot be reached; nothing was ratified, so retrying later is safe.

    Raised when the owner is built, when a table's owner state is read, and for a
    commit that failed before the owner's store saw it (the outcome is known: no
    new version). Always ``retryable``.
    """

    def __init__(self, message: str, version: int | None = None):
        super().__init__(message, retryable=True, version=version)


class CommitOutcomeUnknownError(CommitFailedError):
    """The commit may or may not be part of the table: the owner failed while ratifying, a put failed
    in a way that may still land, or the put landed where the hole check after it cannot tell whether
    metadata cleanup raced it below a newer checkpoint (its commit file is then left in place).

    Only this error means the outcome is unknown. Before committing the same change again, read the
    latest snapshot: the change is in the table only if it shows there - the exactly-once ``txn``
    record (``snapshot().transaction_version(app_id)``) when the transaction set one, or else the
    changes it made (``snapshot().files()``, ``.metadata``). ``history()`` is no proof: it lists commit
    files, and a commit file left in a hole shows there with this operation although no reader
    replays it.
    """


class InvalidCommittedVersionError(CommitFailedError):
    """A commit would not follow the log it was built on: the commits after its read version were
    cleaned up below a newer checkpoint, so the version it would take is a hole no reader lists.

    Delta Spark's ``DELTA_INVALID_COMMITTED_VERSION``. Nothing of this commit is left in the log;
    ``current_version`` is the newest version found. Not ``retryable`` with the same actions: read
    the table again and redo the operation.
    """

    spark_name = "DELTA_INVALID_COMMITTED_VERSION"

    def __init__(self, message: str, version: int | None = None, current_version: int | None = None):
        super().__init__(message, retryable=False, version=version)
        self.current_version = current_version


class ConcurrentModificationError(CommitFailedError):
    """A concurrent commit changed what this transaction depended on.

    ``winning_version`` names the commit that won and ``reason`` says what conflicted;
    ``spark_name`` is the Delta Spark exception of the same case (the subclasses below).
    """

    spark_name = "DeltaConcurrentModificationException"

    def __init__(self, message: str, winning_version: int | None = None, reason: str = ""):
        super().__init__(message, retryable=False, conflict=True, version=winning_version)
        self.winning_version = winning_version
        self.reason = reason


# Delta Spark's concurrent-modification exceptions, one class each (``spark_name`` is the class a
# Delta Spark user knows, and every message starts with it). As in Delta Spark, the commit is not
# retried after one of them (``retryable`` is False: the same actions are no longer valid); the cure
# is re-running the whole operation on a fresh snapshot. Compare a lost race without a logical
# conflict, which the committer retries itself and reports as ``CommitFailedError(retryable=True)``
# only when its budget runs out, and a winner whose protocol this package cannot write, which is an
# ``UnsupportedFeatureError`` (re-running cannot help; Delta Spark fails with its protocol error).
class ConcurrentAppendError(ConcurrentModificationError):
    """Files were added to data this transaction read (Delta Spark's ConcurrentAppendException)."""

    spark_name = "ConcurrentAppendException"


class ConcurrentDeleteReadError(ConcurrentModificationError):
    """A file this transaction read was removed (Delta Spark's ConcurrentDeleteReadException)."""

    spark_name = "ConcurrentDeleteReadException"


class ConcurrentDeleteDeleteError(ConcurrentModificationError):
    """A file this transaction removes was removed already (ConcurrentDeleteDeleteException)."""

    spark_name = "ConcurrentDeleteDeleteException"


class MetadataChangedError(ConcurrentModificationError):
    """The table metadata changed concurrently (Delta Spark's MetadataChangedException)."""

    spark_name = "MetadataChangedException"


class ProtocolChangedError(ConcurrentModificationError):
    """The protocol changed concurrently (Delta Spark's ProtocolChangedException)."""

    spark_name = "ProtocolChangedException"


class ConcurrentTransactionError(ConcurrentModificationError):
    """An application transaction id or a metadata domain this transaction depends on was
    changed concurrently (Delta Spark's ConcurrentTransactionException)."""

    spark_name = "ConcurrentTransactionException"


class CatalogUnavailableError(CommitOwnerUnavailableError):
    """The catalog's database cannot be reached; nothing was ratified or changed, retry later."""


class GroupCommitError(CommitFailedError):
    """A multi-table transaction was not ratified: no participant changed.

    ``stale`` maps each participant table (its URI) whose proposed version was taken by
    another commit to that table's latest version then; ``state`` is the group's state
    when it could not be ratified (``aborted``, ``ratified``, ...) or None. A group
    refused only for stale versions is ``retryable`` (re-stage at fresh versions).
    """

    def __init__(self, message: str, group_id: str, stale: dict[str, int] | None = None,
                 state: str | None = None, retryable: bool = False):
        super().__init__(message, retryable=retryable, conflict=bool(stale))
        self.group_id = group_id
        self.stale = dict(stale or {})
        self.state = state
