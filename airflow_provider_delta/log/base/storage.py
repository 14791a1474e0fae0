"""Storage access for the Delta log: one front class over a local and an fsspec backend.

:class:`Storage` gives the log layer what it needs from a filesystem: list a
directory with sizes and modification times, read a file, write a file atomically
*only if it does not exist yet* (the commit primitive of the Delta protocol),
overwrite a file atomically (``_last_checkpoint``) and delete. It decides what is
local (:func:`normalize_uri`) and turns table-relative names into paths; the
operations themselves are done by a backend:

* local paths by :class:`~.local_files.LocalFiles` (``os`` only: a task that reads a
  local table never imports fsspec, whose import costs more than listing a large log);
* every other URL by :class:`~.fsspec_files.FsspecFiles`, loaded on the first such
  URL (a lazy import of a heavy dependency, not a dodged cycle: that module does not
  import this one), which holds the object-store rules (no cached listings, checked
  conditional creates, refusing commits where put-if-absent is not atomic).
"""
from __future__ import annotations

import os
from typing import Any
from urllib.parse import urlparse

from .file_info import OWN_TEMP_FILE, FileInfo, temp_name
from .local_files import LocalFiles

__all__ = ["CONDITIONAL_CREATE_PROTOCOLS", "FileInfo", "OWN_TEMP_FILE", "Storage", "normalize_uri", "temp_name"]

#: fsspec protocols whose ``open(path, "xb")`` is an atomic conditional create on the
#: service itself (s3fs: ``If-None-Match: *``; gcsfs: ``ifGenerationMatch=0``; adlfs:
#: ``overwrite=False``), failing with FileExistsError when the object exists. Recent
#: releases of those packages are needed (s3fs fixed small files in 2025).
CONDITIONAL_CREATE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"})

_LOCAL = LocalFiles()


def normalize_uri(uri: str) -> tuple[str, str]:
    """(protocol, location) of a table URI: the one place that decides what is local.

    Local paths and ``file:`` URLs give ``("file", <absolute path>)`` (``file://localhost/x``
    is ``/x``); any other URL keeps its form, without a trailing slash, its scheme in lower case
    (RFC 3986: schemes are case-insensitive; fsspec knows ``s3``, not ``S3``). A one-letter
    scheme is a Windows drive letter, not a protocol.
    """
    uri = str(uri)
    parsed = urlparse(uri)
    if len(parsed.scheme) <= 1 or parsed.scheme == "file":
        path = parsed.path if parsed.scheme == "file" else uri
        if parsed.scheme == "file" and parsed.netloc not in ("", "localhost"):
            path = "//" + parsed.netloc + parsed.path
        return "file", os.path.abspath(os.path.expanduser(path)).rstrip("/") or "/"
    return parsed.scheme, (parsed.scheme + uri[len(parsed.scheme):]).rstrip("/")


def canonical_uri(uri: str) -> str:
    """The one spelling of a table location (what :attr:`Storage.uri` returns): catalogs key tables by it."""
    protocol, location = normalize_uri(uri)
    return "file://" + location if protocol == "file" else location


