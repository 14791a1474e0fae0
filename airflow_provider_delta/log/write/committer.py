"""Committing a validated plan: attempts, retries after lost races, and post-commit hooks.

A :class:`~.transaction.Transaction` validates everything once and hands a
:class:`~.commit_plan.CommitPlan` over. The committer writes ``_delta_log/<version>.json`` with
an atomic put-if-absent (or asks the commit owner on managed-commit tables). If
another writer took that version first, the winning commits are read one by one
(as Delta Spark does, rather than trusting a listing to be complete) and checked
for logical conflicts (:mod:`.conflicts`); if none, the same actions are retried
at the next free version after a short randomized back-off, up to ``max_retries`` times
(default: for two minutes, as long as no conflict shows). Everything that depends on
the attempt - the version, the in-commit timestamp (``max(now, winner's + 1 ms)``),
the enablement version of in-commit timestamps - is recomputed per attempt.
"""
from __future__ import annotations

import logging
import time
from typing import Any, Callable

from ..base import ict
from ..base.backoff import sleep_jittered
from ..base.commit_actions import Txn, dumps_actions
from ..maintenance.checkpoint import checkpoint_interval, maybe_auto_checkpoint
from .commit_info import CommitProvenance, build_commit_info, is_own_commit, operation_metrics
from .commit_plan import CommitPlan
from .commit_successor import CommitEvidence, check_caught_up_log, check_commit_follows_log, landed_below_newer_log
from .conflicts import WinningCommit, check_conflicts
from ..base.errors import (CommitFailedError, CommitOutcomeUnknownError, ConcurrentModificationError, DeltaError,
                     InvalidCommittedVersionError, VersionNotFoundError)
from ..base.features import FILE_REINSTATING_OPERATIONS, check_writable
from ..base.names import commit_path
from ..base.path_spelling import LOG_PATH_COLUMN, canonical_log_path, log_spelling
from ..read.table_log import TableLog

log = logging.getLogger(__name__)

#: Without an explicit ``max_retries``, a commit keeps retrying lost races for this long (a budget
#: in time, as Delta Spark's very large attempt limit amounts to), at most this many attempts.
RETRY_BUDGET_S = 120.0
MAX_ATTEMPTS = 100_000
#: Back-off after a lost race: uniform in [0, min(first * 2**retries, most)] seconds, so writers
#: that keep colliding spread out instead of retrying in lockstep.
BACKOFF_FIRST_S = 0.001
BACKOFF_MOST_S = 0.1


