"""Where the files a log action names live: table-relative paths and absolute URIs alike.

``add.path``/``remove.path`` and a ``p`` deletion vector's path are URIs (PROTOCOL.md,
"Add File and Remove File"): usually relative to the table root, sometimes absolute
(``s3://bucket/t/x.parquet``, Hadoop's ``file:/t/x.parquet``, ``file:///t/x.parquet``,
or a scheme-less ``/t/x.parquet`` on the table's own file system; shallow clones and
some writers). This module is the one rule that says where such a path points, given
paths as the read engine hands them out (already percent-decoded):

- the reader opens data and DV files through :func:`open_path`;
- whatever hands a file to another reader (a manifest, a pinned Spark snapshot, a shallow clone)
  names it by :func:`file_uri`;
- vacuum and metadata cleanup, which delete files, ask :func:`table_relative` whether a
  path names a file under the table root. It answers a root-relative path, ``None`` for a
  file that is certainly elsewhere, or :class:`Undecided` when it cannot tell (another
  file-system scheme that may alias this one), so a caller that deletes can keep every
  file the path might name.

Schemes that reach the same store under different names (``s3``/``s3a``/``s3n``,
``gs``/``gcs``; ``abfs``/``abfss``/``az``/``wasb``/``wasbs``, the DFS and the Blob endpoint
of one Azure storage account) are one store here, as Hadoop's file systems make them.
A location is identified by :func:`location_of` - store, authority, path - never by its
spelling: an Azure location is (container, account) whether the account is in the URI's
host (``abfss://c@acct.dfs.core.windows.net/t``, ``wasbs://c@acct.blob.core.windows.net/t``)
or in the storage options (``az://c/t`` with ``account_name``); when the account cannot be
known, a path is :class:`Undecided` rather than outside. A spelling the fsspec driver opens elsewhere than
it reads (:func:`unplaceable`: ``s3:///b/t/x``, ``abfss://c:x@acct...``) has no place at all: Undecided,
never opened. A file elsewhere is opened through fsspec's
protocol for its scheme (:func:`_fsspec_place`), with the table's storage options each going only
where it was given for (:func:`_options_for_other_place`).

Paths are resolved lexically, as Hadoop's ``Path`` (and so Delta Spark) resolves them:
``ln/../x.parquet`` is ``x.parquet`` whether or not ``ln`` is a symbolic link.
"""
from __future__ import annotations

import os
import posixpath
import re
from typing import IO, Callable, NamedTuple
from urllib.parse import unquote

from ..base.secret_names import looks_like_secret
from ..base.errors import StorageError
from ..base.names import LOG_DIR, SIDECARS_DIR
from ..base.storage import Storage

#: Scheme -> the store it names; schemes of one store reach the same objects.
_STORE_OF_SCHEME = {
    "file": "file", "s3": "s3", "s3a": "s3", "s3n": "s3", "gs": "gs", "gcs": "gs",
    "abfs": "azure", "abfss": "azure", "az": "azure", "wasb": "azure", "wasbs": "azure", "adl": "adl",
    "memory": "memory", "hdfs": "hdfs", "http": "http", "https": "https",
}

#: RFC 3986: ALPHA *( ALPHA / DIGIT / "+" / "-" / "." )
_SCHEME_PATTERN = r"[A-Za-z][A-Za-z0-9+.-]*"
_SCHEME = re.compile(_SCHEME_PATTERN)
#: A regular expression matching the start of every absolute log path (``scheme:/`` or ``/``), for
#: vectorized kernels that send only those through :func:`table_relative`.
ABSOLUTE_PATH_REGEX = rf"^/|^{_SCHEME_PATTERN}:/"

class SplitUri(NamedTuple):
    """An absolute log path split by hand: ``urlparse`` would cut a decoded name at ``#`` or ``?``."""

    scheme: str          # lower-case; "" for a scheme-less absolute path ("/t/x.parquet")
    authority: str       # bucket, container@account, host; "" for local paths
    path: str            # absolute, starting with "/"

class Undecided(NamedTuple):
    """A path this package cannot place relative to the table root (a scheme that may alias it).

    ``path`` is the path part of the URI: a file under the root whose root-relative path it
    ends with may be the one it names.
    """

    path: str

def is_uri(path: str) -> bool:
    """True for an absolute URI (``scheme://...`` or Hadoop's ``file:/...``), False for a table path."""
    return split_uri(path) is not None and not path.startswith("/")

def split_uri(path: str) -> SplitUri | None:
    """``scheme``, ``authority`` and ``path`` of an absolute log path; None for a table-relative one.

    Only ``scheme:/...`` counts as a URI, with a scheme of RFC 3986 characters: paths arrive
    decoded, and a decoded relative name may hold a colon (``ts=00:00:00/x.parquet``). A
    one-letter scheme is a Windows drive letter, so such a path is an absolute local path.
    """
    if path.startswith("/"):
        return SplitUri("", "", path)
    scheme, sep, rest = path.partition(":")
    if not sep or not rest.startswith("/") or not _SCHEME.fullmatch(scheme):
        return None
    if len(scheme) == 1:                       # C:/x: a drive letter
        return SplitUri("file", "", path)
    if rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        return SplitUri(scheme.lower(), authority, "/" + tail if slash else "/")
    return SplitUri(scheme.lower(), "", rest if rest.startswith("/") else "/" + rest)

