"""One catalog-managed table as its SQL catalog serves it: the reader's commit source and
the writer's committer (PROTOCOL.md, "Catalog-managed tables").

Commit: write the staged commit ``_delta_log/_staged_commits/<v>.<uuid>.json``
(put-if-absent), ask the catalog to ratify it as v (one database transaction), then
publish: copy every ratified, unpublished commit in version order to
``_delta_log/<v>.json`` (put-if-absent; an existing file must hold the same bytes) and
tell the catalog. A ratified commit whose publishing was interrupted is published by the
next writer, by :meth:`CatalogTableSource.publish`, or by a reader that finds it still
pending after ``publish_grace_ms`` ("any client can finish an interrupted publish").

Read: the catalog names the latest ratified version and the ratified commits it has not
seen published; the listing ignores published files after that version.
"""
from __future__ import annotations

import logging
import uuid
from dataclasses import replace
from typing import TYPE_CHECKING

from ..catalog import CatalogCommits, StagedCommit
from ..commit_owner.backfill import copy_in_order
from ..errors import (CatalogUnavailableError, CommitFailedError, CommitOutcomeUnknownError, DeltaError,
                      InvalidTableStateError)
from ..features import CATALOG_MANAGED_FEATURES, MULTI_TABLE_TRANSACTION_FEATURES
from ..names import STAGED_COMMITS_DIR, parse_uuid_commit_name, uuid_commit_name
from ..storage import Storage
from .answer import answer
from .records import ABORTED, OPEN, STAGED, TableView
from .records import now_ms

if TYPE_CHECKING:
    from .store import CatalogStore

log = logging.getLogger(__name__)

#: A reader publishes a ratified commit itself only when it has waited this long (the writer
#: normally publishes within milliseconds of ratifying; readers should not race it).
PUBLISH_GRACE_MS = 5_000
#: Staged commits that no group or writer claimed for this long are abandoned (cleanup removes them).
ORPHAN_AGE_MS = 3_600_000


def write_staged(storage: Storage, version: int, actions: bytes, commit_timestamp: int) -> StagedCommit:
    """Write ``actions`` as a new staged commit of ``version`` (a fresh UUID name, put-if-absent)."""
    name = uuid_commit_name(version, str(uuid.uuid4()))
    rel = f"{STAGED_COMMITS_DIR}/{name}"
    if not storage.put_if_absent(rel, actions):   # a UUID collision: practically impossible
        raise CommitFailedError(f"staged commit {rel} already exists", retryable=True, version=version)
    return StagedCommit(version, name, len(actions), 0, commit_timestamp)


