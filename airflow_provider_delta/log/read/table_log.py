"""``TableLog``: the read side of one table, the object the read and write engines work on.

It holds where the table lives (:class:`~.storage.Storage`) and who serves its
newest commits (an optional :class:`~.commit_source.CommitSource`: a commit owner
or a catalog), learns the table id once (the id a commit source keys the table
by), and answers the read questions: listing, snapshots (the latest one refreshed
incrementally), time travel, history, single commits, the commits after a
version. :class:`~.table.DeltaTable` extends it with writes and maintenance; the
write-engine modules take a ``TableLog``, so they never import the front object.
"""
from __future__ import annotations

from typing import Any, Iterator

from .commit_reader import parse_json_lines, read_listed_commit
from .data_paths import split_uri, unplaceable
from ..base.commit_source import CommitSource, require_through, serves_catalog
from ..base.errors import CorruptLogError, InvalidArgumentError
from ..base.features import Operation
from .history import history, history_back, version_at
from .listing import LogListing, list_backfilled, list_log
from ..base.names import LogFile, commit_path
from .new_commits import CommitsSince, read_commits_since
from .action_lines import may_carry
from .protocol_metadata import load_protocol, load_protocol_metadata
from .segment import build_segment
from .snapshot import Snapshot, load_snapshot
from ..base.storage import Storage
from ..base.timeutil import to_epoch_ms


