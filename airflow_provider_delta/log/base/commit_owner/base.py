"""The commit-owner protocol of managed commits, independent of where the owner keeps state.

A commit owner decides which of the files in ``_delta_log/_commits`` are commits:
the file system holds the *content* of a proposed commit, the owner's atomic
"version v-1 -> v" step (ratification) makes it part of the table. Everything
around that step is the same for every owner and lives here: writing the commit
file, telling a lost race from a refused commit, recovering when the answer of the
owner's store is lost, backfilling in order, and the ownership hand-over of the
RFC (propose, land the ownership commit with put-if-absent, confirm or forget).

Subclasses only provide five small, atomic state operations (``_read_table``,
``_read_commits``, ``_replace_table``, ``_ratify``, ``_mark_backfilled``), which is
what differs between a process-local dict and a SQL database.
"""
from __future__ import annotations

import json
import logging
import uuid
from abc import ABC, abstractmethod

from ..features import MANAGED_COMMIT_FEATURE, MANAGED_OWNER_PROPERTY
from ..errors import (CommitFailedError, CommitOutcomeUnknownError, CommitOwnerUnavailableError, CorruptLogError,
                      DeltaError, InvalidArgumentError, InvalidTableStateError)
from ..names import COMMITS_DIR, commit_path, uuid_commit_name
from ..storage import Storage, normalize_uri
from .backfill import copy_in_order
from .records import ACTIVE, CLOSED, PROPOSED, Commit, GetCommitsResponse, TableState

log = logging.getLogger(__name__)

#: Bound on compare-and-set retries of owner state changes under contention.
_MAX_STATE_ATTEMPTS = 200


