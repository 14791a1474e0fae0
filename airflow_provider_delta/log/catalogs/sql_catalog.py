"""``SqlCatalog``: a catalog in PROTOCOL.md's sense on a SQL database (SQLite file or PostgreSQL).

It creates and serves catalog-managed tables (``catalogManaged``: staged commits it
ratifies, published by the writer) and coordinates multi-table transactions (the
``multiTableTransaction-dev`` RFC): one database transaction ratifies every participant
of a group or none. Readers that go through it see groups atomically;
:meth:`SqlCatalog.snapshots` reads several tables at one catalog state.

Where the pieces live: the database side (tables, ratification, groups) in
``log/base/catalog_store/``; one table's commit source in ``table_source``; the group in
:mod:`.group`. See docs/multi-table-transactions.md.
"""
from __future__ import annotations

import itertools
import uuid
from typing import Any, Iterable

from ..base.catalog_store.identity import require_this_catalog
from ..base.catalog_store.pinned import PinnedTableSource
from ..base.catalog_store.records import ABORTED
from ..base.catalog_store.store import CatalogStore
from ..base.catalog_store.table_source import PUBLISH_GRACE_MS, CatalogTableSource
from ..base.commit_owner.sql_engine import public_url
from ..base.errors import GroupCommitError, InvalidArgumentError, InvalidTableStateError, TableNotFoundError
from ..base.features import CATALOG_MANAGED_FEATURES
from ..base.actions import Protocol
from ..read.protocol_metadata import load_protocol_metadata
from ..read.segment import build_segment
from ..base.storage import Storage, canonical_uri
from ..read.snapshot import Snapshot
from ..read.table_log import TableLog
from .group import CatalogTransaction


#: the namespace of transaction ids derived from a caller's key (:meth:`SqlCatalog.begin`)
KEYED_GROUP_NAMESPACE = uuid.UUID("6f1f3c1e-3d4b-5c7a-9e2d-8b0a4f6c2d19")


def keyed_group_id(key: str, generation: int) -> str:
    """The id of the ``generation``-th transaction begun with ``key`` (0 first; the next one after
    an abort): a name-based UUID, so every process derives the same id without asking anyone."""
    return str(uuid.uuid5(KEYED_GROUP_NAMESPACE, f"{key}#{generation}"))


def require_unregistered_version_zero(uri: str, latest: int | None, protocol: Protocol) -> None:
    """What :meth:`SqlCatalog.register` takes over: a catalog-managed table with version 0 only (a
    creation cut short). Later versions would be commits no catalog ratified."""
    if not set(protocol.reader_features or ()) & CATALOG_MANAGED_FEATURES:
        raise InvalidTableStateError(f"{uri} is not a catalog-managed table (its protocol has no catalogManaged "
                                     "reader feature); only a catalog-managed table's creation can be finished")
    if latest != 0:
        raise InvalidTableStateError(f"{uri} has versions up to {latest} in _delta_log; only a table whose "
                                     "creation was cut short (version 0 alone) can be registered")