def store_of_scheme(scheme: str) -> str | None:
    """The store a scheme names (``s3a`` -> ``s3``): schemes of one store reach the same objects,
    so locations are compared by store, never by scheme text. None for a scheme this package
    does not know."""
    return _STORE_OF_SCHEME.get(scheme.lower())

#: An Azure storage account's host, DFS or Blob endpoint: ``acct.dfs.core.windows.net``,
#: ``acct.blob.core.chinacloudapi.cn`` -> the account and its cloud (a port, or a fully qualified name's
#: final dot, names the same endpoint: ``acct.dfs.core.windows.net.:443``)
_AZURE_HOST = re.compile(r"(?P<account>[a-z0-9]+)\.(?:dfs|blob)\.(?P<cloud>core\.[^:]+?)\.?(?::[0-9]*)?",
                         re.IGNORECASE)
#: The public cloud's endpoint suffix, adlfs's default for a bare ``account_name``
_AZURE_CLOUD = "core.windows.net"
#: The Azure clouds' storage endpoint suffixes (public, China, US Government, the retired Germany cloud): an
#: account's host in any other ``core.<suffix>`` (``x.dfs.core.evil.example``, the lookalike
#: ``acct.dfs.core.windows.net.evil.example``) is nobody's Azure account, and adlfs would send it the
#: ``AZURE_STORAGE_*`` credentials of the environment, which no option can withhold
_AZURE_CLOUDS = frozenset({_AZURE_CLOUD, "core.chinacloudapi.cn", "core.usgovcloudapi.net", "core.cloudapi.de"})


class Location(NamedTuple):
    """Where an absolute URI points, by what identifies the place rather than by its spelling."""

    store: str | None    # :func:`store_of_scheme`; None for a scheme this package does not know
    written: str         # the authority as written (Azure: with the account the options give, if any)
    authority: str | None  # the place's identity: bucket, host, ``container@account.cloud`` for Azure;
    #                        None when it cannot be known (an Azure account neither URI nor options name)
    path: str            # absolute, lexically resolved
    unplaced: bool = False  # the driver may open another place, path included (:func:`unplaceable`)


#: The storage emulator's account, which ``UseDevelopmentStorage=true`` names (the SDK: ``127.0.0.1:10000``)
_DEVELOPMENT_ACCOUNT = "devstoreaccount1"


def _connection_string_account(connection_string: str) -> str | None:
    """``account.cloud`` an Azure connection string reaches, read as the SDK reads it (field names in any
    case, blanks around them part of the name; ``UseDevelopmentStorage=true``: the emulator's
    ``devstoreaccount1``): its ``BlobEndpoint`` when that is an account's endpoint (the SDK sends every
    request there, whatever ``AccountName`` says), else its ``AccountName`` in its ``EndpointSuffix``'s cloud
    (an emulator's ``BlobEndpoint=http://127.0.0.1:10000/acct``); None if it names none (a SAS connection
    string for a custom domain) or the SDK refuses it (a field without ``=``)."""
    parts = [part.split("=", 1) for part in str(connection_string).rstrip(";").split(";")]
    if any(len(part) != 2 for part in parts):
        return None             # the SDK refuses it ("blank or malformed"): no account adlfs connects to
    # as azure-storage-blob's parse_connection_str: field names upper-cased, never stripped (' AccountName' is
    # another field, which the SDK ignores), a later field of one name over an earlier one
    fields = {key.upper(): value for key, value in parts}
    if fields.get("USEDEVELOPMENTSTORAGE") == "true":
        return f"{_DEVELOPMENT_ACCOUNT}.{_AZURE_CLOUD}"
    endpoint = _AZURE_HOST.fullmatch(fields.get("BLOBENDPOINT", "").split("://")[-1].split("/")[0])
    if endpoint:
        return f"{endpoint['account']}.{endpoint['cloud']}".lower()
    name = fields.get("ACCOUNTNAME")
    return f"{name}.{fields.get('ENDPOINTSUFFIX') or _AZURE_CLOUD}".lower() if name else None


def _host_account(host: str) -> str | None:
    """``account.cloud`` of an Azure account's DFS or Blob host (``acct.dfs.core.windows.net``); None for
    any other host (a custom domain, a private endpoint, an emulator's address)."""
    match = _AZURE_HOST.fullmatch(host)
    return f"{match['account']}.{match['cloud']}".lower() if match else None


