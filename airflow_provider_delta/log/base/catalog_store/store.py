"""The SQL catalog's state operations: each one database transaction.

Ratifying version v of a table is ``UPDATE delta_catalog_tables SET latest_version = v
WHERE table_id = t AND latest_version = v - 1`` plus the commit row: of concurrent
proposers of v exactly one UPDATE matches (PostgreSQL re-checks the WHERE clause on
the row the winner committed; SQLite runs one writer at a time), and the primary key
(table_id, version) backs it up. This is PROTOCOL.md's "a catalog must not ratify
version v until it has ratified v - 1, and must ratify v at most once".

Group ratification (the multi-table transactions RFC) runs that step for every
member inside ONE database transaction, after moving the group from ``staged`` to
``ratified``: one stale member rolls everything back, so either all members are
ratified or none. Members are updated in table-id order so two groups sharing
tables cannot deadlock each other on PostgreSQL.
"""
from __future__ import annotations

import uuid
from typing import Any, Iterable, Sequence

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from ..catalog import StagedCommit
from ..commit_owner.sql_engine import UNREACHABLE, SqlDatabase
from ..errors import CatalogUnavailableError, CommitOutcomeUnknownError, InvalidArgumentError
from .records import (ABORTED, OPEN, RATIFIED, STAGED, now_ms, GroupMember, GroupRecord, TableRecord, TableView,
                      dumps_members, loads_members)
from .schema import commits, ensure_schema, groups, identity, tables, tombstones


class StaleMembers(Exception):
    """Group ratification refused: these members' proposed versions are no longer next
    (``{table_id: latest ratified version}``), or the group is not staged (``state``)."""

    def __init__(self, stale: dict[str, int], state: str | None = None):
        super().__init__(f"stale members {stale}, group state {state}")
        self.stale = stale
        self.state = state


