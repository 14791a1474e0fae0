"""Storage access for the Delta log through fsspec.

One small class, :class:`Storage`, gives the log layer what it needs from a
filesystem: list a directory with sizes and modification times, read a file,
write a file atomically *only if it does not exist yet* (the commit primitive of
the Delta protocol), overwrite a file atomically (``_last_checkpoint``) and delete.

Local paths get a fast path through ``os`` because that is where commits must be
exclusive and where sensors poll most often. Other fsspec backends are used
through their generic API; put-if-absent is only offered where the backend can do
it atomically (the in-process ``memory://`` filesystem under a lock). Elsewhere a
commit is refused with :class:`StorageError` unless the caller opts into
single-writer mode, because a check-then-write race would silently lose commits.
"""
from __future__ import annotations

import os
import re
import threading
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

import fsspec

from .errors import ConditionalCreateError, StorageError
from .object_store import check_conditional_create, forget_listings, list_from

_MEMORY_LOCK = threading.Lock()

#: fsspec protocols whose ``open(path, "xb")`` is an atomic conditional create on the
#: service itself (s3fs: ``If-None-Match: *``; gcsfs: ``ifGenerationMatch=0``; adlfs:
#: ``overwrite=False``), failing with FileExistsError when the object exists. Recent
#: releases of those packages are needed (s3fs fixed small files in 2025).
CONDITIONAL_CREATE_PROTOCOLS = frozenset({"s3", "s3a", "gs", "gcs", "abfs", "abfss", "az"})


@dataclass(frozen=True)
class FileInfo:
    """One directory entry: full path (in the storage's own form), size and mtime in epoch ms."""

    path: str
    name: str
    size: int
    mtime_ms: int


def normalize_uri(uri: str) -> tuple[str, str]:
    """(protocol, location) of a table URI: the one place that decides what is local.

    Local paths and ``file:`` URLs give ``("file", <absolute path>)`` (``file://localhost/x``
    is ``/x``); any other URL keeps its form, without a trailing slash. A one-letter
    scheme is a Windows drive letter, not a protocol.
    """
    uri = str(uri)
    parsed = urlparse(uri)
    if len(parsed.scheme) <= 1 or parsed.scheme == "file":
        path = parsed.path if parsed.scheme == "file" else uri
        if parsed.scheme == "file" and parsed.netloc not in ("", "localhost"):
            path = "//" + parsed.netloc + parsed.path
        return "file", os.path.abspath(os.path.expanduser(path)).rstrip("/") or "/"
    return parsed.scheme, uri.rstrip("/")