class CatalogTableSource:
    """The SQL catalog's face for one table (a :class:`~..commit_source.CommitCoordinator`)."""

    served_reader_features = CATALOG_MANAGED_FEATURES
    served_writer_features = CATALOG_MANAGED_FEATURES | MULTI_TABLE_TRANSACTION_FEATURES
    authoritative_latest = True

    def __init__(self, store: "CatalogStore", storage: Storage, catalog_name: str,
                 allows_maintenance: bool = True, publish_grace_ms: int = PUBLISH_GRACE_MS):
        self.store = store
        self.storage = storage
        self.catalog_name = catalog_name
        #: PROTOCOL.md: cleanup and vacuum only with the catalog's permission; this catalog gives it
        #: unless configured not to (its cleanup never removes a ratified, unpublished commit)
        self.allows_maintenance = bool(allows_maintenance)
        self.publish_grace_ms = int(publish_grace_ms)

    def __repr__(self) -> str:
        return f"CatalogTableSource({self.catalog_name!r}, {self.storage.uri!r})"

    def register(self, table_id: str) -> None:
        """Take over a table whose version 0 was just published (its creation). Already registered
        for this very location is the same outcome (another client's ``SqlCatalog.register`` finished
        the creation first); registered for another location is a CommitFailedError."""
        if not self.store.register(table_id, self.storage.uri, 0):
            known = self.store.table(table_id)
            if known is None or known.table_uri != self.storage.uri:
                raise CommitFailedError(f"table id {table_id} is already registered in catalog {self.catalog_name}")

    # ------------------------------------------------------------------ reads
    def get_commits(self, table_id: str, start_version: int = 0, end_version: int | None = None) -> CatalogCommits:
        view = self._view(table_id)
        if view.unpublished and view.pending_since_ms is not None \
                and now_ms() - view.pending_since_ms >= self.publish_grace_ms:
            self.publish_quietly(table_id, view)
            view = self._view(table_id)
        return answer(view, start_version, end_version)

    def _view(self, table_id: str) -> TableView:
        view = self.store.views([table_id]).get(table_id)
        if view is None:
            raise InvalidTableStateError(
                f"{self.storage.uri} (table id {table_id}) is not registered in catalog {self.catalog_name}; "
                "catalog-managed tables are created through their catalog (DeltaTable.create(..., catalog=...))")
        return view

    # ---------------------------------------------------------------- commits
    def commit(self, storage: Storage, table_id: str, version: int, actions: bytes,
               commit_timestamp: int) -> StagedCommit:
        """Stage, ratify and publish one commit as ``version``.

        ``CommitFailedError(conflict=True, retryable=True)`` when another commit holds the
        version (re-read and retry at the next); the staged file is then removed.
        """
        rec = self._view(table_id).record
        if version <= rec.latest_version:
            raise CommitFailedError(f"version {version} of {storage.uri} is already ratified (latest "
                                    f"{rec.latest_version})", retryable=True, conflict=True, version=version)
        if version > rec.latest_version + 1:
            raise CommitFailedError(f"cannot commit version {version} of {storage.uri}: the catalog's latest is "
                                    f"{rec.latest_version}", version=version)
        staged = write_staged(storage, version, actions, commit_timestamp)
        rel = staged.rel_path
        try:
            won = self.store.ratify(table_id, staged)
        except CatalogUnavailableError:
            storage.delete(rel)            # no statement reached the database
            raise
        except DeltaError:
            raise
        except Exception as e:             # the database failed mid-way: did the ratification happen?
            won = self._ratified_despite_error(table_id, staged, e)
        if not won:
            storage.delete(rel)            # never ratified: nobody can reference it
            raise CommitFailedError(f"version {version} of {storage.uri} was ratified for another commit; "
                                    "re-read and retry", retryable=True, conflict=True, version=version)
        # everything before this commit was published when we read the catalog: publish just it
        # (no second catalog read); otherwise the catalog's pending commits first, in order
        view = TableView(replace(rec, latest_version=version), (staged,)) \
            if rec.published_version == version - 1 else None
        self.publish_quietly(table_id, view)
        return staged

    def _ratified_despite_error(self, table_id: str, staged: StagedCommit, error: Exception) -> bool:
        try:
            names = self.store.ratified_names(table_id, [staged.version])
        except Exception:
            raise CommitOutcomeUnknownError(
                f"the catalog failed while ratifying version {staged.version} of {self.storage.uri} ({error}) and "
                "cannot be reached to tell whether it did; read the table before retrying",
                version=staged.version) from error
        if names.get(staged.version) == staged.file_name:
            return True
        if staged.version in names:
            return False
        # not ratified as far as the catalog can tell now; the staged file stays (cleanup removes it)
        raise CommitFailedError(f"the catalog failed while ratifying version {staged.version} of "
                                f"{self.storage.uri}: {error}", retryable=True, version=staged.version) from error

    # -------------------------------------------------------------- publishing
    def publish(self, table_id: str, view: TableView | None = None, record: bool = True) -> int:
        """Publish every ratified, unpublished commit in order; returns the highest published version.

        ``record=False`` leaves telling the catalog to the caller (a group tells it once for all
        its tables); a version published but not recorded is only published again, harmlessly.
        """
        view = view or self._view(table_id)
        done = view.record.published_version
        try:
            for v in copy_in_order(self.storage, view.unpublished, view.record.published_version + 1):
                done = v
        finally:
            if record and done > view.record.published_version:
                self.store.mark_published({table_id: done})
        return done

    def publish_quietly(self, table_id: str, view: TableView | None = None) -> None:
        """:meth:`publish`, with a failure only logged: the commits stay ratified, the next client publishes."""
        try:
            self.publish(table_id, view)
        except Exception as e:  # the commits are ratified; publishing is redone by the next client
            log.warning("ratified commits of %s are not all published yet (%s: %s); the next client will "
                        "publish them", self.storage.uri, type(e).__name__, e)

    # ------------------------------------------------------------- maintenance
    def abandoned_staged_commits(self, table_id: str, names: list[str], older_than_ms: int,
                                 dry_run: bool = False) -> list[str]:
        """Which of these ``_staged_commits`` file names cleanup may delete.

        Deletable: a file of a group that was aborted, or that stayed unratified since before
        ``older_than_ms`` (the group is aborted first, so it can never be ratified later);
        any other unratified file older than that, including one whose version went to another
        commit (tombstoned first, for the same reason: a group re-stages from such a file).
        Ratified files stay until a checkpoint covers them (cleanup's own rule). On doubt, keep.
        ``dry_run`` changes nothing in the catalog (no abort, no tombstone) and reports what would go.
        """
        parsed = {n: parse_uuid_commit_name(n) for n in names}
        parsed = {n: p[0] for n, p in parsed.items() if p is not None}
        if not parsed:
            return []
        rec = self._view(table_id).record
        ratified = self.store.ratified_names(table_id, [v for v in parsed.values() if v <= rec.latest_version])
        group_files = {}
        for g in self.store.groups_of(table_id, (OPEN, STAGED, ABORTED)):
            for m in g.members:
                if m.table_id == table_id:
                    group_files[m.file_name] = g
        out = []
        for name, v in sorted(parsed.items()):
            if ratified.get(v) == name:
                continue                       # ratified: stays until a checkpoint covers it
            # a file whose version went to another commit is not dead yet: a live group re-stages
            # from it on publish (and its audit reads it), so it ages like any other unratified file
            g = group_files.get(name)
            if g is not None and g.state != ABORTED:
                if g.created_ms > older_than_ms:
                    continue                   # a live group (an audit may be running): keep
                if not dry_run and not self.store.abort_group(g.group_id, older_than_ms):
                    continue                   # ratified meanwhile: keep
            mtime = self._mtime(name)
            if g is None and (mtime is None or mtime > older_than_ms):
                continue                       # maybe a commit in flight: keep
            if dry_run or self.store.tombstone(table_id, v, name):
                out.append(name)
        return out

    def _mtime(self, name: str) -> int | None:
        try:
            return self.storage.mtime_ms(f"{STAGED_COMMITS_DIR}/{name}")
        except (OSError, FileNotFoundError):
            return None