class CatalogStore:
    """The catalog's database: tables, ratified commits, groups, tombstones."""

    def __init__(self, url: Any, engine_kwargs: dict[str, Any] | None = None):
        self.db = SqlDatabase(url, engine_kwargs, "the catalog database", CatalogUnavailableError)
        try:
            ensure_schema(self.db.engine)
        except UNREACHABLE as e:
            raise self.db.unavailable(e) from None

    def catalog_id(self) -> str:
        """This catalog's stable id, made (a random UUID) by the first client that asks and kept in
        the database: the same for every client of the database, different for every database."""
        cached = getattr(self, "_catalog_id", None)
        if cached is None:
            cached = self._catalog_id = self._read_or_make_id()
        return cached

    def _read_or_make_id(self) -> str:
        query = sa.select(identity.c.value).where(identity.c.name == "catalog_id")
        with self.db.retry_safe(), self.db.tx(write=False) as conn:
            known = conn.execute(query).scalar()
        if known is not None:
            return known
        try:
            with self.db.retry_safe(), self.db.tx(write=True) as conn:
                if conn.execute(query).scalar() is None:
                    conn.execute(sa.insert(identity).values(name="catalog_id", value=str(uuid.uuid4())))
        except sa.exc.IntegrityError:
            pass                          # another client made it first: theirs is the id
        with self.db.retry_safe(), self.db.tx(write=False) as conn:
            return conn.execute(query).scalar_one()

    # ------------------------------------------------------------------ tables
    def register(self, table_id: str, table_uri: str, version: int) -> bool:
        """Record a new table whose versions up to ``version`` are published; False if the id is known."""
        try:
            with self.db.retry_safe(), self.db.tx(write=True) as conn:
                if _table(conn, table_id) is not None:
                    return False
                conn.execute(sa.insert(tables).values(table_id=table_id, table_uri=table_uri,
                                                      latest_version=version, published_version=version,
                                                      updated_ms=now_ms()))
        except sa.exc.IntegrityError:
            return False
        return True

    def table(self, table_id: str) -> TableRecord | None:
        with self.db.retry_safe(), self.db.tx(write=False) as conn:
            return _table(conn, table_id)

    def table_by_uri(self, table_uri: str) -> TableRecord | None:
        with self.db.retry_safe(), self.db.tx(write=False) as conn:
            r = conn.execute(sa.select(tables).where(tables.c.table_uri == table_uri)).first()
            return None if r is None else _record(r)

    def views(self, table_ids: Sequence[str] = (), table_uris: Sequence[str] = ()) -> dict[str, TableView]:
        """Every named table (by id, or by URI) as of ONE committed state of the catalog (one read
        transaction); keyed by what was asked. Unknown tables are missing from the answer."""
        out: dict[str, TableView] = {}
        with self.db.retry_safe(), self.db.tx(write=False) as conn:
            asked = [(t, _table(conn, t)) for t in table_ids]
            for uri in table_uris:
                r = conn.execute(sa.select(tables).where(tables.c.table_uri == uri)).first()
                asked.append((uri, None if r is None else _record(r)))
            for tid, rec in asked:
                if rec is None:
                    continue
                rows = conn.execute(sa.select(commits).where(
                    commits.c.table_id == rec.table_id, commits.c.version > rec.published_version,
                    commits.c.version <= rec.latest_version).order_by(commits.c.version)).fetchall()
                out[tid] = TableView(rec, tuple(_staged(r) for r in rows),
                                     min((int(r.ratified_ms) for r in rows), default=None))
        return out

    def ratified_names(self, table_id: str, versions: Iterable[int]) -> dict[int, str]:
        vs = sorted(set(versions))
        if not vs:
            return {}
        with self.db.retry_safe(), self.db.tx(write=False) as conn:
            rows = conn.execute(sa.select(commits.c.version, commits.c.file_name).where(
                commits.c.table_id == table_id, commits.c.version.in_(vs))).fetchall()
        return {int(r.version): r.file_name for r in rows}

    # --------------------------------------------------------------- ratifying
    def ratify(self, table_id: str, commit: StagedCommit) -> bool:
        """Make ``commit`` version v if the table's latest is v - 1 and the file is not abandoned."""
        try:
            with self.db.tx(write=True) as conn:
                return _ratify_in(conn, table_id, commit, None)
        except sa.exc.IntegrityError:
            return False

    def ratify_group(self, group_id: str, members: Sequence[GroupMember] | None = None) -> tuple[GroupMember, ...]:
        """Ratify every member of a group at once; :class:`StaleMembers` (nothing changed) if not.

        ``members=None``: the group's staged members (it must be ``staged``). Given members
        record a group that was never staged as ``ratified`` in the same database transaction
        (``with catalog.transaction()``: no audit, so no separate staging write).
        """
        stale: dict[str, int] = {}
        try:
            with self.db.tx(write=True) as conn:
                if members is not None:
                    members = tuple(members)
                    known = conn.execute(sa.select(groups.c.state).where(groups.c.group_id == group_id)).first()
                    if known is not None:       # an earlier attempt whose answer was lost, or an abort
                        raise StaleMembers({}, known.state)
                    conn.execute(sa.insert(groups).values(group_id=group_id, state=RATIFIED,
                                                          members=dumps_members(members),
                                                          created_ms=now_ms(), updated_ms=now_ms()))
                else:
                    row = conn.execute(sa.select(groups).where(groups.c.group_id == group_id)).first()
                    if row is None or row.state != STAGED:
                        raise StaleMembers({}, None if row is None else row.state)
                    members = loads_members(row.members)
                    # the members read must still be the group's (a concurrent re-stage replaces them)
                    moved = conn.execute(sa.update(groups).where(groups.c.group_id == group_id,
                                                                 groups.c.state == STAGED,
                                                                 groups.c.members == row.members)
                                         .values(state=RATIFIED, updated_ms=now_ms())).rowcount
                    if moved != 1:
                        raise StaleMembers({}, "changed")
                for m in sorted(members, key=lambda m: m.table_id):
                    if not _ratify_in(conn, m.table_id, m.staged(), group_id):
                        rec = _table(conn, m.table_id)
                        stale[m.table_id] = -1 if rec is None else rec.latest_version
                if stale:
                    raise StaleMembers(stale)       # rolls the whole transaction back
                return members
        except sa.exc.IntegrityError:
            raise StaleMembers({"?": -1}) from None
        except UNREACHABLE as e:      # e.g. SQLite locked past the busy timeout, a connection lost
            detail = str(self.db.unavailable(e))
            raise CommitOutcomeUnknownError(
                f"transaction {group_id}: the catalog failed while ratifying it ({detail}); whether it is "
                "ratified is unknown: call publish() again (it finds the group ratified, or ratifies it)") from None

    def mark_published(self, versions: dict[str, int]) -> None:
        """Record ``{table_id: version}`` as published through that version (never moves back)."""
        with self.db.retry_safe(), self.db.tx(write=True) as conn:
            for table_id, version in sorted(versions.items()):
                conn.execute(sa.update(tables).where(tables.c.table_id == table_id,
                                                     tables.c.published_version < version,
                                                     tables.c.latest_version >= version)
                             .values(published_version=version, updated_ms=now_ms()))

    def tombstone(self, table_id: str, version: int, file_name: str) -> bool:
        """Mark a staged file abandoned (True) unless it is ratified (False); then it may be deleted."""
        try:
            with self.db.retry_safe(), self.db.tx(write=True) as conn:
                _lock_table_row(conn, table_id)      # after a ratification in flight, or before it
                hit = conn.execute(sa.select(commits.c.file_name).where(
                    commits.c.table_id == table_id, commits.c.version == version)).first()
                if hit is not None and hit.file_name == file_name:
                    return False
                conn.execute(sa.insert(tombstones).values(table_id=table_id, file_name=file_name,
                                                          deleted_ms=now_ms()))
        except sa.exc.IntegrityError:
            return True    # already tombstoned
        return True

    # ------------------------------------------------------------------ groups
    def open_group(self, group_id: str) -> bool:
        """Record a new, empty group (``open``) so other processes can add members to it; False
        (nothing changed) when a group with this id exists already (a keyed begin raced by another)."""
        try:
            with self.db.retry_safe(), self.db.tx(write=True) as conn:
                if conn.execute(sa.select(groups.c.group_id).where(groups.c.group_id == group_id)).first():
                    return False
                conn.execute(sa.insert(groups).values(group_id=group_id, state=OPEN, members="[]",
                                                      created_ms=now_ms(), updated_ms=now_ms()))
        except sa.exc.IntegrityError:           # inserted by a concurrent begin between our read and insert
            return False
        return True

    def add_members(self, group_id: str, members: Sequence[GroupMember]) -> tuple[GroupMember, ...] | None:
        """Append members to an ``open`` group (participants staged by different tasks); the group's
        members after it, or None if the group is not open or already has one of these tables."""
        with self.db.retry_safe(), self.db.tx(write=True) as conn:
            r = conn.execute(sa.select(groups).where(groups.c.group_id == group_id)).first()
            if r is None or r.state != OPEN:
                return None
            old = loads_members(r.members)
            if {m.table_id for m in old} & {m.table_id for m in members}:
                return None
            new = old + tuple(members)
            moved = conn.execute(sa.update(groups).where(groups.c.group_id == group_id, groups.c.state == OPEN,
                                                         groups.c.members == r.members)
                                 .values(members=dumps_members(new), updated_ms=now_ms())).rowcount
            return new if moved == 1 else None

    def group(self, group_id: str) -> GroupRecord | None:
        with self.db.retry_safe(), self.db.tx(write=False) as conn:
            r = conn.execute(sa.select(groups).where(groups.c.group_id == group_id)).first()
        if r is None:
            return None
        return GroupRecord(r.group_id, r.state, loads_members(r.members), int(r.created_ms))

    def stage_group(self, group_id: str, members: Sequence[GroupMember]) -> bool:
        """Record the group's staged members (new or staged -> staged); False if it was aborted/ratified."""
        with self.db.retry_safe(), self.db.tx(write=True) as conn:
            if conn.execute(sa.update(groups).where(groups.c.group_id == group_id,
                                                    groups.c.state.in_((OPEN, STAGED)))
                            .values(state=STAGED, members=dumps_members(list(members)),
                                    updated_ms=now_ms())).rowcount == 1:
                return True
            if conn.execute(sa.select(groups.c.state).where(groups.c.group_id == group_id)).first() is not None:
                return False
            conn.execute(sa.insert(groups).values(group_id=group_id, state=STAGED,
                                                  members=dumps_members(list(members)),
                                                  created_ms=now_ms(), updated_ms=now_ms()))
            return True

    def abort_group(self, group_id: str, older_than_ms: int | None = None, create: bool = False) -> bool:
        """open/staged -> aborted (only if created at or before ``older_than_ms`` when given); False if
        the group is ratified or unknown. An aborted group can never be ratified. ``create``: an
        unknown group is recorded as aborted (a group its process never recorded: a ratification of
        it that is still in flight, or whose answer was lost, then fails or is seen)."""
        cond = [groups.c.group_id == group_id, groups.c.state.in_((OPEN, STAGED))]
        if older_than_ms is not None:
            cond.append(groups.c.created_ms <= older_than_ms)
        try:
            with self.db.retry_safe(), self.db.tx(write=True) as conn:
                if conn.execute(sa.update(groups).where(*cond).values(state=ABORTED, updated_ms=now_ms())).rowcount:
                    return True
                r = conn.execute(sa.select(groups.c.state).where(groups.c.group_id == group_id)).first()
                if r is None and create:
                    conn.execute(sa.insert(groups).values(group_id=group_id, state=ABORTED, members="[]",
                                                          created_ms=now_ms(), updated_ms=now_ms()))
                    return True
        except sa.exc.IntegrityError:           # ratified meanwhile (its row was inserted first)
            return False
        return r is not None and r.state == ABORTED

    def groups_of(self, table_id: str, states: Sequence[str]) -> list[GroupRecord]:
        """Groups in ``states`` that have ``table_id`` as a member (a LIKE pre-filter, then exact)."""
        with self.db.retry_safe(), self.db.tx(write=False) as conn:
            rows = conn.execute(sa.select(groups).where(groups.c.state.in_(tuple(states)),
                                                        groups.c.members.contains(table_id))).fetchall()
        out = [GroupRecord(r.group_id, r.state, loads_members(r.members), int(r.created_ms)) for r in rows]
        return [g for g in out if any(m.table_id == table_id for m in g.members)]

    def dispose(self) -> None:
        self.db.dispose()


