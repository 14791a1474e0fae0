"""Multi-table transactions (the RFC, delta-io/delta#7437) on the SQL catalog.

A :class:`CatalogTransaction` gathers one commit per participating table (``write`` for
Arrow data, ``table(uri).transaction()`` for file-level commits), then:

1. **stage**: each participant's commit is written as a staged commit at its proposed
   version (read version + 1), carrying the ``transactionGroup`` action (every
   participant, identical in all) and the commitInfo tag with the transaction id; the
   catalog records the members. Nothing is visible.
2. **group-ratify**: the catalog ratifies every member in one database transaction, or
   none. A member whose version another commit took makes the whole group fail; the
   group is then re-staged: each participant is checked against the commits that landed
   since (Delta's conflict rules; a conflict aborts the group with
   :class:`ConcurrentModificationError`) and moved to the next free version, all
   participants get the new participant set, and ratification is retried.
3. **publish**: each member is copied to ``_delta_log/<v>.json`` in order (idempotent);
   a publish cut short is finished by any client that reads the table through the
   catalog, or by :meth:`CatalogTransaction.publish` called again.

``abort`` makes the group unratifiable in the catalog first, then deletes its staged
commits and the data files they add. A group is reopened by id in another process
(:meth:`~.sql_catalog.SqlCatalog.group`) to audit, publish or abort it.
"""
from __future__ import annotations

import logging
import uuid
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from typing import TYPE_CHECKING, Any, Callable
from urllib.parse import unquote

from ..base import ict
from ..base.catalog_store.records import ABORTED, OPEN, RATIFIED, STAGED, GroupMember, TableRecord, TableView
from ..base.catalog_store.store import StaleMembers
from ..base.catalog_store.table_source import write_staged
from ..base.commit_actions import dumps_actions
from ..base.errors import DeltaError, GroupCommitError, InvalidArgumentError
from ..base.names import STAGED_COMMITS_DIR, commit_path
from ..base.storage import canonical_uri
from ..base.transaction_group import TRANSACTION_GROUP_ACTION, TRANSACTION_ID_TAG, transaction_group
from ..read.action_lines import action_kind
from ..read.commit_reader import parse_json_lines
from ..read.table_log import TableLog
from ..write.staged_rebase import catch_up_staged, restamp
from ..write.transaction import Transaction
from ..write.writer import delete_quietly, prepare_write

if TYPE_CHECKING:
    import pyarrow as pa

    from .sql_catalog import SqlCatalog

log = logging.getLogger(__name__)

#: At most this many participants' files are written at once.
MAX_PARALLEL_WRITES = 8
#: How many times a group is re-staged after losing a participant's version before giving up.
MAX_RESTAGES = 50


class GroupTable:
    """One participating table of a group: a file-level transaction on it joins the group."""

    def __init__(self, group: "CatalogTransaction", log_: TableLog, writer: str | None = None):
        self._group = group
        self.log = log_
        self.writer = writer

    @property
    def uri(self) -> str:
        return self.log.uri

    def transaction(self, operation: str = "WRITE", **kwargs: Any) -> Transaction:
        """A transaction whose commit (or clean ``with`` exit) enlists it in the group."""
        self._group._check_building()
        return Transaction(self.log, operation=operation, enlist=self.enlist, **kwargs)

    @property
    def enlist(self) -> Callable[[Transaction], None]:
        """What a transaction built elsewhere (``Transaction(..., enlist=p.enlist)``, e.g. a Spark
        write's) calls instead of committing: its commit joins the group as this participant's."""
        return partial(self._group._enlist, writer=self.writer)