def _accounts_named(storage_options: dict, environment_name: bool = True) -> set[str | None]:
    """Every ``account.cloud`` that Azure storage options name, None for one that cannot be known. adlfs
    connects with the connection string - the option's, else ``AZURE_STORAGE_CONNECTION_STRING`` from
    the environment, which adlfs reads - whatever else is given; without one, with ``account_host`` (its
    ``account_name`` the same account's name), else with ``account_name`` in the public cloud - the option's,
    else ``AZURE_STORAGE_ACCOUNT_NAME`` from the environment, as adlfs reads it (only when the URI names no
    account: ``environment_name=False`` for one that does, as adlfs takes the URI's over the environment's)."""
    named: set[str | None] = set()
    name = storage_options.get("account_name") or (
        os.environ.get("AZURE_STORAGE_ACCOUNT_NAME") if environment_name else None)
    host = storage_options.get("account_host")
    if host:
        account = _host_account(str(host).split("://")[-1].strip("/"))
        named.add(account)
        if name and (account is None or account.partition(".")[0] != str(name).lower()):
            named.add(f"{name}.?".lower())                      # a second account's name: doubt
    elif name:
        named.add(f"{name}.{_AZURE_CLOUD}".lower())
    connection_string = storage_options.get("connection_string") or os.environ.get("AZURE_STORAGE_CONNECTION_STRING")
    if connection_string:
        named.add(_connection_string_account(connection_string))
    return named


def _azure_account(storage_options: dict) -> str | None:
    """``account.cloud`` the storage options name for a URI without one (adlfs's ``account_host``,
    ``account_name`` or a connection string's account); None if they name none, or more than one: adlfs
    connects to one of them, and a caller that deletes must not guess which."""
    named = _accounts_named(storage_options)
    return named.pop() if len(named) == 1 else None


def table_location(parts: SplitUri, storage_options: dict | None = None) -> Location:
    """The place of a table root (or any place: an absolute URI, split) that is opened with ``storage_options``:
    as :func:`location_of`, except that an Azure root is in an account only when the URI and the options (and
    adlfs's environment) agree on it. adlfs connects with a connection string, or an ``account_host``, over
    the URI's host: two accounts named are doubt (None), so a vacuum keeps every file a path may name."""
    location = location_of(parts, storage_options)
    if location.store != "azure" or location.authority is None:
        return location
    container, _, account = location.authority.partition("@")
    # the URI's account, or the one the options (or the environment's name) give when it names none
    named = _accounts_named(storage_options or {}, environment_name=False) | {account}
    return location if len(named) == 1 else location._replace(authority=None)


#: Stores whose first path segment a driver takes for the bucket/container when the URI's authority is empty
#: (s3fs, gcsfs and adlfs drop ``s3:///b/t/x``'s empty authority and read bucket ``b``): Hadoop's S3A, GCS and
#: ABFS file systems find no bucket in such a URI and fail
_BUCKET_STORES = frozenset({"s3", "gs", "azure"})


def unplaceable(parts: SplitUri) -> str | None:
    """Why the fsspec driver may open another place than this module reads from an absolute URI (split), or
    None when they agree. Such a place is never the table's (no identity: a vacuum keeps every file it may
    name, :class:`Undecided`), and a file there is not opened (StorageError):

    - an empty bucket or container (``s3:///b/t/x``, ``abfs:///c/t/x``, ``abfss://@acct.dfs.../c/x``): the
      driver takes the first path segment for it;
    - an Azure authority with an ``@`` besides the container's (``c@evil.com@other.dfs...``): fsspec and adlfs
      (``urlsplit``) take the host after the last ``@``, this module the container before the first;
    - an Azure container with a ``:`` (``c:x@acct...``): fsspec reads ``c`` as the URI's user name, ``x`` as
      its password, and adlfs opens container ``c`` (hadoop-azure: container ``c:x``, an invalid name);
    - an Azure authority that is a host without a container (``abfss://acct.dfs.core.windows.net/c/t/x``,
      adlfs's account-host form, or one with a port): adlfs takes the container from the first path segment
      (hadoop-azure fails). No container name holds a ``.`` or a ``:``; ``wasb://acct.blob.../x``, the Blob
      endpoint's root container, is placed as ``$root`` (:func:`_azure_authority`) and opened so.
    """
    store = store_of_scheme(parts.scheme)
    if store in _BUCKET_STORES and not parts.authority:
        return "its bucket or container is empty, so the driver would take the first path segment for it"
    if store != "azure":
        return None
    if parts.authority.count("@") > 1:
        return "its authority has more than one '@', so adlfs would reach the account after the last one"
    container, at, _ = parts.authority.partition("@")
    if at and not container:
        return "its container is empty, so adlfs would take the first path segment for it"
    if at and ":" in container:
        return f"its container {container!r} holds a ':', which fsspec reads as a user name and password"
    if not at and parts.scheme in ("wasb", "wasbs") and "." in container:
        return None                                     # wasb://acct.blob.core.windows.net/x: the root container
    if not at and (":" in container or "." in container):
        return (f"its authority {container!r} is a host, not a container, so adlfs would take the container "
                "from the first path segment")
    return None


def _azure_authority(scheme: str, authority: str, storage_options: dict) -> tuple[str, str | None]:
    """(written, identity) of an Azure URI's authority: ``container@account.cloud``, the account from
    the host (DFS or Blob endpoint) or, when the URI has none, from the storage options; no identity for
    an authority whose place adlfs may read otherwise (:func:`unplaceable`)."""
    if unplaceable(SplitUri(scheme, authority, "/")):
        return authority.lower(), None
    container, at, host = authority.partition("@")
    if not at and scheme in ("wasb", "wasbs") and "." in authority:
        container, host = "$root", authority            # wasb://acct.blob.core.windows.net/: the root container
    if host:
        account = _host_account(host)
        return f"{container}@{host.lower()}", (f"{container}@{account}" if account else None)
    account = _azure_account(storage_options)
    return (f"{container}@{account}" if account else container), (f"{container}@{account}" if account else None)