class CommitOwner(ABC):
    """Ratifies commits of managed-commit tables and backfills them into ``_delta_log``.

    ``backfill_batch_size`` = 1 backfills right after each commit; N > 1 waits until N
    ratified commits are pending (fewer writes, but file-system-only readers lag behind).
    """

    #: value of the ``delta.managedCommit.commitOwner`` table property
    name: str = ""
    #: a commit owner serves no reader feature beyond what the reader supports itself
    #: (it is a :class:`~..commit_source.CommitSource`)
    served_reader_features: frozenset[str] = frozenset()
    #: the managed-commits RFC lets any client that knows the owner run cleanup and vacuum
    allows_maintenance: bool = True
    #: managedCommit is in WRITABLE_FEATURES already: an owner serves no further writer feature
    served_writer_features: frozenset[str] = frozenset()
    #: an owner may close a table (conversion back to filesystem commits), after which later
    #: versions are plain ``_delta_log`` files: its latest version does not cap the listing
    authoritative_latest: bool = False

    def __init__(self, backfill_batch_size: int = 1):
        if isinstance(backfill_batch_size, bool) or not isinstance(backfill_batch_size, int) \
                or backfill_batch_size < 1:
            raise InvalidArgumentError(
                f"backfill_batch_size must be a positive integer, got {backfill_batch_size!r}")
        self.backfill_batch_size = backfill_batch_size

    # ----------------------------------------------------------- to implement
    @abstractmethod
    def owner_conf(self) -> dict[str, str]:
        """The ``delta.managedCommit.commitOwnerConf`` value: how to reach this owner, never secrets."""

    @abstractmethod
    def _read_table(self, table_id: str) -> TableState | None:
        """The table's record, or None if the owner does not know it."""

    @abstractmethod
    def _read_commits(self, table_id: str, start: int, end: int | None) -> tuple[TableState | None, list[Commit]]:
        """The record and the tracked commits with start <= version <= end, read consistently."""

    @abstractmethod
    def _replace_table(self, table_id: str, expected: TableState | None, new: TableState | None,
                       clear_commits: bool = False) -> bool:
        """Compare-and-set the table's record; False (and no change) if it is not ``expected``.

        ``expected=None`` inserts, ``new=None`` deletes; ``clear_commits`` drops tracked commits.
        """

    @abstractmethod
    def _ratify(self, table_id: str, commit: Commit) -> bool:
        """Atomically make ``commit`` version v if the table is active and at v-1; False otherwise.

        Raise :class:`CommitOwnerUnavailableError` only when the store was certainly not
        reached (e.g. no connection); any other failure is checked by
        :meth:`_ratified_despite_error`, because the ratification may have happened.
        """

    @abstractmethod
    def _mark_backfilled(self, table_id: str, version: int) -> None:
        """Record that everything up to ``version`` is in ``_delta_log`` and stop tracking it."""

    # -------------------------------------------------------------- reading
    def describe_table(self, table_id: str) -> TableState | None:
        """What the owner records about a table (None if it does not know it)."""
        return self._read_table(_check_table_id(table_id))

    def get_commits(self, table_id: str, start_version: int = 0,
                    end_version: int | None = None) -> GetCommitsResponse:
        """Ratified, not yet backfilled commits with start_version <= version <= end_version.

        A table the owner does not know (or has not taken over yet) has no such commits and
        ``latest_table_version`` -1, so an owner-aware reader of a plain table still works.
        """
        table_id = _check_table_id(table_id)
        start = _check_version(start_version, "start_version")
        end = None if end_version is None else _check_version(end_version, "end_version")
        state, commits = self._read_commits(table_id, start, end)
        if state is None or state.state == PROPOSED:
            return GetCommitsResponse([], -1)
        return GetCommitsResponse(sorted(commits, key=lambda c: c.version), state.latest_version)

    # ------------------------------------------------------------ committing
    def commit(self, storage: Storage, table_id: str, version: int, actions: bytes,
               commit_timestamp: int) -> Commit:
        """Commit ``actions`` as ``version``: write the ``_commits`` file, ratify it, maybe backfill.

        Raises CommitFailedError(retryable=True, conflict=True) when another commit took
        the version (re-read the table and try the next one), and CommitFailedError
        (retryable=False) when the owner cannot take it at all (unknown table, not
        accepting commits, or a version beyond latest+1). A failed backfill after a
        successful ratification is only logged: the commit stands.
        """
        table_id = _check_table_id(table_id)
        version = _check_version(version, "version")
        if not isinstance(actions, (bytes, bytearray)) or not actions:
            raise InvalidArgumentError("a commit needs its actions as non-empty bytes")
        actions = bytes(actions)
        commit_timestamp = _check_version(commit_timestamp, "commit_timestamp")
        state = self._read_table(table_id)
        if state is None and version > 0:
            state = self._adopt_if_handed_over(storage, table_id, version - 1)
        elif state is not None and state.state == PROPOSED:
            state = self._confirm_if_landed(storage, state)
        self._check_can_commit(storage, table_id, version, state)
        assert state is not None
        name = uuid_commit_name(version, str(uuid.uuid4()))
        rel = f"{COMMITS_DIR}/{name}"
        if not storage.put_if_absent(rel, actions):  # a UUID collision: practically impossible
            raise CommitFailedError(f"commit file {rel} already exists", retryable=True, version=version)
        try:
            mtime = storage.mtime_ms(rel)
        except (OSError, FileNotFoundError):
            mtime = 0
        commit = Commit(version, name, len(actions), mtime, commit_timestamp)
        try:
            won = self._ratify(table_id, commit)
        except CommitOwnerUnavailableError:
            storage.delete(rel)  # the store was never reached: nobody can reference the file
            raise
        except DeltaError:
            raise
        except Exception as e:  # the store failed: find out whether the ratification happened
            won = self._ratified_despite_error(storage, table_id, commit, actions, e)
        if not won:
            storage.delete(rel)  # never ratified, nobody can reference it
            raise self._rejection(storage, table_id, version)
        if self.backfill_batch_size == 1 or version - state.backfilled_version >= self.backfill_batch_size:
            try:
                self.backfill_commits(storage, table_id, version)
            except Exception as e:  # the commit is durable in the owner; backfill can be redone
                log.warning("commit %d of table %s is ratified, but backfilling it failed (%s: %s); "
                            "it will be backfilled later", version, table_id, type(e).__name__, e)
        return commit

    def _check_can_commit(self, storage: Storage, table_id: str, version: int,
                          state: TableState | None) -> None:
        """Refuse before writing anything when the commit cannot possibly be ratified."""
        if state is None:
            raise CommitFailedError(
                f"commit owner '{self.name}' does not know table {table_id}; register it (create the "
                "table with this owner, or enable managed commits) or use the owner the table names",
                version=version)
        if state.state != ACTIVE:
            raise CommitFailedError(
                f"commit owner '{self.name}' is not accepting commits for table {table_id} "
                f"(state {state.state}): " + (
                    "managed commits were disabled, or are being disabled, on this table; re-read it, and "
                    "if it still names this owner finish with disable_managed_commits()"
                    if state.state == CLOSED else
                    f"the ownership commit {state.latest_version} has not landed in _delta_log"),
                version=version)
        if not _same_uri(storage.uri, state.table_uri):
            raise CommitFailedError(
                f"table id {table_id} is registered with commit owner '{self.name}' for "
                f"{state.table_uri}, not {storage.uri}; a copied table keeps its id and must not share "
                "its owner state", version=version)
        if version > state.latest_version + 1:
            raise CommitFailedError(
                f"cannot commit version {version} of table {table_id}: the latest ratified version is "
                f"{state.latest_version}, so the next one is {state.latest_version + 1}", version=version)
        if version <= state.latest_version:
            raise CommitFailedError(
                f"version {version} of table {table_id} is already committed (latest "
                f"{state.latest_version}); re-read the table and retry", retryable=True, conflict=True,
                version=version)

    def _rejection(self, storage: Storage, table_id: str, version: int) -> CommitFailedError:
        """The error for a ratification that did not happen, by why it did not."""
        state = self._read_table(table_id)
        try:
            self._check_can_commit(storage, table_id, version, state)
        except CommitFailedError as e:
            return e
        return CommitFailedError(  # the state moved on and back: treat as a lost race
            f"version {version} of table {table_id} was taken concurrently; re-read and retry",
            retryable=True, conflict=True, version=version)

    def _ratified_despite_error(self, storage: Storage, table_id: str, commit: Commit,
                                actions: bytes, error: Exception) -> bool:
        """After the store failed mid-ratification, decide from its state whether we won.

        Guessing either way is dangerous: a wrong "lost" makes the writer commit its data
        twice, a wrong "won" loses it. If the store cannot be asked, say the outcome is unknown.
        """
        v = commit.version
        try:
            state, commits = self._read_commits(table_id, v, v)
        except Exception:
            raise CommitOutcomeUnknownError(
                f"the commit owner failed while ratifying version {v} of table {table_id} ({error}) "
                "and cannot be reached to tell whether it did; check the table before retrying",
                version=v) from error
        if any(c.file_name == commit.file_name for c in commits):
            return True
        if state is not None and state.backfilled_version >= v:
            try:
                return storage.read_bytes(commit_path(v)) == actions
            except FileNotFoundError:
                return False
        if state is not None and state.latest_version >= v:
            return False
        # Not ratified as far as the store can tell now. The file stays: should a delayed
        # ratification still land, deleting it would break the commit; unreferenced it is
        # harmless (metadata cleanup removes it).
        raise CommitFailedError(
            f"the commit owner failed while ratifying version {v} of table {table_id}: {error}",
            retryable=True, version=v) from error

    # ------------------------------------------------------------ backfill
    def backfill_to_version(self, storage: Storage, table_id: str, version: int | None = None) -> int:
        """Backfill every ratified commit up to ``version`` (default: all); return the highest backfilled."""
        self.backfill_commits(storage, table_id, version)
        state = self._read_table(table_id)
        return state.backfilled_version if state is not None else -1

    def backfill_commits(self, storage: Storage, table_id: str, version: int | None = None) -> list[int]:
        """Like :meth:`backfill_to_version`, returning the versions this call put in ``_delta_log``."""
        table_id = _check_table_id(table_id)
        if version is not None:
            version = _check_version(version, "version")
        state, commits = self._read_commits(table_id, 0, version)
        if state is None:
            raise InvalidArgumentError(f"commit owner '{self.name}' does not know table {table_id}")
        if state.state == PROPOSED:
            return []
        if version is not None and version > state.latest_version:
            raise InvalidArgumentError(
                f"cannot backfill table {table_id} to version {version}: the commit owner ratified "
                f"versions only up to {state.latest_version}")
        target = state.latest_version if version is None else version
        todo = sorted((c for c in commits if state.backfilled_version < c.version <= target),
                      key=lambda c: c.version)
        if target > state.backfilled_version and (not todo or todo[-1].version != target):
            raise CorruptLogError(
                f"commit owner '{self.name}' ratified table {table_id} up to {state.latest_version} "
                f"but tracks only versions {[c.version for c in todo]} after backfilled version "
                f"{state.backfilled_version}")
        done: list[int] = []
        try:
            for v in copy_in_order(storage, todo, state.backfilled_version + 1):
                done.append(v)
        finally:
            if done:
                self._mark_backfilled(table_id, done[-1])
        return done

    # ------------------------------------------------------------ ownership
    def register_table(self, table_id: str, table_uri: str, latest_version: int) -> None:
        """Take over a table whose ``_delta_log`` holds versions up to ``latest_version``.

        Call it once the ownership commit (version 0 of a new table, or the conversion
        commit) is in ``_delta_log``; it confirms a pending proposal. Idempotent: a table
        the owner already manages at this or a later version is left as it is.
        """
        table_id = _check_table_id(table_id)
        latest_version = _check_version(latest_version, "latest_version")
        table_uri = _check_uri(table_uri)
        new = TableState(table_id, table_uri, ACTIVE, latest_version, latest_version)
        for _ in range(_MAX_STATE_ATTEMPTS):
            cur = self._read_table(table_id)
            if cur is not None and cur.state == ACTIVE:
                if not _same_uri(cur.table_uri, table_uri):
                    raise InvalidArgumentError(
                        f"table id {table_id} is already registered with commit owner '{self.name}' for "
                        f"{cur.table_uri}, not {table_uri}")
                if latest_version > cur.latest_version:
                    raise InvalidTableStateError(
                        f"table {table_id} is managed by commit owner '{self.name}' up to version "
                        f"{cur.latest_version}; version {latest_version} was not ratified by it")
                return
            if self._replace_table(table_id, cur, new, clear_commits=True):
                return
        raise _contention(table_id)

    def propose_ownership(self, table_id: str, table_uri: str, version: int) -> None:
        """Agree to own the table from ``version`` on, once that ownership commit lands.

        The caller then writes ``_delta_log/<version>.json`` with put-if-absent and calls
        :meth:`register_table` on success or :meth:`forget_proposal` on failure. Should the
        caller die in between, the owner confirms the proposal itself at the next commit
        by reading that file.
        """
        table_id = _check_table_id(table_id)
        version = _check_version(version, "version")
        table_uri = _check_uri(table_uri)
        new = TableState(table_id, table_uri, PROPOSED, version, version - 1)
        for _ in range(_MAX_STATE_ATTEMPTS):
            cur = self._read_table(table_id)
            if cur is not None and cur.state == ACTIVE:
                raise InvalidTableStateError(
                    f"commit owner '{self.name}' already manages table {table_id} (at version "
                    f"{cur.latest_version})")
            if cur == new:
                return
            if self._replace_table(table_id, cur, new, clear_commits=True):
                return
        raise _contention(table_id)

    def forget_proposal(self, storage: Storage, table_id: str, version: int) -> bool:
        """Drop the proposal to own the table from ``version`` because its commit did not land.

        If ``_delta_log/<version>.json`` turns out to be an ownership commit for this owner
        (another client with the same proposal won), the proposal is confirmed instead: the
        RFC forbids refusing ownership once the ownership commit exists. Returns True if
        the proposal was dropped.
        """
        table_id = _check_table_id(table_id)
        version = _check_version(version, "version")
        for _ in range(_MAX_STATE_ATTEMPTS):
            cur = self._read_table(table_id)
            if cur is None or cur.state != PROPOSED or cur.latest_version != version:
                return False
            if self._ownership_commit_landed(storage, table_id, version):
                self._replace_table(table_id, cur, _activated(cur))
                return False
            if self._replace_table(table_id, cur, None, clear_commits=True):
                return True
        raise _contention(table_id)

    def stop_accepting(self, table_id: str, storage: Storage | None = None) -> int:
        """Refuse further commits (first step of converting back to a filesystem table).

        Returns the latest ratified version; idempotent for a table already closed. With
        ``storage``, a proposal whose ownership commit landed is confirmed first.
        """
        table_id = _check_table_id(table_id)
        for _ in range(_MAX_STATE_ATTEMPTS):
            cur = self._read_table(table_id)
            if cur is not None and cur.state == PROPOSED and storage is not None:
                cur = self._confirm_if_landed(storage, cur)
            if cur is None or cur.state == PROPOSED:
                raise InvalidTableStateError(
                    f"commit owner '{self.name}' does not manage table {table_id}"
                    + (" yet (its ownership commit has not landed)" if cur is not None else ""))
            if cur.state == CLOSED:
                return cur.latest_version
            closed = TableState(cur.table_id, cur.table_uri, CLOSED, cur.latest_version, cur.backfilled_version)
            if self._replace_table(table_id, cur, closed):
                return cur.latest_version
        raise _contention(table_id)

    def resume_accepting(self, table_id: str) -> None:
        """Accept commits again after :meth:`stop_accepting` (an abandoned conversion)."""
        table_id = _check_table_id(table_id)
        for _ in range(_MAX_STATE_ATTEMPTS):
            cur = self._read_table(table_id)
            if cur is None or cur.state == PROPOSED:
                raise InvalidTableStateError(f"commit owner '{self.name}' does not manage table {table_id}")
            if cur.state == ACTIVE:
                return
            if self._replace_table(table_id, cur, _activated(cur)):
                return
        raise _contention(table_id)

    def _confirm_if_landed(self, storage: Storage, state: TableState) -> TableState:
        """Confirm a proposal whose ownership commit is in ``_delta_log`` (its proposer died)."""
        if not self._ownership_commit_landed(storage, state.table_id, state.latest_version):
            return state
        active = _activated(state)
        self._replace_table(state.table_id, state, active)
        return self._read_table(state.table_id) or active

    def _adopt_if_handed_over(self, storage: Storage, table_id: str, version: int) -> TableState | None:
        """Register a table whose ownership commit (``version``) names us but was never registered.

        That happens when the client that created or converted the table died between
        writing the ownership commit and registering it; refusing would leave the table
        unwritable, which the RFC forbids once the ownership commit exists.
        """
        if not self._ownership_commit_landed(storage, table_id, version):
            return None
        self._replace_table(table_id, None, TableState(table_id, storage.uri, ACTIVE, version, version))
        return self._read_table(table_id)

    def _ownership_commit_landed(self, storage: Storage, table_id: str, version: int) -> bool:
        """Whether ``_delta_log/<version>.json`` hands this table to an owner of our name."""
        try:
            data = storage.read_bytes(commit_path(version))
        except FileNotFoundError:
            return False
        has_feature = names_us = False
        for line in data.splitlines():
            try:
                action = json.loads(line)
            except ValueError:
                return False
            if not isinstance(action, dict):
                continue
            proto = action.get("protocol")
            if isinstance(proto, dict) and MANAGED_COMMIT_FEATURE in (proto.get("writerFeatures") or ()):
                has_feature = True
            meta = action.get("metaData")
            if isinstance(meta, dict) and meta.get("id") == table_id \
                    and (meta.get("configuration") or {}).get(MANAGED_OWNER_PROPERTY) == self.name:
                names_us = True
        return has_feature and names_us


