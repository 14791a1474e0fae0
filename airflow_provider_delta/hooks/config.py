"""What a ``delta`` Airflow connection means for the log layer, without Airflow.

A connection is turned into a :class:`DeltaConnectionConfig` once; the hook and the
trigger (which must fetch connections asynchronously) then share the same rules for

* table URIs: the connection's host (or the ``base_uri`` extra) is a base URI, and a
  relative ``table_uri`` is resolved against it; absolute paths and URLs are kept;
* storage options: the ``storage_options`` extra (a dict or a JSON string), plus the
  connection's login and password mapped onto the credential options of the storage
  backend (see :data:`CREDENTIAL_KEYS`), or onto the keys named in the
  ``credential_keys`` extra;
* the commit owner of managed-commit tables: the ``commit_owner`` extra, whose
  database credentials come from another Airflow connection rather than from the
  table's own (world-readable) ``commitOwnerConf``.

Keeping this free of Airflow imports keeps it unit-testable and usable from the
trigger's event loop. Secrets are never part of ``repr`` or of :meth:`describe`.
"""
from __future__ import annotations

import json
import os
import posixpath
from dataclasses import dataclass, field
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..assets import is_absolute_uri
from ..log import InvalidArgumentError
from ..log import looks_like_secret, normalize_uri, options_for_place
from .storage_connections import storage_options_of

# Storage protocol -> (option receiving the login, option receiving the password).
# The names are the fsspec implementations' own keyword arguments.
CREDENTIAL_KEYS: dict[str, tuple[str, str]] = {
    "s3": ("key", "secret"),            # s3fs
    "s3a": ("key", "secret"),
    "s3n": ("key", "secret"),
    "gs": ("project", "token"),         # gcsfs: token = service-account JSON path or OAuth token
    "gcs": ("project", "token"),
    "abfs": ("account_name", "account_key"),   # adlfs
    "abfss": ("account_name", "account_key"),
    "az": ("account_name", "account_key"),
    "adl": ("account_name", "account_key"),
    "hdfs": ("user", "kerb_ticket"),    # pyarrow HDFS
    "webhdfs": ("user", "password"),
}
# Everything else (sftp, ftp, smb, http(s), webdav, ...) takes username/password.
DEFAULT_CREDENTIAL_KEYS = ("username", "password")
# Local and in-process storage have no credentials; a login there is ignored.
NO_CREDENTIALS = {"file", "local", "memory", ""}

_FORM_PREFIX = "extra__delta__"



def uri_protocol(uri: str) -> str:
    """The storage protocol of a URI; ``file`` for local paths (the log layer's rule)."""
    return normalize_uri(uri)[0]


def join_uri(base: str, rel: str) -> str:
    """``rel`` below ``base``; ``..`` may not climb above the base."""
    rel = rel.strip()
    if not rel:
        raise InvalidArgumentError("an empty table_uri cannot be resolved")
    norm = posixpath.normpath(rel.replace("\\", "/"))
    if norm == ".." or norm.startswith("../"):
        raise InvalidArgumentError(f"table_uri {rel!r} points outside the connection's base URI {base!r}")
    scheme = urlsplit(base).scheme
    # keep the "//" of "s3://" (a base of just a scheme: the table path starts with the bucket)
    head_len = len(scheme) + 3 if len(scheme) > 1 and base.startswith(f"{scheme}://") else 0
    rest = base[head_len:]
    clean = base[:head_len] + ("/" if rest.startswith("/") else "") + rest.strip("/")
    if norm == ".":
        return clean or "/"
    return clean + ("" if clean.endswith("/") else "/") + norm.lstrip("/")


def _as_dict(value: Any, what: str) -> dict[str, Any]:
    """Extras may hold a dict or (from a UI text field) its JSON text."""
    if value is None or value == "":
        return {}
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except ValueError as e:
            raise InvalidArgumentError(f"connection extra {what!r} is not valid JSON: {e}") from None
        if isinstance(parsed, dict):
            return parsed
    raise InvalidArgumentError(f"connection extra {what!r} must be a JSON object, got {type(value).__name__}")


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def redact_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """A copy safe to log: values of credential-looking keys replaced by ``***``."""
    out: dict[str, Any] = {}
    for k, v in options.items():
        if isinstance(v, Mapping):
            out[k] = redact_options(v)
        elif looks_like_secret(k):
            out[k] = "***"
        else:
            out[k] = v
    return out


