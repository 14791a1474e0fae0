"""``DeltaTableHook``: an Airflow ``delta`` connection turned into log-layer objects.

The hook owns everything that comes from Airflow's connection store: the base URI
that relative table URIs are resolved against, fsspec storage options and
credentials, and the commit owner of managed-commit tables. Operators, the sensor
and the trigger never read connections themselves; they ask the hook for a
:class:`~airflow_provider_delta.log.DeltaTable` or for one of the operations below,
which are thin calls into the log layer.

Connection fields (conn type ``delta``):

* host: base URI, e.g. ``s3://bucket/warehouse`` or ``/data/lake`` (the ``base_uri``
  extra may be used instead, e.g. for connections defined as URIs);
* login / password: storage credentials, mapped per storage protocol
  (``s3``: ``key``/``secret``; ``abfs``/``az``: ``account_name``/``account_key``;
  ``gs``: ``project``/``token``; others: ``username``/``password``), or onto the keys
  named by the ``credential_keys`` extra (``{"login": "...", "password": "..."}``).
  They are never logged;
* extras: ``catalog`` (``{"url": "sqlite:////data/catalog.db"}``: the ``SqlCatalog`` of
  catalog-managed tables; a table it manages is opened through it, and multi-table
  transactions go through it), ``storage_options`` (JSON object, passed to fsspec), ``commit_owner``
  (``{"type": "sql", "url": "..."}`` or ``{"type": "sql", "conn_id": "<db connection>"}``,
  other keys go to the owner, e.g. ``backfill_batch_size``; the flat
  ``commit_owner_conn_id`` field is a shortcut), ``single_writer`` (bool), ``storage_conn_id``
  (an ``aws`` / ``wasb`` / ``google_cloud_platform`` connection whose credentials become storage
  options, see :mod:`.storage_connections`).

Without a connection id, absolute paths and URLs (``/data/t``, ``file:///data/t``,
``memory://t``) work as they are; a relative table URI then uses ``delta_default``.
"""
from __future__ import annotations

import errno
import time
from typing import Any, Sequence

from airflow.providers.common.compat.lineage.hook import get_hook_lineage_collector
from airflow.sdk import BaseHook
from airflow.sdk.exceptions import AirflowNotFoundException

from ..log import (AddFile, ChangeRange, DeltaTable, IncrementalStep, InvalidArgumentError, StorageError,
                   format_ms, pending_changes, process_changes, to_epoch_ms)
from .arguments import flag, optional_hours, optional_int, version_or_timestamp
from .config import DeltaConnectionConfig, commit_owner_conn_id, is_absolute_uri, storage_conn_id, uri_protocol
from .env_connections import env_variable, unparsable_env_connection
from .manifest import build_manifest, default_manifest_uri, resolve_manifest_uri, write_json
from .run_identity import current_job, current_task_key
from .undone_by_restore import refuse_undone_pair

def _not_writable(error: BaseException | None) -> bool:
    """Whether a write failed for want of permission (or on a read-only file system), not for a fault."""
    return isinstance(error, PermissionError) or (isinstance(error, OSError) and error.errno == errno.EROFS)


def _connection_fields(conn: Any, extra: dict[str, Any]) -> dict[str, Any]:
    return {"conn_type": conn.conn_type, "host": conn.host, "login": conn.login,
            "password": conn.password, "port": conn.port, "schema": conn.schema, "extra": extra}