class SqlCatalog:
    """A SQL catalog: ``SqlCatalog("sqlite:////abs/catalog.db")`` or ``SqlCatalog("postgresql://...")``.

    ``allow_maintenance`` is the catalog's permission for clients to run metadata cleanup and
    vacuum on its tables (PROTOCOL.md forbids them unless the catalog allows; ours does by
    default, and its cleanup never touches a ratified, unpublished commit).
    ``publish_grace_ms``: a reader publishes a ratified commit its writer left unpublished
    once it is this old. ``storage_options`` are used for every table it opens.
    """

    def __init__(self, url: Any, *, name: str | None = None, allow_maintenance: bool = True,
                 publish_grace_ms: int = PUBLISH_GRACE_MS, storage_options: dict[str, Any] | None = None,
                 engine_kwargs: dict[str, Any] | None = None):
        self.store = CatalogStore(url, engine_kwargs)
        #: the ``coordinatingCatalog`` written into transaction groups (no password)
        self.name = name or public_url(self.store.db.url)
        self.allow_maintenance = bool(allow_maintenance)
        self.publish_grace_ms = int(publish_grace_ms)
        self.storage_options = dict(storage_options or {})
        self._init = (url, name, allow_maintenance, publish_grace_ms, storage_options, engine_kwargs)
        self._logs: dict[str, TableLog] = {}

    def __repr__(self) -> str:
        return f"SqlCatalog({self.name!r})"

    def __getstate__(self) -> tuple:
        return self._init     # an engine does not pickle; a copy in another process reconnects

    def __setstate__(self, state: tuple) -> None:
        url, name, allow, grace, options, kwargs = state
        self.__init__(url, name=name, allow_maintenance=allow, publish_grace_ms=grace, storage_options=options,
                      engine_kwargs=kwargs)

    def dispose(self) -> None:
        """Close pooled database connections (before forking, or at the end of a task)."""
        self.store.dispose()

    # ---------------------------------------------------------------- tables
    def source(self, uri: str, storage_options: dict[str, Any] | None = None) -> CatalogTableSource:
        """The commit source and committer of the table at ``uri`` (what ``DeltaTable(uri, catalog=c)`` uses)."""
        storage = Storage(uri, storage_options if storage_options is not None else self.storage_options)
        return CatalogTableSource(self.store, storage, self.name, self.allow_maintenance, self.publish_grace_ms)

    def table_log(self, uri: str) -> TableLog:
        """The read side of a catalog table (the write engine's view of it), one per table per catalog
        object so its latest snapshot is refreshed incrementally (not for use from several threads)."""
        key = canonical_uri(uri)
        log_ = self._logs.get(key)
        if log_ is None:
            log_ = self._logs[key] = TableLog(uri, self.storage_options, commit_owner=self.source(uri))
        return log_

    @property
    def catalog_id(self) -> str:
        """This catalog's stable id (kept in its database), recorded by every table created through it."""
        return self.store.catalog_id()

    def register(self, uri: str, adopt: bool = False) -> str:
        """Finish creating the catalog-managed table at ``uri`` whose creator died between publishing
        version 0 and registering it (the table then exists in storage but no client can use it);
        returns its table id. Idempotent: a table already registered here under this URI is fine.

        Only such a table is taken: version 0 alone in ``_delta_log``, a ``catalogManaged`` protocol,
        its id and URI unknown to this catalog. Anything else is refused and nothing changes:
        :class:`TableNotFoundError` (no table), :class:`InvalidTableStateError` (not catalog-managed,
        versions after 0 whose ratification no catalog recorded, or an id or URI registered for
        another table, or a table that records another catalog's id: taking that would fork it).
        A table that records no catalog (created before tables recorded it) is refused unless
        ``adopt=True``: pass it only when you know no other catalog holds the table. To clean such a
        table up instead, delete its directory.
        """
        log_ = TableLog(uri, self.storage_options)
        listing = log_.listing()
        segment = build_segment(log_.storage, listing)          # TableNotFoundError when there is none
        protocol, metadata = load_protocol_metadata(log_.storage, segment)
        table_uri = canonical_uri(log_.uri)
        known = self.store.table(metadata.id)
        if known is not None and known.table_uri == table_uri:
            return metadata.id
        require_unregistered_version_zero(log_.uri, listing.latest, protocol)
        if known is not None:
            raise InvalidTableStateError(f"table id {metadata.id} of {log_.uri} is registered in catalog {self.name} "
                                         f"for {known.table_uri}; not registering it twice")
        other = self.store.table_by_uri(table_uri)
        if other is not None:
            raise InvalidTableStateError(f"catalog {self.name} holds another table (id {other.table_id}) at "
                                         f"{log_.uri}; the table there now has id {metadata.id}")
        require_this_catalog(log_.uri, metadata.configuration, self.catalog_id, adopt)
        if not self.store.register(metadata.id, table_uri, 0):     # another client registered it meanwhile
            now = self.store.table(metadata.id)
            if now is None or now.table_uri != table_uri:
                raise InvalidTableStateError(f"catalog {self.name} registered table id {metadata.id} for "
                                             f"{now.table_uri if now else 'another URI'} meanwhile")
        return metadata.id

    def manages(self, uri: str) -> bool:
        """Whether ``uri`` is a table of this catalog (table discovery: ask before reading it)."""
        return self.store.table_by_uri(canonical_uri(uri)) is not None

    def latest_versions(self, uris: Iterable[str]) -> dict[str, int]:
        """The latest ratified version of each table, at one catalog state (keyed by the URIs as given)."""
        given = list(uris)
        views = self._views(given)
        return {name: views[canonical_uri(name)].record.latest_version for name in given}

    def snapshots(self, uris: Iterable[str]) -> dict[str, Snapshot]:
        """The latest snapshot of every table at ONE catalog state (one database read).

        A multi-table transaction is in all of them or in none: what a reader of several
        tables uses. Ratified commits left unpublished past the grace period are published
        first (any client finishes an interrupted publish). Keyed by the URIs as given.
        """
        given = list(uris)
        uris = [canonical_uri(u) for u in given]
        views = self._views(uris)
        stale = [u for u, v in views.items() if v.unpublished and v.pending_since_ms is not None]
        if stale:
            for u in stale:
                self.source(u).get_commits(views[u].record.table_id)    # publishes what is overdue
            views = self._views(uris)
        return {name: TableLog(uri, self.storage_options, commit_owner=PinnedTableSource(views[uri])).snapshot()
                for name, uri in zip(given, uris)}

    def _views(self, uris: Iterable[str]):
        uris = [canonical_uri(u) for u in uris]
        views = self.store.views(table_uris=uris)
        missing = [u for u in uris if u not in views]
        if missing:
            raise TableNotFoundError(f"not tables of catalog {self.name}: {missing}")
        return views

    # ----------------------------------------------------------- transactions
    def transaction(self) -> CatalogTransaction:
        """A multi-table transaction for ``with``: group-ratified on a clean exit, aborted otherwise."""
        return CatalogTransaction(self)

    def begin(self, key: str | None = None) -> CatalogTransaction:
        """A multi-table transaction for the staged form: ``stage()``, audit, ``publish()`` or ``abort()``.

        ``key`` (a caller's name for "this unit of work", e.g. an Airflow task of one DAG run) makes
        the begin idempotent: the transaction is recorded at once, and a later ``begin(key)`` with
        the same key returns that same transaction (open, staged or ratified, with its members), so a
        retried begin does not leave a second group behind. Once the keyed transaction is aborted,
        the key begins a new one (a re-run after a failed audit starts afresh).
        """
        if key is None:
            return CatalogTransaction(self)
        if not isinstance(key, str) or not key:
            raise InvalidArgumentError(f"a transaction key is a non-empty string, got {key!r}")
        for generation in itertools.count():
            group_id = keyed_group_id(key, generation)
            record = self.store.group(group_id)
            if record is None and self.store.open_group(group_id):
                return CatalogTransaction(self, group_id)
            record = record or self.store.group(group_id)      # a concurrent begin(key) recorded it
            if record is not None and record.state != ABORTED:
                return self._reopened(record)
        raise AssertionError("unreachable")                    # pragma: no cover

    def group(self, transaction_id: str) -> CatalogTransaction:
        """Reopen a transaction by id (e.g. in the Airflow task after the one that staged it)."""
        if not isinstance(transaction_id, str) or not transaction_id:
            raise InvalidArgumentError(f"a transaction id is a non-empty string, got {transaction_id!r}")
        record = self.store.group(transaction_id)
        if record is None:
            raise GroupCommitError(f"catalog {self.name} has no transaction {transaction_id}", transaction_id)
        return self._reopened(record)

    def _reopened(self, record: Any) -> CatalogTransaction:
        return CatalogTransaction(self, record.group_id, record.members, record.state)

    def group_snapshot(self, table: TableLog, transaction_id: str) -> Snapshot:
        """``table`` as it is after the (staged or ratified) transaction: what an audit reads.

        Built on the version the participant was staged on, with its staged commit on top.
        """
        record = self.store.group(transaction_id)
        if record is None:
            raise GroupCommitError(f"catalog {self.name} has no transaction {transaction_id}", transaction_id)
        member = next((m for m in record.members if m.table_uri == table.uri), None)
        if member is None:
            raise InvalidArgumentError(
                f"{table.uri} has no staged commit in transaction {transaction_id} (state {record.state}; "
                f"participants {[m.table_uri for m in record.members]})")
        if record.state not in ("open", "staged", "ratified"):
            raise GroupCommitError(f"transaction {transaction_id} is {record.state}", transaction_id,
                                   state=record.state)
        view = self.store.views([member.table_id])[member.table_id]
        return table.through(PinnedTableSource.with_staged(view, member.staged())).snapshot()