@dataclass(frozen=True)
class CommitOwnerSpec:
    """How to build the SQL commit owner: a database URL and owner keyword arguments.

    ``url`` may embed a password (taken from another Airflow connection), so the
    dataclass keeps it out of ``repr``.
    """

    type: str
    url: str = field(repr=False)
    options: dict[str, Any] = field(default_factory=dict)

    def build(self) -> Any:
        if self.type != "sql":
            raise InvalidArgumentError(
                f"unknown commit owner type {self.type!r} in the connection: only 'sql' is supported")
        from ..log import SqlCommitOwner     # SQLAlchemy: loaded only for connections with a commit owner
        return SqlCommitOwner(self.url, **self.options)

    def describe(self) -> str:
        """The URL with its password replaced, for logs."""
        try:
            import sqlalchemy as sa          # SQLAlchemy: loaded only where an owner or catalog is named
            return sa.engine.make_url(self.url).render_as_string(hide_password=True)
        except Exception:  # an unparsable URL: say nothing about it
            return "<sql url>"


def database_url(conn_type: str | None, host: str | None, login: str | None, password: str | None,
                 port: int | None, schema: str | None, extra: Mapping[str, Any] | None = None) -> str:
    """An SQLAlchemy URL from the fields of an Airflow database connection.

    ``postgres``/``postgresql`` and ``mysql`` connections map onto their SQLAlchemy
    dialects; a ``sqlite`` connection keeps the database file in ``host`` (Airflow's
    convention). A ``sqlalchemy_url``/``url`` extra on that connection wins, for
    drivers this mapping does not know.
    """
    extra = dict(extra or {})
    for key in ("sqlalchemy_url", "url"):
        if extra.get(key):
            return str(extra[key])
    ctype = (conn_type or "").lower().replace("-", "_")
    if ctype == "sqlite":
        path = host or schema
        if not path:
            raise InvalidArgumentError("the sqlite commit-owner connection needs the database file in host")
        return f"sqlite:///{path}" if not str(path).startswith("sqlite:") else str(path)
    drivers = {"postgres": "postgresql", "postgresql": "postgresql", "mysql": "mysql",
               "mssql": "mssql+pymssql", "oracle": "oracle"}
    driver = drivers.get(ctype)
    if driver is None:
        raise InvalidArgumentError(
            f"cannot build a database URL from a connection of type {conn_type!r}: use a postgres, "
            "mysql or sqlite connection, or put the SQLAlchemy URL in its 'sqlalchemy_url' extra")
    import sqlalchemy as sa     # SQLAlchemy: loaded only where an owner or catalog is named
    url = sa.engine.URL.create(driver, username=login or None, password=password or None,
                               host=host or None, port=int(port) if port else None,
                               database=schema or None)
    return url.render_as_string(hide_password=False)


def _unprefixed(extra: Mapping[str, Any] | None) -> dict[str, Any]:
    """Extras with form fields stored under Airflow's older ``extra__delta__`` prefix unprefixed."""
    return {(k[len(_FORM_PREFIX):] if str(k).startswith(_FORM_PREFIX) else k): v
            for k, v in dict(extra or {}).items()}


def commit_owner_conn_id(extra: Mapping[str, Any]) -> str | None:
    """The Airflow connection holding the commit owner's database credentials, if any."""
    owner = _commit_owner_extra(_unprefixed(extra))
    return owner.get("conn_id") if owner else None


def storage_conn_id(extra: Mapping[str, Any]) -> str | None:
    """The ``aws`` / ``wasb`` / ``google_cloud_platform`` connection holding the storage credentials, if any."""
    return _unprefixed(extra).get("storage_conn_id") or None


def _commit_owner_extra(extra: Mapping[str, Any]) -> dict[str, Any] | None:
    owner = _as_dict(extra.get("commit_owner"), "commit_owner") if extra.get("commit_owner") else {}
    # Flat form-field shortcuts (the UI offers plain fields, not nested objects).
    if not owner.get("conn_id") and extra.get("commit_owner_conn_id"):
        owner = {"type": "sql", **owner, "conn_id": extra["commit_owner_conn_id"]}
    return owner or None


def _catalog_url(value: Any, conn_id: str | None) -> str | None:
    """The ``catalog`` extra: ``{"url": "<SQLAlchemy URL>"}`` (or the URL itself) of a SqlCatalog."""
    if not value:
        return None
    if isinstance(value, str) and not value.lstrip().startswith("{"):
        return value.strip()
    url = _as_dict(value, "catalog").get("url")
    if not url:
        raise InvalidArgumentError(f"connection {conn_id!r}: the catalog extra needs a 'url'")
    return str(url)