def _lexical(path: str) -> str:
    """``path`` with ``.``/``..`` segments and doubled slashes resolved from its text alone, as Hadoop's
    ``Path`` (so Delta Spark) resolves a log path: ``ln/../x`` is ``x`` even where ``ln`` is a symbolic
    link, which the operating system would follow first. A leading ``//`` is one slash too
    (``java.net.URI.normalize``: ``s3a://b//t/x`` is ``s3a://b/t/x``), where POSIX's normpath keeps it."""
    norm = posixpath.normpath(path)
    return "/" + norm.lstrip("/") if norm.startswith("//") else norm


def _joined_in_store(storage: Storage, path: str) -> str:
    """A relative log path joined to the table root in the storage's own form and resolved lexically,
    never above the bucket or container: the first segment of an object store's path is its bucket,
    which ``..`` must not leave (Delta Spark resolves such a path inside the table's bucket and finds
    nothing there; resolved naively, ``../../other/x`` read another bucket with the table's credentials)."""
    joined = storage.path(path)
    if storage.is_local or joined.startswith("/"):
        return _lexical(joined)
    bucket, _, rest = joined.partition("/")
    return bucket + _lexical("/" + rest)


def location_of(parts: SplitUri, storage_options: dict | None = None) -> Location:
    """The place an absolute URI (split, not scheme-less) names, read with ``storage_options`` (which
    supply an Azure account the URI does not spell)."""
    store = store_of_scheme(parts.scheme)
    path = _lexical(parts.path)
    if store == "azure":
        written, authority = _azure_authority(parts.scheme, parts.authority, storage_options or {})
        return Location(store, written, authority, path, bool(unplaceable(parts)))
    if store == "memory" and not parts.authority:
        # fsspec's memory file system drops the authority's '//': memory:///m/t is memory://m/t, one folder
        first, _, rest = path.lstrip("/").partition("/")
        return Location(store, first, first, "/" + rest)
    if unplaceable(parts):
        return Location(store, parts.authority, None, path, True)
    return Location(store, parts.authority, parts.authority, path)


def _same_authority(a: Location, b: Location) -> bool | None:
    """Whether two locations of one store are in the same bucket / container of the same account:
    None when that cannot be known (an Azure account only one of them names, or neither)."""
    if a.authority is not None and b.authority is not None:
        return a.authority == b.authority
    if a.authority is None and b.authority is None and a.written == b.written:
        return True                                     # spelled alike: one account, whichever it is
    return None


#: Stores whose URLs may name any other store's objects: S3, GCS and Azure serve every object over
#: HTTP(S) too (``https://b.s3.amazonaws.com/t/x``, path-style ``http://endpoint/b/t/x``,
#: ``https://acct.blob.core.windows.net/c/t/x``), and an HTTP server may serve a local directory
_ALIASING_STORES = frozenset({"http", "https"})


def within(inner: Location, outer: Location) -> str | Undecided | None:
    """``inner`` relative to ``outer`` (``""``: the same place), None when it is certainly elsewhere, or
    Undecided when it may be either (an unknown scheme, an HTTP(S) URL, an account that cannot be known)."""
    if inner.store is None or outer.store is None:
        return Undecided(inner.path)                    # a scheme that may alias the other
    if inner.store in _ALIASING_STORES and outer.store != inner.store:
        return Undecided(inner.path)                    # an object store's own file, by its web address?
    if inner.store != outer.store:
        return None
    same = _same_authority(inner, outer)
    if same is None and (inner.unplaced or outer.unplaced):
        return Undecided(inner.path)                    # its path may name another key too
    root = outer.path.rstrip("/")
    if inner.path != (root or "/") and not inner.path.startswith(root + "/"):
        return None
    rel = "" if inner.path == (root or "/") else inner.path[len(root) + 1:]
    if same is None:
        return Undecided(inner.path)
    return rel if same else None


def _under(root: str, path: str) -> str | None:
    """``path`` relative to ``root`` (both absolute, '/'-separated), None when outside."""
    norm = _lexical(path)
    root = root.rstrip("/")
    if norm == root or not norm.startswith(root + "/"):
        return None
    return norm[len(root) + 1:]

def _resolved_dirs(path: str) -> str:
    """A local absolute path with the symlinks of its directories resolved (not of the file itself,
    which vacuum lists under its own name): the root and the log may reach one directory by
    different names (a table opened through a symlink, an add naming the root's link)."""
    head, tail = os.path.split(os.path.abspath(path))
    return os.path.join(os.path.realpath(head), tail)

def _relative_path(path: str) -> str | None:
    """A table-relative log path with ``.`` and ``..`` resolved (as Hadoop's Path does); None above the root."""
    norm = _lexical(path)
    return None if norm in (".", "..") or norm.startswith("../") or norm.startswith("/") else norm