class Storage:
    """Access rooted at a table location.

    Commits need an atomic put-if-absent: local files (link of a complete temporary
    file), ``memory://`` (under a lock), and object stores whose fsspec driver does a
    conditional create for ``open(path, "xb")`` (see ``CONDITIONAL_CREATE_PROTOCOLS``;
    ``conditional_put=True`` declares another backend capable, ``False`` distrusts one).
    ``single_writer=True`` allows commits on any other backend; only safe when exactly
    one process ever writes the table.
    """

    def __init__(self, uri: str, storage_options: dict[str, Any] | None = None,
                 single_writer: bool = False, conditional_put: bool | None = None):
        self.protocol, self.root = normalize_uri(uri)
        self.storage_options = dict(storage_options or {})
        self.single_writer = single_writer
        conditional = (self.protocol in CONDITIONAL_CREATE_PROTOCOLS) if conditional_put is None \
            else bool(conditional_put)
        self.is_local = self.protocol == "file"
        if self.is_local:
            self.files: Any = _LOCAL
            self._conditional_put = conditional
            self._fs_root = self.root
            self._local_fs = None
        else:
            from .fsspec_files import FsspecFiles   # fsspec only for tables that need it
            self.files = FsspecFiles(self.protocol, self.root, self.storage_options, single_writer, conditional)
            self._fs_root = self.files.root

    @property
    def conditional_put(self) -> bool:
        """Whether a create-only write is trusted as atomic here (switched off when a declared
        single writer meets a store that failed the check)."""
        return self._conditional_put if self.is_local else self.files.conditional_put

    @property
    def fs(self) -> Any:
        """The fsspec filesystem, for callers that need fsspec's generic API (Spark staging,
        batched object-store reads). Built on first use for a local table."""
        if not self.is_local:
            return self.files.fs
        if self._local_fs is None:
            from .fsspec_files import local_filesystem
            self._local_fs = local_filesystem()
        return self._local_fs

    # ------------------------------------------------------------------ paths
    @property
    def uri(self) -> str:
        """The table root as a URI other engines understand."""
        return ("file://" + self.root) if self.is_local else self.root

    def path(self, *parts: str) -> str:
        """Path inside the table root, in the filesystem's own (protocol-less) form."""
        p = self._fs_root
        for part in parts:
            if part:
                p = p.rstrip("/") + "/" + part.lstrip("/")
        return p

    def full_uri(self, rel: str) -> str:
        """URI (with protocol) of a path relative to the table root."""
        if self.is_local:
            return os.path.join(self.root, rel)
        return self.root + "/" + rel.lstrip("/")

    def relative(self, abs_path: str) -> str:
        """Path relative to the table root (inverse of :meth:`path`)."""
        root = self._fs_root.rstrip("/") + "/"
        return abs_path[len(root):] if abs_path.startswith(root) else abs_path

    def _resolve(self, rel_or_abs: str) -> str:
        if self.is_local:
            return rel_or_abs if os.path.isabs(rel_or_abs) else self.path(rel_or_abs)
        return rel_or_abs if rel_or_abs.startswith(self._fs_root) else self.path(rel_or_abs)

    # ------------------------------------------------------------------ reads
    def list_dir(self, rel_dir: str) -> list[FileInfo]:
        """Files (not directories) directly in ``rel_dir``; empty list if it does not exist."""
        return self.files.list_dir(self.path(rel_dir))

    def list_dir_from(self, rel_dir: str, first_name: str, scan_local: bool = False) -> list[FileInfo] | None:
        """Files in ``rel_dir`` named ``first_name`` or later (string order), in one ranged
        listing where the store has one (see :mod:`.object_store`); None where it has not.
        ``scan_local``: on a local disk, one scan of the names and a stat of those from ``first_name`` on."""
        entries = self.files.list_from(self.path(rel_dir), first_name)
        if entries is None and scan_local and getattr(self.files, "is_local", False):
            entries = self.files.scan_from(self.path(rel_dir), first_name)
        return entries

    def file_info(self, rel: str) -> FileInfo | None:
        """Size and mtime of one file in one call (a stat, or a HEAD); None if it is not there."""
        return self.files.file_info(self.path(rel))

    def exists(self, rel: str) -> bool:
        return self.files.exists(self.path(rel))

    def isdir(self, rel: str) -> bool:
        return self.files.isdir(self.path(rel))

    def read_bytes(self, rel_or_abs: str) -> bytes:
        return self.files.read_bytes(self._resolve(rel_or_abs))

    def read_into(self, rel_or_abs: str, view: memoryview) -> int | None:
        """A local file read into ``view`` (its length, None if it does not fit); local storage only."""
        return self.files.read_into(self._resolve(rel_or_abs), view)

    def open(self, rel_or_abs: str, mode: str = "rb"):
        return self.files.open(self._resolve(rel_or_abs), mode)

    def mtime_ms(self, rel: str) -> int:
        info = self.file_info(rel)
        if info is None:
            raise FileNotFoundError(self.path(rel))
        return info.mtime_ms

    def walk_files(self, rel_dir: str = "") -> list[FileInfo]:
        """Every file under ``rel_dir`` recursively (used by vacuum)."""
        return self.files.walk_files(self.path(rel_dir))

    # ----------------------------------------------------------------- writes
    @property
    def supports_atomic_put_if_absent(self) -> bool:
        return self.is_local or self.files.atomic_put_if_absent

    def put_if_absent(self, rel: str, data: bytes) -> bool:
        """Write ``data`` at ``rel`` only if nothing is there; return False if it already exists.

        Readers never see a partial file (see the backends for how each does it); where
        the backend has no atomic way, StorageError unless a single writer was declared.
        """
        return self.files.put_if_absent(self.path(rel), data)

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Create or replace ``rel`` so that readers see either the old or the new content."""
        self.files.write_atomic(self.path(rel), data)

    def write_bytes(self, rel: str, data: bytes) -> None:
        """Write a new data file (not a log file: no atomicity needed, it is unreferenced until committed)."""
        self.files.write_bytes(self.path(rel), data)

    def makedirs(self, rel: str) -> None:
        """Create a folder under the table; a file standing where a folder must be is a typed error."""
        self.files.makedirs(self.path(rel))

    def delete(self, rel_or_abs: str) -> None:
        self.files.delete(self._resolve(rel_or_abs))

    def delete_with_crc_companion(self, rel: str) -> None:
        """Delete ``rel`` and, on a local file system, the Hadoop ``.<name>.crc`` file beside it.

        Hadoop's local file system (which Delta Spark writes through) keeps such a
        checksum file next to every file it writes and deletes it with the file.
        """
        self.delete(rel)
        if not self.is_local:
            return
        d, _, name = rel.rpartition("/")
        companion = f"{d}/.{name}.crc" if d else f".{name}.crc"
        if self.exists(companion):
            self.delete(companion)