class Storage:
    """fsspec-backed access rooted at a table location.

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
        self.conditional_put = (self.protocol in CONDITIONAL_CREATE_PROTOCOLS) if conditional_put is None \
            else bool(conditional_put)
        self.is_local = self.protocol == "file"
        if self.is_local:
            self.fs = fsspec.filesystem("file")
        else:
            self.fs, _ = fsspec.core.url_to_fs(self.root, **self.storage_options)
        self._fs_root = self.root if self.is_local else self.fs._strip_protocol(self.root)

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

    # ------------------------------------------------------------------ reads
    def list_dir(self, rel_dir: str) -> list[FileInfo]:
        """Files (not directories) directly in ``rel_dir``; empty list if it does not exist."""
        d = self.path(rel_dir)
        out: list[FileInfo] = []
        if self.is_local:
            try:
                with os.scandir(d) as it:
                    for e in it:
                        try:
                            if not e.is_file():
                                continue
                            st = e.stat()
                        except FileNotFoundError:
                            continue  # vanished since the scan (a writer's temporary file): skip it alone
                        out.append(FileInfo(e.path, e.name, st.st_size, st.st_mtime_ns // 1_000_000))
            except (FileNotFoundError, NotADirectoryError):
                return []
            return out
        forget_listings(self.fs, d)     # versions are decided from listings: never a cached one
        try:
            entries = self.fs.ls(d, detail=True)
        except FileNotFoundError:
            return []
        return _file_infos(entries)

    def list_dir_from(self, rel_dir: str, first_name: str) -> list[FileInfo] | None:
        """Files in ``rel_dir`` named ``first_name`` or later (string order), in one ranged
        listing where the store has one (see :mod:`.object_store`); None where it has not."""
        if self.is_local:
            return None
        d = self.path(rel_dir)
        forget_listings(self.fs, d)
        try:
            entries = list_from(self.fs, self.protocol, d, first_name)
        except FileNotFoundError:
            return []
        return None if entries is None else _file_infos(entries)

    def file_info(self, rel: str) -> FileInfo | None:
        """Size and mtime of one file in one call (a stat, or a HEAD); None if it is not there."""
        p = self.path(rel)
        name = p.rsplit("/", 1)[-1]
        if self.is_local:
            try:
                st = os.stat(p)
            except (FileNotFoundError, NotADirectoryError):
                return None
            return FileInfo(p, name, st.st_size, st.st_mtime_ns // 1_000_000)
        forget_listings(self.fs, p)
        try:
            info = self.fs.info(p)
        except FileNotFoundError:
            return None
        return None if info.get("type") == "directory" else FileInfo(p, name, int(info.get("size") or 0),
                                                                    _mtime_of(info))

    def exists(self, rel: str) -> bool:
        p = self.path(rel)
        if self.is_local:
            return os.path.exists(p)
        forget_listings(self.fs, p)
        return self.fs.exists(p)

    def isdir(self, rel: str) -> bool:
        p = self.path(rel)
        if self.is_local:
            return os.path.isdir(p)
        forget_listings(self.fs, p)
        return self.fs.isdir(p)

    def read_bytes(self, rel_or_abs: str) -> bytes:
        p = self._resolve(rel_or_abs)
        if self.is_local:
            with open(p, "rb") as f:
                return f.read()
        return self.fs.cat_file(p)

    def open(self, rel_or_abs: str, mode: str = "rb"):
        return self.fs.open(self._resolve(rel_or_abs), mode)

    def mtime_ms(self, rel: str) -> int:
        info = self.file_info(rel)
        if info is None:
            raise FileNotFoundError(self.path(rel))
        return info.mtime_ms

    def walk_files(self, rel_dir: str = "") -> list[FileInfo]:
        """Every file under ``rel_dir`` recursively (used by vacuum)."""
        base = self.path(rel_dir)
        out: list[FileInfo] = []
        if self.is_local:
            for dirpath, _dirs, files in os.walk(base):
                for name in files:
                    fp = os.path.join(dirpath, name)
                    try:
                        st = os.stat(fp)
                    except FileNotFoundError:
                        continue
                    out.append(FileInfo(fp, name, st.st_size, st.st_mtime_ns // 1_000_000))
            return out
        forget_listings(self.fs, base)
        for p, info in self.fs.find(base, detail=True).items():
            out.append(FileInfo(p, p.rsplit("/", 1)[-1], int(info.get("size") or 0), _mtime_of(info)))
        return out

    def relative(self, abs_path: str) -> str:
        """Path relative to the table root (inverse of :meth:`path`)."""
        root = self._fs_root.rstrip("/") + "/"
        return abs_path[len(root):] if abs_path.startswith(root) else abs_path

    def _resolve(self, rel_or_abs: str) -> str:
        if self.is_local:
            return rel_or_abs if os.path.isabs(rel_or_abs) else self.path(rel_or_abs)
        return rel_or_abs if rel_or_abs.startswith(self._fs_root) else self.path(rel_or_abs)

    # ----------------------------------------------------------------- writes
    @property
    def supports_atomic_put_if_absent(self) -> bool:
        return self.is_local or self.protocol == "memory" or self.conditional_put

    def put_if_absent(self, rel: str, data: bytes) -> bool:
        """Write ``data`` at ``rel`` only if nothing is there; return False if it already exists.

        Readers never see a partial file: locally the bytes go to a temporary file first
        and are published with ``os.link``, which fails atomically if the target exists.
        """
        target = self.path(rel)
        if self.is_local:
            tmp = _write_local_temp(target, data)
            try:
                os.link(tmp, target)
                return True
            except FileExistsError:
                return False
            finally:
                os.unlink(tmp)
        if self.protocol == "memory":
            with _MEMORY_LOCK:
                if self.fs.exists(target):
                    return False
                self.fs.pipe_file(target, data)
                return True
        self._ensure_parent(target)
        if self.conditional_put:
            # Only where a second create of one object is seen to fail (checked once per store);
            # a declared single writer does without it.
            try:
                check_conditional_create(self.fs, self.fs._parent(target), self._store_key())
            except ConditionalCreateError:
                if not self.single_writer:
                    raise
                self.conditional_put = False
        if self.conditional_put:
            # The object becomes visible only when the upload completes, and only if absent.
            try:
                with self.fs.open(target, "xb") as f:
                    f.write(data)
                return True
            except FileExistsError:
                return False
        if not self.single_writer:
            raise StorageError(
                f"storage '{self.protocol}://' offers no atomic put-if-absent here, so concurrent "
                "commits could overwrite each other. Use a commit owner (managed commits), pass "
                "conditional_put=True if its fsspec driver does an atomic create for mode 'xb', or "
                "single_writer=True if exactly one process ever writes this table.")
        forget_listings(self.fs, target)
        if self.fs.exists(target):
            return False
        self.fs.pipe_file(target, data)
        return True

    def _store_key(self) -> str:
        """What identifies one store for the conditional-create check: driver options and bucket."""
        return f"{getattr(self.fs, '_fs_token', '')}:{self._fs_root.split('/', 1)[0]}"

    def _ensure_parent(self, target: str) -> None:
        """Directory-based fsspec backends need the parent to exist; object stores ignore this."""
        try:
            self.fs.makedirs(self.fs._parent(target), exist_ok=True)
        except (OSError, NotImplementedError, ValueError):
            pass  # the write itself reports a real problem

    def write_atomic(self, rel: str, data: bytes) -> None:
        """Create or replace ``rel`` so that readers see either the old or the new content."""
        target = self.path(rel)
        if self.is_local:
            os.replace(_write_local_temp(target, data), target)
            return
        self._ensure_parent(target)
        self.fs.pipe_file(target, data)

    def makedirs(self, rel: str) -> None:
        """Create a folder under the table; a file standing where a folder must be is a typed error."""
        p = self.path(rel)
        if self.is_local:
            _makedirs_local(p)
            return
        try:
            self.fs.makedirs(p, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as e:
            raise _file_in_the_way(p, e) from None

    def delete(self, rel_or_abs: str) -> None:
        p = self._resolve(rel_or_abs)
        if self.is_local:
            try:
                os.unlink(p)
            except FileNotFoundError:
                pass
        else:
            try:
                self.fs.rm_file(p)
            except FileNotFoundError:
                pass


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

#: Our hidden temporary files: ``.<final name>.<32 hex>.tmp`` beside the file they become
#: (commits, checkpoint parts, sidecars). A writer killed before publishing leaves one behind.
OWN_TEMP_FILE = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")


def temp_name(final_name: str) -> str:
    """The hidden temporary name a file is written under before it is published."""
    return f".{final_name}.{uuid.uuid4().hex}.tmp"


def _file_in_the_way(folder: str, e: OSError) -> StorageError:
    return StorageError(f"cannot create folder {folder!r}: a file is in the way ({e.strerror or e}); "
                        "a table path must be a folder")


def _makedirs_local(folder: str) -> None:
    """``os.makedirs`` that reports a file standing where the table's folders go as a typed error."""
    try:
        os.makedirs(folder, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as e:
        raise _file_in_the_way(folder, e) from None


def _write_local_temp(target: str, data: bytes) -> str:
    """Write ``data`` durably to a hidden temporary file beside ``target``; return its path.

    Publishing it (link or rename) is then a single atomic step, so no reader ever
    sees a partly written file.
    """
    d = os.path.dirname(target)
    _makedirs_local(d)
    tmp = os.path.join(d, temp_name(os.path.basename(target)))
    with open(tmp, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return tmp


def _file_infos(entries: list[dict]) -> list[FileInfo]:
    """FileInfo of each file (not directory) among fsspec info dicts."""
    out: list[FileInfo] = []
    for e in entries:
        if e.get("type") == "directory":
            continue
        name = e["name"].rstrip("/").rsplit("/", 1)[-1]
        out.append(FileInfo(e["name"], name, int(e.get("size") or 0), _mtime_of(e)))
    return out


def _mtime_of(info: dict) -> int:
    """Best-effort modification time (epoch ms) from an fsspec info dict."""
    for key in ("mtime", "LastModified", "last_modified", "created", "updated"):
        v = info.get(key)
        if v is None:
            continue
        if hasattr(v, "timestamp"):
            return int(v.timestamp() * 1000)
        if isinstance(v, str):
            from datetime import datetime
            try:
                return int(datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
        return int(float(v) * 1000)
    return 0