def check_table_id(table_id: Any) -> str:
    if not isinstance(table_id, str) or not table_id or len(table_id) > 255:
        raise InvalidArgumentError(f"a table id must be a non-empty string of at most 255 characters, got "
                                   f"{table_id!r}")
    return table_id


def _lock_table_row(conn: Connection, table_id: str) -> None:
    """Serialize ratification and tombstoning of one table's staged files (PostgreSQL runs write
    transactions at READ COMMITTED: without a common row lock a ratification and a tombstone of the
    same file could both commit, and cleanup would delete a ratified commit). SQLite already runs
    one writer at a time (``BEGIN IMMEDIATE``); there this is a plain read."""
    conn.execute(sa.select(tables.c.table_id).where(tables.c.table_id == table_id).with_for_update())


def _ratify_in(conn: Connection, table_id: str, c: StagedCommit, group_id: str | None) -> bool:
    _lock_table_row(conn, table_id)      # the tombstone check below then sees every committed tombstone
    if conn.execute(sa.select(tombstones.c.file_name).where(
            tombstones.c.table_id == table_id, tombstones.c.file_name == c.file_name)).first() is not None:
        return False
    moved = conn.execute(sa.update(tables).where(tables.c.table_id == table_id,
                                                 tables.c.latest_version == c.version - 1)
                         .values(latest_version=c.version, updated_ms=now_ms())).rowcount
    if moved != 1:
        return False
    conn.execute(sa.insert(commits).values(table_id=table_id, version=c.version, file_name=c.file_name,
                                           file_size=c.file_size, commit_timestamp=c.commit_timestamp or 0,
                                           group_id=group_id, ratified_ms=now_ms()))
    return True


def _table(conn: Connection, table_id: str) -> TableRecord | None:
    r = conn.execute(sa.select(tables).where(tables.c.table_id == table_id)).first()
    return None if r is None else _record(r)


def _record(r: Any) -> TableRecord:
    return TableRecord(r.table_id, r.table_uri, int(r.latest_version), int(r.published_version))


def _staged(r: Any) -> StagedCommit:
    return StagedCommit(int(r.version), r.file_name, int(r.file_size), 0, int(r.commit_timestamp) or None)