class DeltaTableHook(BaseHook):
    """Open Delta tables and run log operations with the settings of a ``delta`` connection.

    :param delta_conn_id: the ``delta`` connection; None means: no connection for absolute
        table URIs, ``delta_default`` for relative ones.
    """

    conn_name_attr = "delta_conn_id"
    default_conn_name = "delta_default"
    conn_type = "delta"
    hook_name = "Delta Lake"

    def __init__(self, delta_conn_id: str | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.delta_conn_id = delta_conn_id or None
        self._configs: dict[str | None, DeltaConnectionConfig] = {}
        self._owners: dict[str | None, Any] = {}
        self._catalogs: dict[str | None, Any] = {}
        self._tables: dict[str, DeltaTable] = {}

    def __repr__(self) -> str:
        return f"DeltaTableHook(delta_conn_id={self.delta_conn_id!r})"

    # ------------------------------------------------------------ connection
    def _conn_id_for(self, table_uri: str | None) -> str | None:
        if self.delta_conn_id:
            return self.delta_conn_id
        if table_uri is not None and not is_absolute_uri(str(table_uri).strip()):
            return self.default_conn_name
        return None

    def get_config(self, table_uri: str | None = None) -> DeltaConnectionConfig:
        """The connection settings that apply to ``table_uri`` (loaded once per connection)."""
        return self._config_of(self._conn_id_for(table_uri))

    def _config_of(self, conn_id: str | None) -> DeltaConnectionConfig:
        if conn_id not in self._configs:
            self._configs[conn_id] = self._load_config(conn_id)
        return self._configs[conn_id]

    def _load_config(self, conn_id: str | None) -> DeltaConnectionConfig:
        if conn_id is None:
            return DeltaConnectionConfig()
        conn = self._fetch_connection(conn_id)
        extra = conn.extra_dejson
        owner_fields = storage_fields = None
        if oid := commit_owner_conn_id(extra):
            oconn = self._fetch_connection(oid)
            owner_fields = _connection_fields(oconn, oconn.extra_dejson)
        if sid := storage_conn_id(extra):
            sconn = self._fetch_connection(sid)
            storage_fields = _connection_fields(sconn, sconn.extra_dejson)
        return DeltaConnectionConfig.from_connection(conn_id, conn.host, conn.login, conn.password,
                                                     extra, owner_fields, storage_fields)

    def _fetch_connection(self, conn_id: str) -> Any:
        try:
            return self.get_connection(conn_id)
        except AirflowNotFoundException:
            raise InvalidArgumentError(self._missing_connection(conn_id)) from None

    def _missing_connection(self, conn_id: str) -> str:
        """The one message for a connection that cannot be found, in tasks and in the triggerer alike."""
        return unparsable_env_connection(conn_id) or (
            f"Airflow connection {conn_id!r} is not defined: create it where every Airflow process sees it "
            f"(the metadata database, a secrets backend, or {env_variable(conn_id)} in the environment of "
            "the workers and the triggerer)"
            + (" - relative table URIs without delta_conn_id use it as their base URI"
               if conn_id == self.default_conn_name and not self.delta_conn_id else ""))

    async def aget_config(self, table_uri: str | None = None) -> DeltaConnectionConfig:
        """:meth:`get_config` for the event loop (the trigger): connections fetched asynchronously."""
        conn_id = self._conn_id_for(table_uri)
        if conn_id in self._configs:
            return self._configs[conn_id]
        if conn_id is None:
            cfg = DeltaConnectionConfig()
        else:
            try:
                conn = await self.aget_connection(conn_id)
                extra = await conn.aextra_dejson()
                owner_fields = storage_fields = None
                if oid := commit_owner_conn_id(extra):
                    oconn = await self.aget_connection(oid)
                    owner_fields = _connection_fields(oconn, await oconn.aextra_dejson())
                if sid := storage_conn_id(extra):
                    sconn = await self.aget_connection(sid)
                    storage_fields = _connection_fields(sconn, await sconn.aextra_dejson())
            except AirflowNotFoundException:
                raise InvalidArgumentError(self._missing_connection(conn_id)) from None
            cfg = DeltaConnectionConfig.from_connection(conn_id, conn.host, conn.login, conn.password,
                                                        extra, owner_fields, storage_fields)
        self._configs[conn_id] = cfg
        return cfg

    # ---------------------------------------------------------------- tables
    def resolve_uri(self, table_uri: str) -> str:
        """The absolute URI of ``table_uri`` (relative ones below the connection's base URI)."""
        return self.get_config(table_uri).resolve(table_uri)

    def get_commit_owner(self, table_uri: str | None = None) -> Any:
        """The commit owner configured on the connection (one instance per hook), or None."""
        cfg = self.get_config(table_uri)
        if cfg.commit_owner is None:
            return None
        if cfg.conn_id not in self._owners:
            self._owners[cfg.conn_id] = cfg.commit_owner.build()
        return self._owners[cfg.conn_id]

    def get_catalog(self, table_uri: str | None = None) -> Any:
        """The connection's ``SqlCatalog`` (the ``catalog`` extra; one per hook), or None."""
        cfg = self.get_config(table_uri)
        if cfg.catalog_url is None:
            return None
        if cfg.conn_id not in self._catalogs:
            from ..log import SqlCatalog     # SQLAlchemy: loaded only for connections with a catalog
            self._catalogs[cfg.conn_id] = SqlCatalog(cfg.catalog_url, storage_options=cfg.storage_options)
        return self._catalogs[cfg.conn_id]

    def require_catalog(self, table_uri: str | None = None) -> Any:
        catalog = self.get_catalog(table_uri)
        if catalog is None:
            raise InvalidArgumentError(
                f"connection {self.get_config(table_uri).conn_id!r} has no catalog; set its 'catalog' extra "
                "({\"url\": \"<SQLAlchemy URL>\"}) for catalog-managed tables and multi-table transactions")
        return catalog

    def get_table(self, table_uri: str) -> DeltaTable:
        """The table at ``table_uri`` with the connection's storage options and commit owner (or its
        catalog, when the connection's catalog manages the table).

        One object per URI and hook, so repeated reads refresh its snapshot incrementally.
        """
        cfg = self.get_config(table_uri)
        uri = cfg.resolve(table_uri)
        if uri not in self._tables:
            catalog = self.get_catalog(table_uri)
            if catalog is not None and catalog.manages(uri):
                self._tables[uri] = DeltaTable(uri, storage_options=cfg.storage_options_for(uri), catalog=catalog)
            else:
                self._tables[uri] = DeltaTable(uri, storage_options=cfg.storage_options_for(uri),
                                               commit_owner=self.get_commit_owner(table_uri),
                                               single_writer=cfg.single_writer)
        return self._tables[uri]

    # ------------------------------------------------------ multi-table transactions
    def begin_transaction(self, key: str | None = None) -> str:
        """A multi-table transaction recorded in the connection's catalog; its id (for XCom).

        Without ``key`` a new one each call. With ``key`` (what
        :class:`~airflow_provider_delta.operators.DeltaBeginTransactionOperator` passes: its
        ``<dag_id>/<run_id>/<task_id>[/<map_index>]``) the same transaction while it is not
        aborted: a retried begin returns the group its earlier try recorded.
        """
        return self.require_catalog().begin(key).record().id

    def stage_write(self, transaction_id: str, table_uri: str, data: Any, mode: str = "append",
                    writer: str | None = None, **kwargs: Any) -> int:
        """Write ``data`` into ``table_uri`` as the transaction's staged commit on it (nothing is
        visible until the transaction is published); returns the proposed version.

        Idempotent per (transaction, table, writer): a retry of the task whose staging succeeded
        (its worker died before the success was recorded) finds its staged commit and returns its
        version without writing. ``writer`` defaults to the running task's
        ``<dag_id>:<task_id>[<map_index>]`` (the same in every try); outside a task (a script)
        there is no identity to tell a retry from a second writer, so the write is anonymous and a
        second one on the same table of the group is refused (pass ``writer`` to make a script's
        retries idempotent) rather than dropped as a retry.
        """
        catalog = self.require_catalog(table_uri)
        tx = catalog.group(transaction_id)
        if writer is None:
            writer = current_task_key()
        version = tx.write(self.resolve_uri(table_uri), data, mode=mode, writer=writer, **kwargs)
        tx.stage()
        return version

    def staged_version(self, transaction_id: str, table_uri: str, writer: str | None) -> int | None:
        """The version ``writer`` staged for ``table_uri`` in the transaction, or None (not staged yet)."""
        return self.require_catalog(table_uri).group(transaction_id).staged_version(self.resolve_uri(table_uri),
                                                                                    writer)

    def publish_transaction(self, transaction_id: str) -> dict[str, int]:
        """Group-ratify and publish a staged transaction; ``{table uri: version}``."""
        return self.require_catalog().group(transaction_id).publish()

    def abort_transaction(self, transaction_id: str) -> str:
        """Abort a transaction that is not ratified (its staged commits and data files go); its state."""
        tx = self.require_catalog().group(transaction_id)
        tx.abort()
        return tx.state

    # ----------------------------------------------------------------- reads
    def latest_version(self, table_uri: str) -> int:
        return self.get_table(table_uri).latest_version()

    def snapshot(self, table_uri: str, version: int | None = None, timestamp: Any = None,
                 allow_after_latest: bool = False, transaction: str | None = None) -> Any:
        """The snapshot at ``version``, at ``timestamp`` (in-commit-timestamp rules), or the latest.

        A timestamp after the latest commit is an error, as in Delta Spark, unless
        ``allow_after_latest`` (see :meth:`resolve_version`). ``transaction`` (a multi-table
        transaction id of the connection's catalog) gives the table as that staged group leaves it.
        """
        table = self.get_table(table_uri)
        if transaction:
            return table.snapshot(transaction=transaction)
        if timestamp is not None:
            version = self.resolve_version(table_uri, version, timestamp, allow_after_latest)
        return table.snapshot(version=version)

    def resolve_version(self, table_uri: str, version: int | None = None, timestamp: Any = None,
                        allow_after_latest: bool = True) -> int:
        """The version to read: ``version``, else the one as of ``timestamp``, else the latest.

        ``timestamp`` (epoch ms, datetime or ISO string such as a rendered
        ``{{ data_interval_end }}``) resolves by the log's rules: in-commit timestamps where
        enabled, else monotonized file times. A time after the latest commit gives the
        latest version when ``allow_after_latest`` (the table did not change since), but
        a time still in the future is refused: commits may yet land before it.
        """
        allow_after_latest = flag(allow_after_latest, "allow_after_latest")
        version, timestamp = version_or_timestamp(version, timestamp)
        table = self.get_table(table_uri)
        if version is not None:
            return version
        if timestamp is None:
            return table.latest_version()
        ts = to_epoch_ms(timestamp)
        now = int(time.time() * 1000)
        if allow_after_latest and ts > now:
            raise InvalidArgumentError(
                f"timestamp {format_ms(ts)} is in the future (now {format_ms(now)}): the version of "
                f"{table.uri} as of then is not known yet")
        return table.version_at(ts, allow_after_latest=allow_after_latest)

    def history(self, table_uri: str, limit: int | None = None) -> list[dict[str, Any]]:
        return self.get_table(table_uri).history(limit)

    def read_commit(self, table_uri: str, version: int) -> list[dict[str, Any]]:
        return self.get_table(table_uri).read_commit(version)

    def changes(self, table_uri: str, start_version: Any = None, end_version: Any = None, **kwargs: Any) -> Any:
        """The change data feed of ``table_uri`` (see :meth:`DeltaTable.changes`) as a ``pyarrow.Table``."""
        return self.get_table(table_uri).changes(start_version, end_version, **kwargs)

    def pending_changes(self, source_uri: str, output_uri: str, app_id: str, end_version: int | None = None,
                        initial_version: int = 0, former_app_ids: Sequence[str] = ()) -> ChangeRange:
        """The source versions ``app_id`` has not processed into ``output_uri`` yet, up to ``end_version``.

        The position is the output's ``txn(app_id)`` record, else the furthest of ``former_app_ids``
        (see :mod:`airflow_provider_delta.log.incremental`).
        """
        return pending_changes(self.get_table(source_uri), self.get_table(output_uri), app_id,
                               end_version, initial_version, former_app_ids)

    def process_changes(self, source_uri: str, output_uri: str, app_id: str, transform: Any = None,
                        end_version: int | None = None, initial_version: int = 0,
                        former_app_ids: Sequence[str] = (), **write_kwargs: Any) -> IncrementalStep:
        """Append ``transform(changes)`` of the pending range to ``output_uri`` with ``txn(app_id, end)``:
        the plain-Python incremental step, exactly once across retries."""
        return process_changes(self.get_table(source_uri), self.get_table(output_uri), app_id, transform,
                               end_version, initial_version, former_app_ids, **write_kwargs)

    def is_managed(self, table_uri: str) -> bool:
        """Whether the table's latest state enables managed (coordinated) commits."""
        return self.snapshot(table_uri).commits_are_coordinated

    # ---------------------------------------------------------------- writes
    def commit_files(self, table_uri: str, add: list[Any] = (), remove: list[Any] = (),  # type: ignore[assignment]
                     operation: str = "WRITE", app_id: str | None = None, txn_version: int | None = None,
                     job: dict[str, Any] | None = None, **kwargs: Any) -> int:
        """Commit data files written elsewhere (e.g. by Spark); returns the new version.

        ``add`` holds :class:`AddFile` objects (or dicts of their fields), ``remove`` paths or
        files; ``app_id`` + ``txn_version`` record a ``txn`` action so the commit is done
        exactly once: when the table already records ``app_id`` at ``txn_version`` or later,
        nothing is committed and the table's current version is returned (Delta Spark's
        txnAppId/txnVersion rule); ``job`` lands in commitInfo (default: inside a running Airflow task,
        that task instance, :func:`~.run_identity.current_job`, so a rollback's retry counts the commit as
        its run's); other keywords go to the transaction (``operation_parameters``, ``user_metadata``,
        ``read_version``, ...).
        """
        table = self.get_table(table_uri)
        job = job if job is not None else current_job()
        with table.transaction(operation=operation, job=job, **kwargs) as txn:
            if app_id is not None:
                version = optional_int(txn_version, "txn_version")    # 2.9 or True is no txn version
                recorded = txn.transaction_version(app_id) if version is not None else None
                if recorded is not None and recorded >= version:     # a retry: this commit is in already
                    txn.abort()
                    refuse_undone_pair(table, app_id, version, recorded=recorded,    # unless a RESTORE
                                       version_parameter="txn_version")                  # undid it
                    now = txn.snapshot.version if txn.snapshot is not None else -1
                    self.log.info("%s records %s at version %d (asked: %d): committing nothing, version %d",
                                  table.uri, app_id, recorded, version, now)
                    return int(now)
                txn.set_txn(app_id, 0 if version is None else version)
            txn.add_files(f if isinstance(f, AddFile) else AddFile(**f) for f in add)
            txn.remove_files(remove)
        return int(txn.version)  # type: ignore[arg-type]

    def write_table(self, table_uri: str, data: Any, mode: str = "append", job: dict[str, Any] | None = None,
                    **kwargs: Any) -> int:
        """Write a (small) Arrow table as parquet files and commit it; returns the new version.

        ``job`` lands in commitInfo (default: inside a running Airflow task, that task instance, as
        :meth:`commit_files`); other keywords go to the log's writer (``partition_by``, ``properties``,
        ``user_metadata``, ...).
        """
        table = self.get_table(table_uri)
        job = job if job is not None else current_job()
        version = table.write(data, mode=mode, job=job, **kwargs)
        self._hook_lineage(table.uri, output=True)
        return version

    def checkpoint(self, table_uri: str, version: int | None = None, parts: int | None = None) -> int:
        """Write a checkpoint (multi-part when ``parts`` > 1); returns its version.

        The default version is the latest *backfilled* one: on a managed-commit table the
        newest commits may still be only in ``_delta_log/_commits``, and a checkpoint must
        sit next to its commit file.
        """
        table = self.get_table(table_uri)
        if version is None:
            version = table.latest_backfilled_version()
        return table.checkpoint(version=version, parts=parts)

    def backfill(self, table_uri: str, version: int | None = None) -> dict[str, Any]:
        """Backfill a managed-commit table up to ``version`` (default: the latest)."""
        return self.get_table(table_uri).backfill(version)

    def cleanup_metadata(self, table_uri: str, **kwargs: Any) -> dict[str, Any]:
        """Delete expired log files (the log layer's ``cleanup_metadata``; its keyword arguments).

        ``dry_run`` and ``force`` (and ``retention_ms``, ``orphan_age_ms``, ``now_ms``: whole numbers of
        ms, ``""``/``"None"`` for the default) decide what is deleted, and a ``@task`` may pass them straight
        from ``dag_run.conf`` or a rendered template: they are parsed strictly (:func:`.arguments.flag`),
        so ``"None"``, ``""`` or ``"False"`` never read as Python truthiness would; anything unclear
        raises :class:`.arguments.DeltaArgumentError` before the table is touched.
        """
        for name in ("dry_run", "force"):
            if name in kwargs:
                kwargs[name] = flag(kwargs[name], name, deletes=True)
        for name in ("retention_ms", "orphan_age_ms", "now_ms"):     # durations and times in ms decide what goes
            if name in kwargs:
                value = optional_int(kwargs[name], name)
                if value is None:
                    del kwargs[name]            # not given: the table's default
                else:
                    kwargs[name] = value
        return self.get_table(table_uri).cleanup_metadata(**kwargs)

    def vacuum(self, table_uri: str, retention_hours: float | str | None = None, dry_run: bool | str = True,
               enforce_retention: bool | str = True, job: dict[str, Any] | None = None,
               **kwargs: Any) -> dict[str, Any]:
        """Vacuum (dry run by default); ``job`` is logged with what vacuum deleted and returned in the result.

        The flags and the retention are parsed strictly before the table is touched, as the
        operator does (a ``@task`` calling this hook passes rendered or ``dag_run.conf`` values):
        ``dry_run`` / ``enforce_retention`` must be a bool or ``true/false/1/0/yes/no``, and
        ``retention_hours`` a finite number of hours (``""`` / ``"None"``: the table's default).
        Anything else raises :class:`.arguments.DeltaArgumentError` and nothing is deleted.
        """
        dry_run = flag(dry_run, "dry_run", deletes=True)
        enforce_retention = flag(enforce_retention, "enforce_retention", deletes=True)
        hours = optional_hours(retention_hours, "retention_hours")
        return self.get_table(table_uri).vacuum(retention_hours=hours, dry_run=dry_run,
                                                enforce_retention=enforce_retention, job=job, **kwargs)

    def write_snapshot_manifest(self, table_uri: str, version: int | None = None, timestamp: Any = None,
                                manifest_uri: str | None = None, job: dict[str, Any] | None = None,
                                allow_after_latest: bool = True, write: bool = True) -> dict[str, Any]:
        """Pin a version (given, or resolved from ``timestamp``) in a manifest file.

        Returns ``{"version", "timestamp", "manifest_uri", "num_files", "table_uri"}``. The
        manifest format is documented in :mod:`airflow_provider_delta.hooks.manifest`. With
        ``write=False`` nothing is written (``manifest_uri`` None: the version is the pin). The
        default location is inside the table folder; where this task may not write there (a
        read-only credential) the manifest is skipped with a warning, while an explicit
        ``manifest_uri`` that cannot be written is an error.
        """
        allow_after_latest = flag(allow_after_latest, "allow_after_latest")
        write = flag(write, "write")
        table = self.get_table(table_uri)
        snap = table.snapshot(version=self.resolve_version(table_uri, version, timestamp, allow_after_latest))
        requested = {"version": version, "timestamp": None if timestamp is None else str(timestamp)}
        doc = build_manifest(snap, table.uri, requested=requested, job=job)
        written = None
        if write:
            if manifest_uri:
                target = resolve_manifest_uri(manifest_uri, table.uri)
            else:
                job = job or {}
                target = default_manifest_uri(table.uri, snap.version, job.get("dag_id"), job.get("run_id"))
            cfg = self.get_config(table_uri)
            try:
                written = write_json(target, doc, cfg.storage_options_for(target)
                                     if uri_protocol(target) == uri_protocol(table.uri) else None)
            except StorageError as e:
                if manifest_uri or not _not_writable(e.__cause__):
                    raise
                self.log.warning("No snapshot manifest: this task may not write to the table folder (%s). The "
                                 "pinned version is in the result; pass manifest_uri=<a writable location> for a "
                                 "manifest, or write_manifest=False to skip it without this warning", e)
        self._hook_lineage(table.uri, output=False)
        return {"version": doc["version"], "timestamp": doc["timestamp"], "manifest_uri": written,
                "num_files": doc["num_files"], "table_uri": table.uri}

    def _hook_lineage(self, table_uri: str, output: bool) -> None:
        """Airflow's hook-level lineage: the table as a ``delta`` asset (built by the provider's factory),
        so OpenLineage sees what tasks that use this hook directly (a ``@task``) read and write."""
        collector = get_hook_lineage_collector()
        add = collector.add_output_asset if output else collector.add_input_asset
        add(context=self, scheme="delta", asset_kwargs={"table_uri": table_uri})

    # ------------------------------------------------------------ connection
    def test_connection(self) -> tuple[bool, str]:
        """List the connection's base URI (with its storage options and credentials)."""
        try:
            cfg = self._config_of(self.delta_conn_id or self.default_conn_name)
            if not cfg.base_uri:
                return False, f"connection {cfg.conn_id!r} has no base URI: set host (e.g. s3://bucket/warehouse)"
            import fsspec   # loaded only here and by object-store tables (log.base.storage)
            base = cfg.base_uri
            fs, path = fsspec.core.url_to_fs(base, **cfg.storage_options_for(base))
            entries = fs.ls(path, detail=False)
            return True, f"listed {len(entries)} entries under {base}"
        except Exception as e:  # test_connection reports, it does not raise
            return False, f"{type(e).__name__}: {e}"