@dataclass(frozen=True)
class DeltaConnectionConfig:
    """The resolved meaning of one ``delta`` connection (or of none, for local tables)."""

    conn_id: str | None = None
    base_uri: str | None = None
    storage_options: dict[str, Any] = field(default_factory=dict, repr=False)
    credentials: tuple[str | None, str | None] = field(default=(None, None), repr=False)
    credential_keys: tuple[str, str] | None = None
    commit_owner: CommitOwnerSpec | None = None
    single_writer: bool = False
    #: SQLAlchemy URL of the SqlCatalog of catalog-managed tables (the ``catalog`` extra)
    catalog_url: str | None = field(default=None, repr=False)

    @classmethod
    def from_connection(cls, conn_id: str | None, host: str | None, login: str | None,
                        password: str | None, extra: Mapping[str, Any] | None,
                        owner_connection: Mapping[str, Any] | None = None,
                        storage_connection: Mapping[str, Any] | None = None) -> "DeltaConnectionConfig":
        """Build from connection fields; ``owner_connection`` holds the fields of the
        connection named by the ``commit_owner.conn_id`` extra, ``storage_connection`` those of
        the ``storage_conn_id`` one (its options come first; the delta connection's own
        ``storage_options`` override them), both already fetched."""
        extra = _unprefixed(extra)
        base = extra.get("base_uri") or host or None
        if base is not None:
            base = str(base).strip() or None
        if base is not None and not is_absolute_uri(base):
            raise InvalidArgumentError(
                f"the base URI {base!r} of connection {conn_id!r} must be absolute "
                "(a URL such as s3://bucket/warehouse, or an absolute local path)")
        options = _as_dict(extra.get("storage_options"), "storage_options")
        if storage_conn_id(extra):
            if storage_connection is None:
                raise InvalidArgumentError(
                    f"the storage connection {extra['storage_conn_id']!r} named in connection {conn_id!r} was not loaded")
            options = {**storage_options_of(storage_connection), **options}
        keys = extra.get("credential_keys")
        cred_keys: tuple[str, str] | None = None
        if keys:
            keys = _as_dict(keys, "credential_keys")
            cred_keys = (str(keys.get("login", "")), str(keys.get("password", "")))
        owner = _commit_owner_extra(extra)
        spec = None
        if owner:
            owner = dict(owner)
            otype = str(owner.pop("type", "sql"))
            url = owner.pop("url", None)
            oconn = owner.pop("conn_id", None)
            if oconn:
                if owner_connection is None:
                    raise InvalidArgumentError(
                        f"the commit owner connection {oconn!r} named in connection {conn_id!r} was not loaded")
                url = database_url(**owner_connection)
            if not url:
                raise InvalidArgumentError(
                    f"connection {conn_id!r}: the commit_owner extra needs 'url' or 'conn_id'")
            spec = CommitOwnerSpec(otype, str(url), owner)
        return cls(conn_id=conn_id, base_uri=base, storage_options=options,
                   credentials=(login or None, password or None), credential_keys=cred_keys,
                   commit_owner=spec, single_writer=_as_bool(extra.get("single_writer", False)),
                   catalog_url=_catalog_url(extra.get("catalog"), conn_id))

    # ------------------------------------------------------------------ uris
    def resolve(self, table_uri: str) -> str:
        """The absolute URI of ``table_uri`` (relative ones below the base URI)."""
        if table_uri is None or not str(table_uri).strip():
            raise InvalidArgumentError("table_uri is required")
        table_uri = str(table_uri).strip()
        if is_absolute_uri(table_uri):
            return os.path.expanduser(table_uri) if table_uri.startswith("~") else table_uri
        if not self.base_uri:
            where = f"connection {self.conn_id!r} has no base URI (host)" if self.conn_id else "no connection was given"
            raise InvalidArgumentError(
                f"relative table_uri {table_uri!r} cannot be resolved: {where}. Pass an absolute "
                "path or URL, or a delta_conn_id whose host is the base URI")
        return join_uri(self.base_uri, table_uri)

    # --------------------------------------------------------------- storage
    def storage_options_for(self, uri: str) -> dict[str, Any]:
        """fsspec options for the table at ``uri``: extras plus mapped login/password.

        Credentials only go to tables on the same storage as the base URI (or to any
        table when there is no base URI), by the log layer's rule
        (:func:`~..log.read.data_paths.options_for_place`): a connection for ``s3://`` hands
        its keys to no ``abfs://`` URL but to an ``s3a://`` one (one store), and host- or
        account-bound credentials (an SFTP/HTTP password, an Azure key or SAS token) to no
        table on another host or account.
        """
        proto = uri_protocol(uri)
        options = dict(self.storage_options)
        login, password = self.credentials
        if (login or password) and proto not in NO_CREDENTIALS:
            lkey, pkey = self.credential_keys or CREDENTIAL_KEYS.get(proto, DEFAULT_CREDENTIAL_KEYS)
            if login and lkey:
                options[lkey] = login
            if password and pkey:
                options[pkey] = password
        if self.base_uri:
            return options_for_place(uri, options, self.base_uri)
        return options

    def describe(self) -> dict[str, Any]:
        """What this connection resolves to, with secrets removed (for logs and test_connection)."""
        return {
            "conn_id": self.conn_id,
            "base_uri": self.base_uri,
            "storage_options": redact_options(self.storage_options),
            "has_login": bool(self.credentials[0]),
            "has_password": bool(self.credentials[1]),
            "commit_owner": self.commit_owner.describe() if self.commit_owner else None,
            "single_writer": self.single_writer,
        }