def table_relative(storage: Storage, path: str) -> str | Undecided | None:
    """Where a (decoded) log path points: a root-relative path, None (outside the table), or Undecided."""
    return table_relative_to(storage)(path)


def table_relative_to(storage: Storage) -> Callable[[str], str | Undecided | None]:
    """:func:`table_relative` for many paths of one table (vacuum's): the root's location (its real path,
    or its split URI and :func:`location_of`) is worked out once, on first need, not for every path."""
    root_cache: list = []

    def root() -> tuple:
        if not root_cache:
            if storage.is_local:
                root_cache.append((os.path.realpath(storage.root), None, None))
            else:
                split = split_uri(storage.root)
                assert split is not None, "a non-local table root is a URL"
                root_cache.append((None, split, table_location(split, storage.storage_options)))
        return root_cache[0]

    def relative(path: str) -> str | Undecided | None:
        parts = split_uri(path)
        if parts is None:
            rel = _relative_path(path)
            if rel is not None or not _lexical(path).startswith("../"):
                return rel
            # above the root: resolved against it, as Hadoop's Path resolves it (``../t/x`` under root ``t`` is ``x``)
            root_path = storage.root if storage.is_local else root()[1].path
            parts = SplitUri("", "", root_path.rstrip("/") + "/" + path)
        if storage.is_local:
            if parts.scheme in ("", "file"):
                if parts.authority not in ("", "localhost"):
                    return None                                   # a file on another host
                return _under(root()[0], _resolved_dirs(parts.path))
            store = store_of_scheme(parts.scheme)
            return None if store is not None and store not in _ALIASING_STORES else Undecided(_lexical(parts.path))
        _, split, location = root()
        if parts.scheme == "":                                    # absolute on the table's own store
            parts = SplitUri(split.scheme, split.authority, parts.path)
        # the reader opens the path with the table's options; spelled with the root's own authority, it is
        # wherever the root is (adlfs reaches both alike, even where the account is in doubt)
        if parts.authority.lower() == split.authority.lower():
            place = table_location(parts, storage.storage_options)
        else:
            place = _outside_location(parts, storage)
        where = within(place, location)
        return None if where == "" else where                     # the root itself is no file
    return relative

def _outside_location(parts: SplitUri, storage: Storage) -> Location:
    """Where the reader reaches a file the URI ``parts`` names outside the table's own spelling: the place
    adlfs connects to with the options :func:`locate` opens it with (and adlfs's environment: a file of
    another account that ``AZURE_STORAGE_CONNECTION_STRING`` contradicts is in doubt, as adlfs reads it from
    the string's account). A file :func:`locate` refuses to open is where its URI says."""
    try:
        options = _options_for_other_place(parts, storage.storage_options, storage.root)
    except StorageError:
        return location_of(parts, storage.storage_options)
    return table_location(parts, options)


def file_uri(table_root: str, path: str, local_prefix: str = "file://") -> str:
    """The absolute URI of the file at (decoded log path) ``path`` of the table at ``table_root`` (a URI or
    a local path), for whatever hands the file to another reader (a manifest, a pinned Spark snapshot, a
    shallow clone's add): a relative path joined to the root and resolved lexically, never above the
    bucket (as :func:`locate` reaches it); a scheme-less absolute path on the table's own file system
    (``/t/x`` is ``local_prefix + /t/x`` for a local table, ``s3://b/t/x`` for an ``s3://b/...`` one); a
    URI as it is. ``local_prefix``: ``file://`` (``file:///t/x``) or Hadoop's ``file:`` (``file:/t/x``)."""
    parts = split_uri(path)
    if parts is not None and parts.scheme != "":
        return path
    root = split_uri(table_root)
    if root is None or root.scheme in ("", "file") or (len(table_root) > 1 and table_root[1] == ":"):
        local = _local_path(root) if root is not None else os.path.abspath(table_root)
        return local_prefix + (_lexical(path) if parts is not None else _lexical(local.rstrip("/") + "/" + path))
    scheme = table_root.partition(":")[0]
    where = _lexical(path) if parts is not None else _lexical(root.path.rstrip("/") + "/" + path)
    return f"{scheme}://{root.authority}{where}"


def sidecar_location(path: str) -> str:
    """A ``sidecar`` action's path as a decoded log path: sidecar paths are percent-encoded and,
    when relative, relative to ``_delta_log/_sidecars`` (PROTOCOL.md "Sidecar File Information")."""
    decoded = unquote(path)
    return decoded if split_uri(decoded) is not None else f"{SIDECARS_DIR}/{decoded}"

def _local_path(parts: SplitUri) -> str:
    """The local path of a ``file:``/scheme-less URI (``file://host/x`` is the UNC path ``//host/x``)."""
    if parts.authority in ("", "localhost"):
        return _lexical(parts.path)
    return "//" + parts.authority + _lexical(parts.path)

def filesystem_path(storage: Storage, path: str) -> str:
    """What ``storage``'s own file system opens for a (decoded) log path: the root-joined path of a
    relative one, the local path of a ``file:`` or scheme-less URI on a local table, else the URI."""
    parts = split_uri(path)
    if parts is None:
        return _joined_in_store(storage, path)
    if storage.is_local and parts.scheme in ("", "file"):
        return _local_path(parts)
    return path