class CatalogTransaction:
    """A multi-table transaction: every participant's commit becomes visible, or none.

    Use ``with catalog.transaction() as tx:`` (staged and group-ratified on a clean exit,
    aborted on an exception) or the staged form ``tx = catalog.begin()``, ``tx.stage()``,
    then ``tx.publish()`` or ``tx.abort()``. ``tx.id`` names the group; ``tx.versions``
    maps each table URI to its committed version once published.
    """

    def __init__(self, catalog: "SqlCatalog", group_id: str | None = None, members: tuple[GroupMember, ...] = (),
                 state: str = OPEN):
        self.catalog = catalog
        self.id = group_id or str(uuid.uuid4())
        self.state = state
        self._members = tuple(members)
        #: enlisted transactions by table URI (only in the process that built the group)
        self._txns: dict[str, Transaction] = {}
        #: the writer key of each enlisted transaction (recorded in its member)
        self._writers: dict[str, str | None] = {}
        self._written: dict[str, list[str]] = {}
        self.versions: dict[str, int] = {m.table_uri: m.version for m in members} if state == RATIFIED else {}
        #: whether the catalog has a row for the group (after stage(); a group committed in one go
        #: with ``with``/``publish()`` is recorded by its ratification, one database write)
        self._recorded = group_id is not None

    def __repr__(self) -> str:
        return f"CatalogTransaction({self.id!r}, state={self.state!r}, tables={sorted(self.tables)})"

    @property
    def tables(self) -> list[str]:
        return sorted(set(self._txns) | {m.table_uri for m in self._members})

    @property
    def members(self) -> tuple[GroupMember, ...]:
        """The staged commits (table, proposed version, file) once staged."""
        return self._members

    # -------------------------------------------------------------- building
    def table(self, uri: str, writer: str | None = None) -> GroupTable:
        """A participant for file-level commits: ``tx.table(uri).transaction(...)``.

        ``writer`` (see :meth:`staged_version`, which a retry asks first) is recorded in the member."""
        self._check_building()
        return GroupTable(self, self.catalog.table_log(uri), writer)

    def staged_version(self, uri: str, writer: str | None = None) -> int | None:
        """The proposed version of ``uri``'s member when ``writer`` staged it already, else None.

        What makes a writer's retry idempotent (an Airflow task retried after its staging
        succeeded but its success was lost): the retry finds its own staged commit and stages
        nothing. ``writer`` is a try-independent key of the writer (``<dag_id>:<task_id>``);
        a member staged by another writer, or by an anonymous one (``writer=None``: nobody can
        tell a retry from a second writer), is an :class:`InvalidArgumentError` (a table takes
        part once); an aborted group is a :class:`GroupCommitError`.
        """
        key = canonical_uri(uri)
        member = next((m for m in self._members if canonical_uri(m.table_uri) == key), None)
        if member is None:
            return None
        if writer is None or member.writer != writer:
            raise InvalidArgumentError(
                f"{uri} already has a commit in transaction {self.id}, staged by writer {member.writer!r} (this "
                f"is {writer!r}); a table takes part in a multi-table transaction once")
        if self.state not in (OPEN, STAGED, RATIFIED):
            raise GroupCommitError(f"transaction {self.id} is {self.state}", self.id, state=self.state)
        return member.version

    def write(self, uri: str, data: "pa.Table", mode: str = "append", *, writer: str | None = None,
              **kwargs: Any) -> int:
        """Write Arrow ``data`` into the catalog table ``uri`` as this group's commit on it;
        returns the proposed version (final once published).

        When ``writer`` (see :meth:`staged_version`) already staged ``uri`` in this group, nothing
        is written and its member's version is returned: a retried writer stages once."""
        earlier = self.staged_version(uri, writer)
        if earlier is not None:
            return earlier
        self._check_building()
        table = self.catalog.table_log(uri)
        self._check_new(table.uri)
        txn, written = prepare_write(table, data, mode, enlist=partial(self._enlist, writer=writer), **kwargs)
        self._written[table.uri] = written
        try:
            return txn.commit()
        except BaseException:
            self._written.pop(table.uri, None)
            if txn.surely_not_committed():      # (an enlisted commit lands only with its group: here always)
                delete_quietly(table, written)
            raise

    def _enlist(self, txn: Transaction, writer: str | None = None) -> None:
        if txn.read_version < 0:
            raise InvalidArgumentError(f"{txn.table.uri} has no table yet; create it first with "
                                       "DeltaTable.create(uri, schema, catalog=...) (tables are created outside "
                                       "multi-table transactions)")
        self._check_new(txn.table.uri)
        self._txns[txn.table.uri] = txn
        self._writers[txn.table.uri] = writer

    def _check_new(self, uri: str) -> None:
        if uri in self._txns or any(m.table_uri == uri for m in self._members):
            raise InvalidArgumentError(f"{uri} already has a commit in transaction {self.id}; a table takes "
                                       "part in a multi-table transaction once")

    def _check_building(self) -> None:
        if self.state != OPEN or (self._members and not self._recorded):
            raise InvalidArgumentError(f"transaction {self.id} is {self.state}; participants are added before "
                                       "stage()")

    # --------------------------------------------------------------- staging
    def record(self) -> "CatalogTransaction":
        """Record the (empty) group in the catalog, so that tasks in other processes add their
        participants to it (``catalog.group(id)``, ``tx.write(...)``, ``tx.stage()``): the
        write-audit-publish form across Airflow tasks. The group stays ``open`` until published."""
        if not self._recorded:
            self.catalog.store.open_group(self.id)
            self._recorded = True
        return self

    def stage(self) -> "CatalogTransaction":
        """Write every participant's staged commit and record the group; nothing becomes visible.

        On a recorded ``open`` group (see :meth:`record`) this adds this process's participants
        to it; :meth:`publish` then rewrites every member with the final participant set.
        """
        if self.state in (STAGED, RATIFIED):
            return self                  # (a retried writer's stage() on a group already past staging)
        if self._recorded and self.state == OPEN:
            return self._stage_into_open_group()
        members = self._stage_files()
        try:
            if not self.catalog.store.stage_group(self.id, members):
                raise GroupCommitError(f"transaction {self.id} was aborted before it was staged", self.id,
                                       state=ABORTED)
        except BaseException:
            self._delete_staged(members)
            raise
        self._recorded = True
        self.state = STAGED
        return self

    def _stage_into_open_group(self) -> "CatalogTransaction":
        if not self._txns:
            return self                  # this process added nothing
        known = self._members
        fresh = self._stage_files(known)
        if not fresh:
            return self
        members = self.catalog.store.add_members(self.id, fresh)
        if members is None:
            # refused: nothing references this process's staged commits and new data files
            self._delete_staged(fresh)
            for uri in {m.table_uri for m in fresh}:
                delete_quietly(self.catalog.table_log(uri), self._written.pop(uri, []))
            record = self.catalog.store.group(self.id)
            if record is not None and _staged_by_same_writers(fresh, record):
                # a concurrent try of the same writer staged these tables first: keep its members
                for uri in {m.table_uri for m in fresh}:
                    self._txns.pop(uri).settle(None)
                self._members = record.members
                return self
            raise GroupCommitError(
                f"transaction {self.id} is {record.state if record else 'unknown'} or already has a commit on one "
                "of these tables; nothing was added", self.id, state=record.state if record else None)
        self._members = members
        self._txns.clear()
        return self

    def _stage_files(self, known: tuple[GroupMember, ...] = ()) -> tuple[GroupMember, ...]:
        """Write every enlisted participant's staged commit (no catalog write); the new members.

        ``known`` are members staged earlier (by other tasks): the provisional participant set
        written now includes them; publishing writes the final one into every member."""
        if self._members and not known:
            return self._members
        if self.state != OPEN:
            raise GroupCommitError(f"transaction {self.id} is {self.state}; it cannot be staged", self.id,
                                   state=self.state)
        if len(self._txns) < 1:
            raise InvalidArgumentError(f"transaction {self.id} has no participant; write to a table first")
        tables = {uri: t.table for uri, t in self._txns.items()}
        committers = {uri: t.committer({TRANSACTION_ID_TAG: self.id}) for uri, t in self._txns.items()}
        proposed = {uri: c.plan.read_version + 1 for uri, c in committers.items()}
        ids = {uri: c.plan.table_id for uri, c in committers.items()}
        group = transaction_group(self.id, [(ids[u], v) for u, v in proposed.items()]
                                  + [(m.table_id, m.version) for m in known], self.catalog.name)

        def stage_one(uri: str) -> GroupMember:
            c = committers[uri]
            ts = ict.next_timestamp(c.clock, c.plan.prev_timestamp)
            staged = write_staged(tables[uri].storage, proposed[uri], c.serialize(proposed[uri], ts, (group,)), ts)
            return GroupMember(ids[uri], uri, proposed[uri], staged.file_name, staged.file_size, ts,
                               self._writers.get(uri))

        results = _each(stage_one, sorted(committers))
        members = [r for r in results if isinstance(r, GroupMember)]
        failed = [r for r in results if not isinstance(r, GroupMember)]
        if failed:
            self._delete_staged(members)
            raise failed[0]
        if known:
            return tuple(members)
        self._members = tuple(members)
        return self._members

    # ------------------------------------------------------------ publishing
    def publish(self) -> dict[str, int]:
        """Stage (if needed), group-ratify (re-staging past concurrent commits), then publish.

        Returns ``{table uri: version}``. Raises :class:`GroupCommitError` when the group
        can no longer be ratified (aborted) and :class:`ConcurrentModificationError` when a
        commit landed since staging conflicts with a participant (the group is aborted;
        nothing of it is visible).
        """
        if self.state == OPEN and self._recorded:
            self.stage()                 # this process's participants, if any
            if not self._members:
                raise InvalidArgumentError(f"transaction {self.id} has no participant")
            self._restage()              # every member gets the final participant set; open -> staged
            self.state = STAGED
        elif self.state == OPEN:
            self._stage_files()
        if self.state == RATIFIED:
            self._publish_members()
            return dict(self.versions)
        if self.state not in (OPEN, STAGED):
            raise GroupCommitError(f"transaction {self.id} is {self.state}", self.id, state=self.state)
        for _attempt in range(MAX_RESTAGES):
            try:
                self._members = self.catalog.store.ratify_group(self.id, None if self._recorded else self._members)
                break
            except StaleMembers as e:
                if e.state == RATIFIED:           # another process ratified it: same outcome
                    self._members = self.catalog.store.group(self.id).members  # type: ignore[union-attr]
                    break
                if e.state == "changed":          # another process re-staged it meanwhile: take its members
                    self._members = self.catalog.store.group(self.id).members  # type: ignore[union-attr]
                    continue
                if e.state is not None:
                    self.state = e.state
                    raise GroupCommitError(f"transaction {self.id} is {e.state}: it cannot be ratified",
                                           self.id, state=e.state) from None
                self._restage()
        else:
            raise GroupCommitError(f"transaction {self.id}: gave up after {MAX_RESTAGES} re-stagings; other "
                                   "commits kept taking the participants' versions (nothing was ratified)",
                                   self.id, retryable=True)
        self.state = RATIFIED
        self.versions = {m.table_uri: m.version for m in self._members}
        for uri, txn in self._txns.items():
            txn.settle(self.versions[uri])
        self._publish_members()
        return dict(self.versions)

    def _restage(self) -> None:
        """Move every member past the commits that landed since it was staged, or abort on a conflict."""
        old = self._members
        moved: list[tuple[GroupMember, list[dict[str, Any]], int, int | None]] = []
        try:
            for m in old:
                table = self.catalog.table_log(m.table_uri)
                actions = parse_json_lines(table.storage.read_bytes(f"{STAGED_COMMITS_DIR}/{m.file_name}"),
                                           m.file_name)
                version, floor = catch_up_staged(table, actions, m.version)
                if floor is None:
                    floor = m.commit_timestamp - 1          # nothing landed: keep its time (or later)
                moved.append((m, actions, version, floor))
        except DeltaError:
            self.abort()
            raise
        except FileNotFoundError as e:     # cleanup took a staged commit it judged abandoned
            self.abort()
            raise GroupCommitError(f"transaction {self.id}: a staged commit is gone ({e.filename}; metadata cleanup "
                                   "removed it as abandoned); nothing of the group was ratified, retry it",
                                   self.id, state=ABORTED, retryable=True) from None
        group = transaction_group(self.id, [(m.table_id, v) for m, _, v, _ in moved], self.catalog.name)
        members: list[GroupMember] = []
        try:
            for m, actions, version, floor in moved:
                new_actions, ts = restamp(actions, ict.system_clock, floor,
                                          {TRANSACTION_GROUP_ACTION: group[TRANSACTION_GROUP_ACTION]})
                storage = self.catalog.table_log(m.table_uri).storage
                staged = write_staged(storage, version, dumps_actions(new_actions), ts)
                members.append(GroupMember(m.table_id, m.table_uri, version, staged.file_name, staged.file_size, ts,
                                           m.writer))
            if self._recorded and not self.catalog.store.stage_group(self.id, members):
                raise GroupCommitError(f"transaction {self.id} was aborted while it was re-staged", self.id,
                                       state=ABORTED)
        except BaseException:
            self._delete_staged(members)
            raise
        self._members = tuple(members)
        self._retire(old)

    def _publish_members(self) -> None:
        """Publish every member (one catalog read and one write for the whole group); a failure is
        only logged: the group is ratified, and any client finishes publishing."""
        try:
            views = {}
            for m in self._members:     # the usual case: everything before the member is published
                if self.catalog.table_log(m.table_uri).storage.exists(commit_path(m.version - 1)):
                    views[m.table_id] = TableView(TableRecord(m.table_id, m.table_uri, m.version, m.version - 1),
                                                  (m.staged(),))
            others = [m.table_id for m in self._members if m.table_id not in views]
            if others:
                views.update(self.catalog.store.views(others))
            def publish_one(m: GroupMember) -> int:
                return self.catalog.source(m.table_uri).publish(m.table_id, views[m.table_id], record=False)

            done = {}
            for m, result in zip(self._members, _each(publish_one, list(self._members))):
                if isinstance(result, BaseException):   # the others are still published
                    log.warning("transaction %s is ratified, but publishing %s failed (%s: %s); the next "
                                "client will publish it", self.id, m.table_uri, type(result).__name__, result)
                else:
                    done[m.table_id] = result
            self.catalog.store.mark_published(done)
        except Exception as e:  # noqa: BLE001 - see the docstring
            log.warning("transaction %s is ratified, but publishing it did not finish (%s: %s); the next "
                        "client will", self.id, type(e).__name__, e)

    # --------------------------------------------------------------- abort
    def abort(self) -> None:
        """Give the group up: the catalog will never ratify it; its staged commits and the data
        files they add are deleted. A ratified group cannot be aborted (GroupCommitError)."""
        if self.state == RATIFIED:
            raise GroupCommitError(f"transaction {self.id} is ratified; it cannot be aborted", self.id,
                                   state=RATIFIED)
        if not self.catalog.store.abort_group(self.id, create=not self._recorded):
            record = self.catalog.store.group(self.id)
            state = record.state if record is not None else "unknown"
            raise GroupCommitError(f"transaction {self.id} is {state}; it cannot be aborted", self.id, state=state)
        self.state = ABORTED
        members = self._members or self._stored_members()
        self._delete_staged(members, data_files=True)
        for uri, paths in self._written.items():
            delete_quietly(self.catalog.table_log(uri), paths)
        for txn in self._txns.values():
            txn.settle(None)

    def _stored_members(self) -> tuple[GroupMember, ...]:
        record = self.catalog.store.group(self.id)
        return record.members if record is not None else ()

    def _retire(self, members: tuple[GroupMember, ...]) -> None:
        """Staged commits replaced by a re-stage: tombstoned (never ratifiable), then deleted."""
        for m in members:
            try:     # (an unrecorded group's files were known to nobody else: no tombstone needed)
                if not self._recorded or self.catalog.store.tombstone(m.table_id, m.version, m.file_name):
                    self.catalog.table_log(m.table_uri).storage.delete(f"{STAGED_COMMITS_DIR}/{m.file_name}")
            except Exception as e:  # noqa: BLE001 - metadata cleanup removes it later
                log.warning("could not remove replaced staged commit %s: %s", m.file_name, e)

    def _delete_staged(self, members: Any, data_files: bool = False) -> None:
        for m in members:
            storage = self.catalog.table_log(m.table_uri).storage
            rel = f"{STAGED_COMMITS_DIR}/{m.file_name}"
            try:
                if data_files and m.table_uri not in self._written:
                    added = [unquote(a["add"]["path"]) for a in parse_json_lines(storage.read_bytes(rel), rel)
                             if action_kind(a) == "add"]
                    delete_quietly(self.catalog.table_log(m.table_uri), self._unreferenced(m.table_uri, added))
                storage.delete(rel)
            except (OSError, FileNotFoundError, DeltaError) as e:
                log.warning("could not delete staged commit %s of aborted transaction %s: %s", rel, self.id, e)

    def _unreferenced(self, uri: str, paths: list[str]) -> list[str]:
        """The ``paths`` the table's latest version does not reference: a staged commit may re-add a
        live file (new tags or stats), and giving the group up must not delete the table's data. An
        unreadable table: none (fail safe; vacuum removes the rest later)."""
        if not paths:
            return []
        try:
            live = set(self.catalog.table_log(uri).snapshot().files().column("path").to_pylist())
        except (OSError, DeltaError) as e:
            log.warning("aborted transaction %s keeps the data files of %s: the table cannot be read (%s)",
                        self.id, uri, e)
            return []
        return [p for p in paths if p not in live]

    # ------------------------------------------------------- context manager
    def __enter__(self) -> "CatalogTransaction":
        return self

    def __exit__(self, exc_type, exc, tb) -> bool:
        if exc_type is not None:
            if self.state in (OPEN, STAGED):
                try:
                    self.abort()
                except DeltaError as e:
                    log.warning("aborting transaction %s after %s failed: %s", self.id, exc_type.__name__, e)
            return False
        self.publish()
        return False


def _staged_by_same_writers(fresh: tuple[GroupMember, ...], record: Any) -> bool:
    """Whether the group (still open, staged or ratified) holds a member of every table of ``fresh``,
    each staged by the same writer: ``fresh`` lost a race against another try of that writer."""
    if record.state not in (OPEN, STAGED, RATIFIED):
        return False
    held = {m.table_id: m.writer for m in record.members}
    return all(m.writer is not None and held.get(m.table_id) == m.writer for m in fresh)


def _each(fn: Callable[[Any], Any], items: list[Any]) -> list[Any]:
    """``fn`` of every item, the items' file writes overlapping (each table's staged or published
    commit is a durable write of its own: fsync dominates a group commit); an item's exception is
    returned in its place, so the caller sees every outcome."""
    def guarded(item: Any) -> Any:
        try:
            return fn(item)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller
            return e
    if len(items) < 2:
        return [guarded(i) for i in items]
    with ThreadPoolExecutor(max_workers=min(len(items), MAX_PARALLEL_WRITES)) as pool:
        return list(pool.map(guarded, items))