def version_arg(value: Any, name: str = "version") -> int:
    """A version/limit argument as an int; anything else is an InvalidArgumentError."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidArgumentError(f"{name} must be an integer, got {value!r}")
    return value


class TableLog:
    """The transaction log of the table at ``uri`` (local path, ``file://``, ``memory://`` or any fsspec URL).

    ``commit_owner`` (any :class:`CommitSource`) makes reads see commits that are
    ratified but not yet in ``_delta_log``. ``single_writer`` and ``conditional_put``
    are passed to :class:`Storage` (see :class:`~.table.DeltaTable`).
    """

    #: write a checkpoint after commits that ``delta.checkpointInterval`` selects
    #: (a switch per table object; there is no Delta table property for it)
    auto_checkpoint: bool = True

    def __init__(self, uri: str, storage_options: dict[str, Any] | None = None,
                 commit_owner: CommitSource | None = None, single_writer: bool = False,
                 conditional_put: bool | None = None):
        if not uri:
            raise InvalidArgumentError("a table URI is required")
        parts = split_uri(str(uri))
        reason = unplaceable(parts) if parts is not None else None
        if reason:      # the driver would open another place than the URI names: vacuum could not place files
            raise InvalidArgumentError(f"cannot open the table at {uri!r}: {reason}; spell the root as "
                                       "scheme://bucket/path (Azure: scheme://container@account.dfs.core.windows.net/path)")
        self.storage = Storage(uri, storage_options, single_writer=single_writer,
                               conditional_put=conditional_put)
        self.commit_owner = commit_owner
        self._table_id: str | None = None
        self._snapshot_cache: Snapshot | None = None
        #: newest backfilled version a listing of this object saw: polls list from there on
        self._known_backfilled: int | None = None
        #: that version's commit file as listed then (a different file there later: the table was replaced)
        self._known_file: LogFile | None = None
        #: latest version whose protocol :meth:`latest_version` checked may be listed without a catalog
        self._listable_version: int | None = None

    def forget_cached_snapshot(self) -> None:
        """Load the next latest snapshot afresh from the newest checkpoint instead of updating the cached one
        by the commits after it: after a commit file was left below a newer checkpoint (a hole), the cached
        snapshot would replay it, while every other reader starts at the checkpoint and does not."""
        self._snapshot_cache = None

    def through(self, source: CommitSource) -> "TableLog":
        """The same table read through another commit source (e.g. one catalog state, pinned)."""
        other = TableLog.__new__(TableLog)
        other.storage = self.storage
        other.commit_owner = source
        other._table_id = self._table_id
        other._snapshot_cache = None
        other._known_backfilled = None
        other._known_file = None
        other._listable_version = None
        return other

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.uri!r})"

    @property
    def uri(self) -> str:
        return self.storage.uri

    @property
    def commit_source(self) -> CommitSource | None:
        return self.commit_owner

    # ---------------------------------------------------------------- listing
    def listing(self) -> LogListing:
        """One listing of ``_delta_log``, plus the commit source's ratified tail."""
        return self._remember(list_log(self.storage, self.commit_owner, self._table_id_of))

    def new_listing(self, known_version: int | None = None) -> LogListing:
        """What is new after ``known_version`` (default: the newest backfilled version this
        object saw): a listing from that version on where possible, else a full one.
        Answers the latest version and the commits after it, not a snapshot."""
        if known_version is None:
            known_version = self._known_backfilled
        listing = list_log(self.storage, self.commit_owner, self._table_id_of, known_version)
        if self._replaced(listing):
            # the table at the location was deleted and created again: what this object read of the former
            # one (its id, which keys the commit source's tail; its snapshot) is the former table's
            self._table_id, self._known_backfilled, self._known_file, self._snapshot_cache = None, None, None, None
            listing = list_log(self.storage, self.commit_owner, self._table_id_of)
        return self._remember(listing)

    def _remember(self, listing: LogListing) -> LogListing:
        if listing.max_backfilled is not None:
            self._known_backfilled = listing.max_backfilled
            self._known_file = listing.commits.get(listing.max_backfilled)
        return listing

    def _replaced(self, listing: LogListing) -> bool:
        """Whether the commit file of the newest backfilled version this object saw is another file now (size
        or modification time): a backfilled commit is written once, so another one there is another table's."""
        known = self._known_file
        now = listing.commits.get(known.version) if known is not None else None
        return (now is not None and known is not None and now.version not in listing.unbackfilled
                and bool(now.size and known.size) and (now.size, now.mtime_ms) != (known.size, known.mtime_ms))

    def _table_id_of(self, listing: LogListing) -> str | None:
        """The table id (metaData.id) the commit source keys the table by, read once.

        The id is the latest metadata's, so it is read from a segment of the latest version. A
        listing from a known version on (``partial_from``: a poll's) did not look at the older files
        that segment may need (the checkpoint, or commit 0 and the commits up to that version), so
        the id is then read from one full listing of ``_delta_log`` instead."""
        if self._table_id is None and listing.latest is not None:
            if listing.partial_from is not None:
                listing = list_backfilled(self.storage)
            _, metadata = load_protocol_metadata(self.storage, build_segment(self.storage, listing))
            self._table_id = metadata.id
        return self._table_id

    def require(self, snapshot: Snapshot, operation: Operation) -> None:
        """The table-feature gate for ``operation`` on ``snapshot``'s protocol (see :func:`.features.require`)."""
        require_through(self.commit_owner, snapshot.protocol, operation, f"{self.uri} at version {snapshot.version}")

    # ------------------------------------------------------------------ reads
    def snapshot(self, version: int | None = None, timestamp: Any = None,
                 allow_after_latest: bool = False) -> Snapshot:
        """The table state at ``version``, at ``timestamp`` (epoch ms, datetime or ISO string), or the latest.

        The latest snapshot is refreshed incrementally from the previous one this object
        loaded, reading only commits newer than it. See :meth:`version_at` for how a
        timestamp is resolved.
        """
        if version is not None and timestamp is not None:
            raise InvalidArgumentError("pass either version or timestamp, not both")
        if version is not None:
            version = version_arg(version)
        if timestamp is not None:
            version = self.version_at(timestamp, allow_after_latest=allow_after_latest)
        if version is None and self._snapshot_cache is not None:
            snap = self._snapshot_cache.update()
        else:
            snap = load_snapshot(self, version)
        if version is None:
            self._snapshot_cache = snap
        return snap

    def latest_version(self) -> int:
        """The newest version, from a directory listing (plus the commit source's tail).

        After the first call only the files from the newest version seen on are listed. Without
        a catalog, the protocol is read once (the catalog-managed check) and again only after a
        commit carrying a protocol action.
        """
        full = self._known_backfilled is None     # a fresh object lists all of _delta_log
        listing = self.new_listing()
        if listing.latest is None:
            build_segment(self.storage, listing)  # raises the right TableNotFoundError
        latest = int(listing.latest)  # type: ignore[arg-type]
        self._check_listable(listing, full)
        return latest

    def _check_listable(self, listing: LogListing, full: bool = False) -> None:
        """Unless the commit source is a catalog (it serves ``catalogManaged``), the listing is the
        whole truth only if the table is not catalog-managed (:class:`CatalogRequiredError`
        otherwise), the same gate :meth:`snapshot` applies: a commit owner that is not the table's
        catalog knows nothing of its staged commits. A poll of an unchanged table reads nothing;
        new commits without a protocol action keep the answer (they are what a poll reads anyway);
        otherwise the protocol of the latest version is read (only the protocol: of a checkpoint,
        its ``protocol`` column), from ``listing`` when it is a ``full`` one, else a new full one."""
        latest = listing.latest
        if serves_catalog(self.commit_owner) or latest is None or latest == self._listable_version:
            return
        known = self._listable_version
        if known is not None and known < latest and not self._protocol_changed(listing, known, latest):
            self._listable_version = latest
            return
        cached = self._snapshot_cache
        if cached is not None and cached.version == latest:
            protocol = cached.protocol
        else:
            try:
                segment = build_segment(self.storage, listing if full else self.listing(), latest)
            except CorruptLogError:
                return    # a gap before the latest version: the listing's answer stands, every read refuses
            protocol = load_protocol(self.storage, segment)
        require_through(self.commit_owner, protocol, Operation.LIST_VERSIONS, f"{self.uri} at version {latest}")
        self._listable_version = latest

    def _protocol_changed(self, listing: LogListing, known: int, latest: int) -> bool:
        """Whether a commit after ``known`` up to ``latest`` may carry a protocol action (True when
        one of them is not in ``listing`` to look at)."""
        new = sorted(v for v in listing.commits if known < v <= latest)
        if len(new) != latest - known:
            return True
        for v in new:
            try:
                data = self.storage.read_bytes(commit_path(v))
            except FileNotFoundError:
                return True
            if may_carry(data, "protocol"):    # parsed by load_protocol (escaped keys too)
                return True
        return False

    def latest_backfilled_version(self) -> int | None:
        """The newest version whose commit file is in ``_delta_log`` (None: no table yet).

        On a managed-commit table the newest commits may still be only with the commit
        owner; checkpoints and log compactions can only cover backfilled versions.
        """
        return self.listing().max_backfilled

    def version_at(self, timestamp: Any, allow_after_latest: bool = False) -> int:
        """The newest version whose commit timestamp is at or before ``timestamp``.

        A time before the earliest reconstructable version raises TimestampOutOfRangeError;
        so does a time after the latest commit unless ``allow_after_latest`` (Delta Spark's rules).
        """
        return version_at(self.snapshot(), timestamp, allow_after_latest=allow_after_latest)

    def history(self, limit: int | None = None) -> list[dict[str, Any]]:
        """Commits newest first, with version, timestamp and commitInfo fields."""
        limit = None if limit is None else version_arg(limit, "limit")
        return history(self.snapshot(), limit)

    def history_back(self, since: Any = None) -> Iterator[dict[str, Any]]:
        """:meth:`history`'s entries read one commit at a time, newest first, ending before the first
        commit older than ``since`` (epoch ms, datetime or ISO string; None: the whole history)."""
        return history_back(self.snapshot(), None if since is None else to_epoch_ms(since))

    def read_commit(self, version: int) -> list[dict[str, Any]]:
        """The actions of one commit as parsed JSON dicts (un-backfilled ones via the commit source)."""
        version = version_arg(version)
        rel = commit_path(version)
        try:
            return parse_json_lines(self.storage.read_bytes(rel), self.storage.path(rel))
        except FileNotFoundError:
            pass
        return read_listed_commit(self.storage, self.listing(), version)

    def commits_since(self, version: int) -> CommitsSince:
        """The commits after ``version`` (exclusive), read once each, with the newest version.

        One listing, no file read when nothing is new: what a sensor or trigger polls.
        ``version=-1`` asks for every commit still in the log.
        """
        version = version_arg(version)
        if version < -1:
            raise InvalidArgumentError(f"version must be -1 or more, got {version}")
        listing = self.new_listing(version) if version >= 0 else self.listing()
        self._check_listable(listing, full=version < 0)
        return read_commits_since(self.storage, listing, version)