class Committer:
    """Lands one :class:`CommitPlan` as the next free version of ``table``."""

    def __init__(self, table: TableLog, plan: CommitPlan, provenance: CommitProvenance,
                 clock: Callable[[], int], max_retries: int | None):
        self.table = table
        self.plan = plan
        self.provenance = provenance
        self.clock = clock
        self.max_retries = max_retries
        #: how many attempts the commit took
        self.attempts = 0
        #: True if a commit owner failed in a way that leaves the outcome unknown
        self.outcome_unknown = False
        #: whether a concurrent commit landed after the read (checked by :meth:`catch_up`)
        self.contended = False
        #: in-commit timestamps before/after this commit; a winner may turn them on (conflicts.check_metadata)
        self._ict_before, self._ict_after = plan.ict_before, plan.ict_after

    def commit(self) -> int:
        """Commit and return the version; then run the post-commit hooks."""
        version = self._commit_loop()
        self._post_commit(version)
        return version

    def _commit_loop(self) -> int:
        plan = self.plan
        version = plan.read_version + 1
        prev_ict = plan.prev_timestamp if (self._ict_before or plan.enabling) else None
        retries = 0
        deadline = time.monotonic() + RETRY_BUDGET_S
        while True:
            self.attempts += 1
            commit_ts = ict.next_timestamp(self.clock, prev_ict) if self._ict_after else int(self.clock())
            data = self._serialize(version, commit_ts)
            if self._try_commit(version, data, commit_ts):
                return version
            if plan.read_version == -1:
                raise ConcurrentModificationError(
                    f"a table was created at {self.table.uri} concurrently (version 0 exists)",
                    winning_version=0, reason="table_created")
            if self._out_of_retries(retries, deadline):
                raise CommitFailedError(
                    f"gave up committing to {self.table.uri} after {retries + 1} attempts: other writers "
                    f"kept taking the next version (last tried {version})", retryable=True, conflict=True,
                    version=version)
            retries += 1
            sleep_jittered(min(BACKOFF_FIRST_S * 2 ** min(retries, 20), BACKOFF_MOST_S))
            version, prev_ict = self.catch_up(version, prev_ict)

    def catch_up(self, version: int, prev_ict: int | None) -> tuple[int, int | None]:
        """After losing ``version``: check each winner from it on for conflicts with the plan
        (raises ConcurrentModificationError); returns the next free version and the in-commit
        timestamp floor after the winners.

        Reads the winners one by one until the first missing one (as Delta Spark does), rather
        than trusting a directory listing to be complete.
        """
        plan = self.plan
        w = version
        while True:
            try:
                actions = self.table.read_commit(w)
            except VersionNotFoundError:
                break
            check_conflicts(plan.read_set, WinningCommit.from_actions(w, actions), can_write=check_writable)
            self.contended = True
            if not self._ict_after and ict.is_enabled(plan.read_set.protocol, plan.read_set.metadata):
                # the winner turned in-commit timestamps on and the checks let us continue on its
                # metadata: from now on this commit carries one too (ConflictChecker's
                # resolveTimestampOrderingConflicts)
                self._ict_before = self._ict_after = True
            if self._ict_after:
                prev_ict = ict.timestamp_of(actions) if self._ict_before else None
                if prev_ict is None:
                    prev_ict = self._commit_file_mtime(w)
            w += 1
        return w, prev_ict

    def _out_of_retries(self, retries: int, deadline: float) -> bool:
        if self.max_retries is not None:
            return retries >= self.max_retries
        return retries + 1 >= MAX_ATTEMPTS or time.monotonic() > deadline

    def _commit_file_mtime(self, version: int) -> int | None:
        try:
            return self.table.storage.mtime_ms(commit_path(version))
        except (OSError, FileNotFoundError):
            return None

    def _try_commit(self, version: int, data: bytes, commit_ts: int) -> bool:
        """One attempt; True if it landed, False if the version was taken by someone else."""
        owner = self.plan.owner
        if owner is None:
            return self._put_commit_file(version, data)
        try:
            owner.commit(self.table.storage, self.plan.table_id, version, data, commit_ts)
            return True
        except CommitFailedError as e:
            if e.conflict:
                return False
            self.outcome_unknown = isinstance(e, CommitOutcomeUnknownError)
            raise
        except DeltaError:
            raise
        except Exception as e:
            self.outcome_unknown = True
            raise CommitFailedError(
                f"commit owner failed while committing version {version} of {self.table.uri}: "
                f"{type(e).__name__}: {e}; the outcome is unknown, check the table before retrying",
                retryable=False, version=version) from e

    def _put_commit_file(self, version: int, data: bytes) -> bool:
        """Put-if-absent of the commit file; a put that looked failed is resolved by reading ``version`` back.

        A store may report a commit that landed as failed: a PUT that timed out after the
        object was written, whose conditional retry is then refused because the object
        exists (HTTP 412), or a connection lost after the write. The file at ``version``
        tells: if its ``commitInfo.txnId`` is this transaction's, the commit is ours and
        landed (retrying at the next version would commit the same data twice); if it is
        another writer's, ours can never land there (put-if-absent), so this is a lost race
        like any other and the commit goes on to the next version. A put that raised and
        left no commit file behind has an unknown outcome (the request may still land),
        reported as :class:`CommitOutcomeUnknownError` so that nothing the commit would
        reference is deleted.
        """
        if not self._predecessor_listed(version):
            check_caught_up_log(self.table.storage, self.plan.read_version, version)
        check_commit_follows_log(self.table.storage, version)
        self.outcome_unknown = True     # while the put is in flight (an interrupt leaves it so)
        try:
            landed = self.table.storage.put_if_absent(commit_path(version), data)
            self.outcome_unknown = False
            if landed:
                self._refuse_if_in_hole(version)
                return True
        except DeltaError as e:
            # refused before writing (no atomic put on this store), or landed where it cannot be told
            # whether anyone reads it (an undecided hole check: the commit file stays)
            self.outcome_unknown = isinstance(e, CommitOutcomeUnknownError)
            raise
        except Exception as e:
            try:
                held = self._commit_at(version)
            except Exception:       # the read-back failed too: whose the version is stays unknown
                held = None
            self.outcome_unknown = held is None
            if held is True:
                log.warning("committing version %d of %s reported %s: %s, but the commit file there is this "
                            "transaction's: committed", version, self.table.uri, type(e).__name__, e)
                self._refuse_if_in_hole(version)
                return True
            if held is False:       # a put-if-absent can never land on a taken version: a lost race
                log.warning("committing version %d of %s reported %s: %s; another writer's commit holds that "
                            "version, so this one did not land there: trying the next version", version,
                            self.table.uri, type(e).__name__, e)
                return False
            raise CommitOutcomeUnknownError(
                f"writing the commit file of version {version} of {self.table.uri} failed with "
                f"{type(e).__name__}: {e}; the write may still land: read the table (its txn record or "
                f"history) before committing the same data again", retryable=False, version=version) from e
        try:
            return self._commit_at(version) is True
        except Exception as e:      # the version is taken, by us or another writer: not known which
            self.outcome_unknown = True
            raise CommitOutcomeUnknownError(
                f"version {version} of {self.table.uri} exists but could not be read back ({type(e).__name__}: "
                f"{e}), so whether it is this commit is unknown: read the table before committing the same data "
                "again", retryable=False, version=version) from e

    def _refuse_if_in_hole(self, version: int) -> None:
        """After our put landed: if cleanup raced it and left our commit below a newer checkpoint
        (:func:`.commit_successor.landed_below_newer_log`: a checkpoint above ``v`` while a commit around ``v``
        is gone, proven not to hold our commit), withdraw the commit file - no reader
        replays it below the checkpoint and nobody built on it, while left in place it would skew time travel
        by timestamp - and raise :class:`InvalidCommittedVersionError`. A checkpoint that cannot be told
        apart from one built on our commit leaves the file (withdrawing a live commit would lose it) and
        reports :class:`CommitOutcomeUnknownError`."""
        try:
            newer = landed_below_newer_log(self.table.storage, version, self._hole_evidence)
        except Exception as e:      # our commit landed: whether it lies in a hole is what is not known
            self.outcome_unknown = True
            self.table.forget_cached_snapshot()
            raise CommitOutcomeUnknownError(
                f"version {version} of {self.table.uri} landed, but checking whether metadata cleanup raced it "
                f"below a newer checkpoint failed ({type(e).__name__}: {e}). The commit file was left in place; "
                "read the table to see whether the change is there before redoing it", version=version) from e
        if newer is None:
            return
        self.table.forget_cached_snapshot()     # its update would replay our file, which readers of the checkpoint do not
        if newer.undecided:
            raise CommitOutcomeUnknownError(
                f"version {version} of {self.table.uri} landed, and checkpoint {newer.version} is above it while "
                "commits around it are gone: either metadata cleanup raced this commit (then it "
                "lies below the checkpoint, unread) or another writer built on it at once (on a clock of its own), "
                "and the checkpoint does not tell which. "
                "The commit file was left in place. Before redoing the change, read the latest snapshot: the change "
                "is in the table only if it shows there - its txn record (snapshot().transaction_version(app_id)) "
                "when this transaction set one, or else what it changed (snapshot().files(), .metadata); "
                "history() is no proof, it lists this commit file even when it lies in a hole", version=version)
        try:
            self.table.storage.delete(commit_path(version))
            withdrawn = "The commit file was withdrawn"
        except Exception as e:  # still unread below the checkpoint; say so rather than hide the cause
            withdrawn = (f"Withdrawing it failed ({type(e).__name__}: {e}): {commit_path(version)} stays below the "
                         "checkpoint until metadata cleanup removes it")
        raise InvalidCommittedVersionError(
            f"version {version} of {self.table.uri} landed below checkpoint {newer.version}, written before it: "
            "metadata cleanup removed the commits after this transaction's read version while it "
            f"committed. {withdrawn}; read the table again and redo the operation",
            version=version, current_version=newer.version)

    def _predecessor_listed(self, version: int) -> bool:
        """Whether ``version - 1`` is the read snapshot's version (found at the top of a listing), not a winner
        read by name after a lost race - which may be another writer's commit left in a hole in place of the
        real one (:func:`.commit_successor.check_caught_up_log`)."""
        return version - 1 <= self.plan.read_version

    def _hole_evidence(self) -> CommitEvidence:
        """What of this commit a checkpoint built on it shows (asked only when the log looks like a hole).

        Added: files new to the table, as the log spells them (a checkpoint's paths are the log's strings,
        p=a%20b/..., not decoded), which no checkpoint written before our put can name - those this writer
        wrote under a new unique name (``AddFile.fresh``), and others whose path the read snapshot names
        neither live (``log_path``: a restored file) nor removed (a tombstone: a file added back), when that
        snapshot can still be read; never a file this commit replaces (a new DV) or re-adds (RESTORE).
        Removed: the files this commit removes and does not add back, with our remove's deletionTimestamp.
        """
        plan = self.plan
        if self.provenance.operation in FILE_REINSTATING_OPERATIONS:
            return CommitEvidence()
        replaced = {r.path for r in plan.removes}
        candidates = [a for a in plan.adds if a.log_path is None and a.path not in replaced]
        known = None if all(a.fresh for a in candidates) else self._paths_named_before()
        added = frozenset(log_spelling(a.path, a.log_path) for a in candidates
                          if a.fresh or (known is not None and not {log_spelling(a.path, None),
                                                                    canonical_log_path(log_spelling(a.path, None))}
                                         & known))
        re_added = {a.path for a in plan.adds}
        removed = {log_spelling(r.path, r.log_path): r.deletion_timestamp for r in plan.removes
                   if r.path not in re_added and isinstance(r.deletion_timestamp, int)}
        return CommitEvidence(added=added, removed=removed)

    def _paths_named_before(self) -> set[str] | None:
        """Every path (log spelling and canonical key) the read snapshot names, live or removed; None when it
        cannot be read any more (cleanup removed what it was built from)."""
        snap = self.plan.read_snapshot
        if snap is None:
            return set()
        try:
            names = snap.files().column(LOG_PATH_COLUMN).to_pylist()
            names += snap.tombstones(now_ms=0).column(LOG_PATH_COLUMN).to_pylist()   # expired ones too
        except Exception:       # noqa: BLE001 - not readable: no path of it is known to be new
            return None
        return {k for p in names if p is not None for k in (p, canonical_log_path(p))}

    def _commit_at(self, version: int) -> bool | None:
        """Whose commit file ``version`` holds: True this transaction's (its ``commitInfo.txnId``),
        False another writer's, None none yet, or not known (this transaction has no txnId)."""
        try:
            actions = self.table.read_commit(version)
        except (VersionNotFoundError, FileNotFoundError):
            return None
        if not self.provenance.txn_id:
            return None
        return is_own_commit(actions, self.provenance.txn_id)

    def _serialize(self, version: int, commit_ts: int) -> bytes:
        return self.serialize(version, commit_ts)

    def serialize(self, version: int, commit_ts: int, extra_actions: tuple[dict[str, Any], ...] = ()) -> bytes:
        """The commit file of the plan as ``version`` (commitInfo first; ``extra_actions`` after
        protocol and metadata, e.g. a multi-table transaction's ``transactionGroup``)."""
        plan = self.plan
        isolation = self.provenance.recorded_isolation_level(plan.isolation_level, self.contended)
        info = build_commit_info(self.provenance, commit_ts, self._ict_after, plan.read_version,
                                 isolation, plan.blind_append,
                                 operation_metrics(plan.adds, plan.removes, self.provenance.operation_metrics,
                                                   self.provenance.operation))
        actions: list[dict[str, Any]] = [{"commitInfo": info}]
        if plan.protocol is not None:
            actions.append({"protocol": plan.protocol.to_json()})
        metadata = plan.metadata
        if metadata is not None:
            if plan.enabling:
                metadata = ict.with_enablement(metadata, version, commit_ts)
            actions.append({"metaData": metadata.to_json()})
        actions.extend(extra_actions)
        now = int(self.clock())
        for t in plan.txns:
            actions.append(Txn(t.app_id, t.version, now).to_json())
        for d in plan.domains:
            actions.append(d.to_json())
        for r in plan.removes:
            actions.append(r.to_json())
        for a in plan.adds:
            actions.append(a.to_json())
        return dumps_actions(actions)

    def _post_commit(self, version: int) -> None:
        """Hooks after a successful commit; their failures never undo the commit.

        The automatic checkpoint is only called on versions its interval selects,
        judged from the metadata just committed, so ordinary commits do not pay
        for loading the new snapshot.
        """
        try:
            if version % checkpoint_interval(self.plan.final_configuration) != 0:
                return
        except DeltaError:
            pass    # let the hook report the bad property
        try:
            maybe_auto_checkpoint(self.table, version)
        except Exception as e:  # the commit stands; a checkpoint can be written later
            log.warning("version %d of %s committed, but the automatic checkpoint failed: %s: %s",
                        version, self.table.uri, type(e).__name__, e)