class FileLocation(NamedTuple):
    """Where the file a log path names is reached: a storage whose ``files`` open it, and its path there."""

    storage: Storage
    path: str           # in ``storage``'s own form (a local path for local files)

def locate(storage: Storage, path: str) -> FileLocation:
    """The file system and path that reach the file at (decoded log path) ``path``, table-relative
    or absolute: the table's own storage for a relative path, a local file, and a URI of a file
    under the table's root however spelled (:func:`table_relative`), else a storage rooted at the
    file itself. Paths resolve lexically (:func:`_lexical`), as Delta Spark resolves them."""
    parts = split_uri(path)
    if parts is None:
        return FileLocation(storage, _joined_in_store(storage, path))
    if parts.scheme == "file" or (parts.scheme == "" and storage.is_local):
        if parts.authority not in ("", "localhost") and os.name != "nt":
            # file://host/x: another host's file (Hadoop: "Wrong FS", Delta Spark reads nothing). POSIX has
            # no UNC paths: '//host/x' is '/host/x' here, a local file vacuum does not keep for this path
            raise FileNotFoundError(f"{path!r} names a file on host {parts.authority!r}, not on this machine")
        local = _local_path(parts)
        return FileLocation(storage if storage.is_local else Storage(local), local)
    if not storage.is_local:
        rel = table_relative(storage, path)
        if isinstance(rel, str):                              # the table's own file, in another spelling
            return FileLocation(storage, storage.path(rel))
    if parts.scheme == "":                                    # absolute on the table's own store
        root = split_uri(storage.root)
        assert root is not None, "a non-local table root is a URL"
        parts = SplitUri(root.scheme, root.authority, parts.path)
    uri = _fsspec_place(parts) + _lexical(parts.path)
    options = _options_for_other_place(parts, storage.storage_options, storage.root)
    try:
        other = Storage(uri, options)                             # rooted at the file
    except (ValueError, ImportError, StorageError) as e:    # fsspec: no such protocol, its driver missing or refusing
        raise StorageError(f"cannot open {path!r}, a file outside the table, through fsspec ({uri!r}): {e}") from e
    return FileLocation(other, other.path())


#: fsspec's protocol for a scheme it knows by another name: Hadoop's ``s3n`` is S3 (s3fs); the Blob
#: endpoint's ``wasb``/``wasbs`` reach an account that adlfs opens as ``abfs`` (it serves Blob and DFS
#: spellings alike). The other schemes of :data:`_STORE_OF_SCHEME` are fsspec protocols as written.
_FSSPEC_PROTOCOL = {"s3n": "s3", "wasb": "abfs", "wasbs": "abfs"}


def _fsspec_place(parts: SplitUri) -> str:
    """``protocol://authority`` under which fsspec opens the files of an absolute URI's place (a bucket, a
    container): the scheme as fsspec names it (:data:`_FSSPEC_PROTOCOL`) and, for an Azure URI that names
    its account, ``container@account.blob.cloud`` (a ``wasb`` root-container URI's ``$root``; the host
    without port or final dot, the account in lower case as adlfs expects it)."""
    protocol = _FSSPEC_PROTOCOL.get(parts.scheme, parts.scheme)
    reason = unplaceable(parts)
    if reason:
        raise StorageError(f"refusing to open {parts.scheme}://{parts.authority}{parts.path}: {reason}")
    if store_of_scheme(parts.scheme) == "azure":
        identity = location_of(parts).authority                   # container@account.cloud, from the URI
        if identity is not None:
            container, _, account = identity.partition("@")
            name, _, cloud = account.partition(".")
            return f"{protocol}://{container}@{name}.blob.{cloud}"
    return f"{protocol}://{parts.authority}"


def fsspec_uri(path: str) -> str:
    """The URI under which fsspec opens an absolute (decoded) log path of an object store: its place as
    :func:`_fsspec_place` names it (``s3n://b/x`` is ``s3://b/x``), the path resolved lexically. A local or
    scheme-less path is returned as it is."""
    parts = split_uri(path)
    if parts is None or parts.scheme in ("", "file"):
        return path
    return _fsspec_place(parts) + _lexical(parts.path)


#: Azure storage options that say which account the table is in (:func:`_azure_account`): a file whose URI
#: names its account is reached there. ``account_host`` (a private endpoint's, another cloud's) goes along
#: only to a file of the table's own account; ``account_name`` never (adlfs takes the account from the
#: URI's host and refuses a second, differently spelled one)
_AZURE_ACCOUNT_OPTIONS = ("account_name", "account_host")
#: Azure credentials good for one storage account only - its key, a SAS token it signed, a connection string
#: (which holds the key or a SAS, and names its account), a ``credential`` that is a key or SAS rather than an
#: identity: sent only to a file of the account they were given for (to another account they could not
#: authenticate anyway, and a SAS token or connection string would leave the account it was issued for)
_AZURE_ACCOUNT_CREDENTIALS = ("account_key", "sas_token", "connection_string", "credential")
#: Azure credentials of an identity (a Microsoft Entra ID service principal, or ``anon``: none): the token
#: they obtain is for Azure Storage of one cloud, and every account of that cloud checks it against its own
#: role assignments. They go to another account of the table's cloud (a clone's source in another account
#: the same principal may read), never to another cloud's host. ``credential`` counts here only when it is
#: a token credential (:func:`_is_token_credential`); an identity in the environment is adlfs's own choice
_AZURE_IDENTITY_CREDENTIALS = ("client_id", "client_secret", "tenant_id", "anon", "credential")