def _activated(state: TableState) -> TableState:
    """The record of a proposed or closed table once it accepts commits."""
    if state.state == PROPOSED:
        return TableState(state.table_id, state.table_uri, ACTIVE, state.latest_version, state.latest_version)
    return TableState(state.table_id, state.table_uri, ACTIVE, state.latest_version, state.backfilled_version)


def _contention(table_id: str) -> CommitFailedError:
    return CommitFailedError(f"the commit owner's record of table {table_id} kept changing concurrently; "
                             "try again", retryable=True, conflict=True)


def _check_table_id(table_id: object) -> str:
    if not isinstance(table_id, str) or not table_id.strip() or len(table_id) > 255:
        raise InvalidArgumentError(f"a table id must be a non-empty string of at most 255 characters, "
                                   f"got {table_id!r}")
    return table_id


def _check_uri(uri: object) -> str:
    if not isinstance(uri, str) or not uri:
        raise InvalidArgumentError(f"a table URI must be a non-empty string, got {uri!r}")
    return uri


def _check_version(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidArgumentError(f"{what} must be a non-negative integer, got {value!r}")
    return value


def _same_uri(a: str, b: str) -> bool:
    """Whether two spellings name the same table location (``/x`` and ``file:///x`` do)."""
    return a == b or normalize_uri(a) == normalize_uri(b)
