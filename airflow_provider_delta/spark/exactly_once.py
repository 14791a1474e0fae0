"""Exactly-once bookkeeping through Delta application transactions (``txn`` actions).

A writer that commits ``txn(appId, version)`` together with its data can ask the
table, before writing again, whether that ``version`` of its work is already in:
``transaction_version(appId) >= version`` means yes (Delta's rule, the same one
Structured Streaming uses for its batch ids). A retried Airflow task therefore
skips instead of appending twice. These helpers are pure log-layer code, shared
by the Spark job and the Airflow operator (which checks before paying for a
Spark submit, and afterwards finds the version that holds the data).
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

from ..log import DeltaError, InvalidArgumentError, TableNotFoundError, VersionNotFoundError
from .delta_job import parse_run_marker

if TYPE_CHECKING:  # pragma: no cover
    from ..log import DeltaTable

#: how many commits back :func:`find_txn_commit` looks by default
DEFAULT_SEARCH_DEPTH = 1000


def check_app(app_id: Any, app_version: Any) -> tuple[str | None, int | None]:
    """Validate an (app_id, app_version) pair: both or neither; version a non-negative int."""
    if app_id is None and app_version is None:
        return None, None
    if not isinstance(app_id, str) or not app_id.strip():
        raise InvalidArgumentError("app_id must be a non-empty string when app_version is given")
    if isinstance(app_version, bool) or not isinstance(app_version, int) or app_version < 0:
        raise InvalidArgumentError(f"app_version must be a non-negative integer, got {app_version!r}")
    return app_id, app_version


def committed_txn_version(table: "DeltaTable", app_id: str) -> int | None:
    """The table's latest recorded version of ``app_id`` (None if never, or no table yet)."""
    try:
        return table.snapshot().transaction_version(app_id)
    except TableNotFoundError:
        return None


def already_committed(table: "DeltaTable", app_id: str | None, app_version: int | None) -> bool:
    """Whether ``app_version`` of ``app_id`` (or a later one) is already in the table."""
    return skip_basis(table, app_id, app_version) is not None


def skip_basis(table: "DeltaTable", app_id: str | None, app_version: int | None) -> int | None:
    """The recorded ``txn`` version of ``app_id`` that makes ``app_version`` a skip (at or above it),
    or None when the write must run. The undone-by-RESTORE check takes it as ``recorded``: a skip
    resting on a higher recorded version is checked on that version's commit."""
    if app_id is None or app_version is None:
        return None
    current = committed_txn_version(table, app_id)
    return current if current is not None and current >= app_version else None


def find_txn_commit(table: "DeltaTable", app_id: str, app_version: int,
                    max_commits: int = DEFAULT_SEARCH_DEPTH) -> int | None:
    """The table version whose commit recorded ``txn(app_id, app_version)``, newest first.

    Reads at most ``max_commits`` commits back from the latest; None when not found
    (for example after metadata cleanup removed the commit).
    """
    try:
        latest = table.latest_version()
    except TableNotFoundError:
        return None
    for v in range(latest, max(-1, latest - max_commits), -1):
        try:
            actions = table.read_commit(v)
        except (VersionNotFoundError, FileNotFoundError):
            return None
        if _holds_txn(actions, app_id, app_version):
            return v
    return None


def commit_info_at(table: "DeltaTable", version: int) -> dict[str, Any] | None:
    """The ``commitInfo`` of commit ``version``, or None when it has none or cannot be read."""
    try:
        actions = table.read_commit(version)
    except (DeltaError, FileNotFoundError):
        return None
    return _commit_info(actions)


def _commit_info(actions: Any) -> dict[str, Any] | None:
    for a in actions:
        info = a.get("commitInfo") if isinstance(a, dict) else None
        if isinstance(info, dict):
            return info
    return None


def origin_of(info: dict[str, Any] | None) -> dict[str, Any] | None:
    """Which Airflow task run a ``commitInfo`` names: its ``job``, or the run marker in ``userMetadata``."""
    if info is None:
        return None
    job = info.get("job")
    if isinstance(job, dict):
        return job
    return parse_run_marker(info.get("userMetadata"))


def commit_origin(table: "DeltaTable", version: int) -> dict[str, Any] | None:
    """Which Airflow task run made commit ``version``: ``{"dag_id", "task_id", "run_id", ...}``, or None.

    Read from the commit's ``commitInfo``: ``job`` (commits of :func:`~.commit.commit_dataframe`)
    or the run marker in ``userMetadata`` (Delta Spark commits of ``DeltaSparkApplicationOperator``,
    which also name the input they read). None when the commit says nothing, or cannot be read.
    """
    return origin_of(commit_info_at(table, version))


def _changes_data(actions: Any) -> bool:
    """Whether a commit adds or removes rows: an ``add`` or ``remove`` with ``dataChange`` (OPTIMIZE,
    a metadata or protocol change, VACUUM's commits do not)."""
    for a in actions:
        for kind in ("add", "remove"):
            f = a.get(kind) if isinstance(a, dict) else None
            if isinstance(f, dict) and f.get("dataChange", True) is not False:
                return True
    return False


def _holds_txn(actions: Any, app_id: str, app_version: int) -> bool:
    for a in actions:
        t = a.get("txn") if isinstance(a, dict) else None
        if isinstance(t, dict) and t.get("appId") == app_id and t.get("version") == app_version:
            return True
    return False


def commits_outside_pair(table: "DeltaTable", after: int, app_id: str, app_version: int,
                         is_this_try: Callable[[dict[str, Any]], bool]) -> list[tuple[int, bool]]:
    """The commits after version ``after`` that changed data and that the pair does not account for.

    A data-changing commit is accounted for when it holds ``txn(app_id, app_version)`` (the one
    exactly-once write), or when its ``commitInfo`` names its origin (``job``, or the run marker
    in ``userMetadata``) and that origin is not this try (``is_this_try(origin)`` False): another
    run, another try, another task. Every other one is returned as ``(version, marked)``:
    ``marked`` True for this try's own commit without the pair, False for a commit that names no
    origin, which may be this try's (an application that set its own ``txnAppId``/``userMetadata``
    options) or a concurrent writer's; nothing in the log tells them apart, so the caller treats
    it as possibly this try's. Commits that cannot be read (cleaned up) are skipped.
    """
    found: list[tuple[int, bool]] = []
    try:
        latest = table.latest_version()
    except TableNotFoundError:
        return found
    for version in range(after + 1, latest + 1):
        try:
            actions = table.read_commit(version)
        except (VersionNotFoundError, FileNotFoundError):
            continue
        if not _changes_data(actions) or _holds_txn(actions, app_id, app_version):
            continue
        origin = origin_of(_commit_info(actions))
        if origin is None or is_this_try(origin):
            found.append((version, origin is not None))
    return found