def _is_token_credential(value: object) -> bool:
    """Whether an adlfs ``credential`` is an identity's (azure-core's token credential protocol: it
    obtains tokens), not a SAS string, ``AzureSasCredential`` or ``AzureNamedKeyCredential``."""
    return callable(getattr(value, "get_token", None))


def _azure_account_of(parts: SplitUri, storage_options: dict) -> str | None:
    """``account.cloud`` of an Azure URI (from its host, else the storage options); None if unknown."""
    identity = location_of(parts, storage_options).authority
    return (identity.partition("@")[2] or None) if identity else None


def _azure_options_for_account(file_account: str, storage_options: dict, table_account: str | None) -> dict:
    """The table's Azure storage options for a file of the account ``file_account`` (``account.cloud``), which
    its URI names: each credential only where it was given for (:data:`_AZURE_ACCOUNT_CREDENTIALS`,
    :data:`_AZURE_IDENTITY_CREDENTIALS`), the file's account by name (and, outside the public cloud, by
    host: adlfs finds only a public cloud's account in a URI), other settings as the table has them (an
    unknown one whose name looks like a secret's only to the same account). An account the table's
    options do not name counts as another one; its cloud as adlfs's default. A file in neither one of the
    Azure clouds (:data:`_AZURE_CLOUDS`) nor the table's is refused (StorageError)."""
    name, _, cloud = file_account.partition(".")
    same_account = table_account == file_account
    same_cloud = cloud == (table_account or f".{_AZURE_CLOUD}").partition(".")[2]
    if not same_cloud and cloud not in _AZURE_CLOUDS:
        raise StorageError(f"refusing to open a file at {name}.blob.{cloud}: {cloud!r} is none of the Azure clouds "
                           f"({', '.join(sorted(_AZURE_CLOUDS))}) nor the table's, and adlfs would send it the "
                           "AZURE_STORAGE_* credentials of the environment")
    options = {}
    for key, value in storage_options.items():
        if key in _AZURE_ACCOUNT_OPTIONS:
            keep = same_account and key == "account_host"
        elif key == "connection_string":
            keep = _connection_string_account(value) == file_account     # it names the account it is for
        elif key == "credential" and _is_token_credential(value):
            keep = same_cloud
        elif key in _AZURE_ACCOUNT_CREDENTIALS:
            keep = same_account
        elif key in _AZURE_IDENTITY_CREDENTIALS:
            keep = same_cloud
        else:          # a setting; one this module does not know whose name looks secret: as an account's
            keep = same_account or not looks_like_secret(key)
        if keep:
            options[key] = value
    if cloud != _AZURE_CLOUD:        # adlfs reads a public cloud's account from the URI, only that one
        options["account_name"] = name
        options.setdefault("account_host", f"{name}.blob.{cloud}")
    if not same_cloud:
        options["anon"] = True       # else adlfs would fetch an ambient identity's token for that host
    return options


#: Stores whose credentials are an identity's, valid in every bucket its policies allow (S3, GCS), or that have
#: none (local, in-memory). Azure's are an account's or an identity's (:func:`_azure_options_for_account`). Every
#: other store's credentials - an HTTP ``Authorization`` header, an SFTP/FTP/WebDAV user name and password, a
#: store this package does not know - are a host's: they go to that host only (Hadoop keys them per host,
#: ``fs.sftp.password.<host>.<user>``)
_IDENTITY_STORES = frozenset({"s3", "gs", "file", "memory"})


def _store_key(scheme: str) -> str:
    """The store a scheme reaches (:func:`store_of_scheme`), else the scheme itself: ``sftp`` is no ``ftp``."""
    return store_of_scheme(scheme) or scheme.lower()


def _host_of(authority: str) -> str:
    """``host[:port]`` of a URI's authority, without its user information, the host in lower case."""
    return authority.rpartition("@")[2].lower()


def _parts_of(uri: str) -> SplitUri:
    """An absolute URI or local path, split; a local path (or ``file:`` URI) is the ``file`` store."""
    parts = split_uri(uri)
    if parts is None or parts.scheme == "":
        return SplitUri("file", "", parts.path if parts is not None else uri)
    return parts


def _azure_account_scope(parts: SplitUri, storage_options: dict) -> str | None:
    """The account an Azure URI opened with ``storage_options`` reaches (``account.cloud``), ``""`` for the one
    the options (or adlfs's environment) name when neither they nor the URI say which, None when in doubt."""
    if unplaceable(parts):
        return None
    identity = table_location(parts, storage_options).authority
    if identity is not None:
        return identity.partition("@")[2]
    return "" if "@" not in parts.authority else None


def one_credential_place(uri: str, given_for: str, storage_options: dict) -> bool:
    """Whether credentials given (in ``storage_options``) for the place ``given_for`` may go to ``uri``: one
    store (by :func:`store_of_scheme`: ``s3a`` and ``s3`` are one) and, where credentials are bound to a
    host or an Azure account, the same host (port included) or account."""
    place, origin = _parts_of(uri), _parts_of(given_for)
    store = _store_key(place.scheme)
    if store != _store_key(origin.scheme):
        return False
    if store in _IDENTITY_STORES:
        return True
    if store == "azure":
        account = _azure_account_scope(place, storage_options)
        return account is not None and account == _azure_account_scope(origin, storage_options)
    return _host_of(place.authority) == _host_of(origin.authority)


def options_for_place(uri: str, storage_options: dict, given_for: str) -> dict:
    """The storage options given for the place ``given_for`` (a table root, a connection's base URI) that may
    go to ``uri``: all of them within one credential place (:func:`one_credential_place`), else each only
    where it was given for (:func:`_options_for_other_place`; nothing when ``uri`` cannot be opened)."""
    if one_credential_place(uri, given_for, storage_options):
        return dict(storage_options)
    try:
        return _options_for_other_place(_parts_of(uri), storage_options, given_for)
    except StorageError:
        return {}


def _options_for_other_place(parts: SplitUri, storage_options: dict, table_root: str | None = None) -> dict:
    """The table's storage options for a file outside it. A file of another store (an ``https://`` URL
    in an ``s3://`` table) gets none: they are another file system's settings and credentials (fsspec's
    HTTP file system handed the S3 ``endpoint_url`` to aiohttp: a raw TypeError; and credentials would go
    to whatever host the URL names). A file of the same store in another bucket gets them all: S3 and GCS
    credentials are an identity's, valid wherever its policies allow. A file on another host of a store whose
    credentials are a host's (:data:`_IDENTITY_STORES`: HTTP headers, SFTP/FTP/WebDAV passwords) gets none.
    An Azure URI that names its account gets each credential only where it was given for
    (:func:`_azure_options_for_account`); one that does not is in the account the table's options name, the
    table's own."""
    root = split_uri(table_root) if table_root else None
    store = _store_key(parts.scheme)
    if root is not None and root.scheme and store != _store_key(root.scheme):
        return {}
    if unplaceable(parts):
        return {}                   # a place the driver may read otherwise than its URI says: none of the table's
    if (store not in _IDENTITY_STORES and store != "azure" and root is not None
            and _host_of(parts.authority) != _host_of(root.authority)):
        return {}                   # another host: the table's host-bound credentials are not for it
    file_account = _azure_account_of(parts, {}) if store == "azure" else None
    if file_account is None:        # not Azure, or no account in the URI: the table's own
        return storage_options
    table_identity = table_location(root, storage_options).authority if root is not None and root.scheme else None
    table_account = (table_identity.partition("@")[2] or None) if table_identity else None
    return _azure_options_for_account(file_account, storage_options, table_account)


def table_root_of(storage: Storage, path: str) -> Storage:
    """The root of the table the file at (decoded log path) ``path`` belongs to.

    A table-relative path belongs to ``storage``'s table. For an absolute one (a clone's add,
    a clone of a clone's) the nearest folder above the file that holds a ``_delta_log`` is the
    root; when none does (the table is gone), the file's own folder stands for it, the
    narrowest place whose vacuum could reach the file.
    """
    parts = split_uri(path)
    if parts is None:
        return storage
    if parts.scheme == "file" or (parts.scheme == "" and storage.is_local):
        store, file_path = "", _local_path(parts)
    elif parts.scheme == "":                                  # absolute on the table's own store
        root = split_uri(storage.root)
        assert root is not None, "a non-local table root is a URL"
        store, file_path = f"{root.scheme}://{root.authority}", parts.path
    else:
        store, file_path = _fsspec_place(parts), parts.path
    folder = posixpath.dirname(posixpath.normpath(file_path))
    options = _options_for_other_place(parts, storage.storage_options, storage.root)
    here = folder
    while True:
        candidate = Storage(store + here, options)
        if candidate.exists(LOG_DIR):
            return candidate
        parent = posixpath.dirname(here)
        if parent == here:
            return Storage(store + folder, options)
        here = parent

def open_path(storage: Storage, path: str) -> str | IO[bytes]:
    """Something pyarrow can read: a local path, or an open binary file."""
    where = locate(storage, path)
    return where.path if where.storage.is_local else where.storage.files.open(where.path)

def read_path_bytes(storage: Storage, path: str) -> bytes:
    """The whole content of the file at ``path`` (raises FileNotFoundError if it is gone)."""
    src = open_path(storage, path)
    if isinstance(src, str):
        with open(src, "rb") as f:
            return f.read()
    with src:
        return src.read()

def path_exists(storage: Storage, path: str) -> bool:
    """Whether the file at (decoded log path) ``path``, table-relative or absolute, is there."""
    try:
        where = locate(storage, path)
    except FileNotFoundError:
        return False                  # a place this machine cannot reach
    return where.storage.files.exists(where.path)
