"""Any fsspec filesystem as a storage backend: object stores, ``memory://``, the rest.

Used for every table URL that is not local (:class:`~.storage.Storage` loads this
module only then, so reading a local table never imports fsspec). Paths are in the
driver's own protocol-less form. Three rules of the log live here:

* versions are decided from listings, so every listing, stat and existence check
  first drops what the driver cached (:func:`.object_store.forget_listings`);
* put-if-absent is offered only where it is atomic: ``memory://`` under a lock, and
  drivers whose ``open(path, "xb")`` is a conditional create on the service, checked
  once per store by :func:`.object_store.check_conditional_create`; elsewhere a commit
  is refused unless the caller declared a single writer, because a check-then-write
  race would silently lose commits;
* directory-based drivers need a commit's parent folder made first.
"""
from __future__ import annotations

import threading
from datetime import datetime
from typing import IO, Any

import fsspec

from .errors import ConditionalCreateError, StorageError
from .file_info import FileInfo
from .local_files import file_in_the_way
from .object_store import check_conditional_create, forget_listings, list_from

_MEMORY_LOCK = threading.Lock()


def local_filesystem() -> Any:
    """fsspec's local filesystem, for callers that want fsspec's generic API on a local table."""
    return fsspec.filesystem("file")


def serves(protocol: str) -> bool:
    """Whether an fsspec driver serves ``protocol``: one fsspec knows by name, or one registered at run time
    (``fsspec.register_implementation``, as a user's own file system is), which ``available_protocols``
    does not list."""
    return protocol in fsspec.available_protocols() or protocol in fsspec.registry


class FsspecFiles:
    """Storage operations through an fsspec filesystem (``fs``) for the table at ``root``."""

    is_local = False

    def __init__(self, protocol: str, root: str, storage_options: dict[str, Any],
                 single_writer: bool, conditional_put: bool):
        self.protocol = protocol
        if not serves(protocol):
            raise StorageError(
                f"cannot open {root!r}: no fsspec driver serves {protocol}:// (a table root is spelled with an fsspec "
                "protocol: Delta Spark's s3n://b/t is s3://b/t here, wasbs://c@acct.blob.core.windows.net/t is "
                "abfs://c@acct.blob.core.windows.net/t)")
        try:
            self.fs, _ = fsspec.core.url_to_fs(root, **storage_options)
        except ImportError as e:        # a protocol fsspec knows whose driver is not installed (oss://: ossfs)
            raise StorageError(f"cannot open {root!r}: the fsspec driver for {protocol}:// is not installed "
                               f"({e})") from e
        except ValueError as e:         # the driver refuses the URL or its options
            raise StorageError(f"cannot open {root!r} through fsspec's {protocol}:// driver: {e}") from e
        self.root = self.fs._strip_protocol(root)
        self.single_writer = single_writer
        self.conditional_put = conditional_put

    # ------------------------------------------------------------------ reads
    def list_dir(self, d: str) -> list[FileInfo]:
        forget_listings(self.fs, d)     # versions are decided from listings: never a cached one
        try:
            entries = self.fs.ls(d, detail=True)
        except FileNotFoundError:
            return []
        return _file_infos(entries)

    def list_from(self, d: str, first_name: str) -> list[FileInfo] | None:
        forget_listings(self.fs, d)
        try:
            entries = list_from(self.fs, self.protocol, d, first_name)
        except FileNotFoundError:
            return []
        return None if entries is None else _file_infos(entries)

    def file_info(self, p: str) -> FileInfo | None:
        forget_listings(self.fs, p)
        try:
            info = self.fs.info(p)
        except FileNotFoundError:
            return None
        if info.get("type") == "directory":
            return None
        return FileInfo(p, p.rsplit("/", 1)[-1], int(info.get("size") or 0), _mtime_of(info))

    def exists(self, p: str) -> bool:
        forget_listings(self.fs, p)
        return self.fs.exists(p)

    def isdir(self, p: str) -> bool:
        forget_listings(self.fs, p)
        return self.fs.isdir(p)

    def read_bytes(self, p: str) -> bytes:
        return self.fs.cat_file(p)

    def open(self, p: str, mode: str = "rb") -> IO:
        return self.fs.open(p, mode)

    def walk_files(self, base: str) -> list[FileInfo]:
        forget_listings(self.fs, base)
        return [FileInfo(p, p.rsplit("/", 1)[-1], int(info.get("size") or 0), _mtime_of(info))
                for p, info in self.fs.find(base, detail=True).items()]

    # ----------------------------------------------------------------- writes
    @property
    def atomic_put_if_absent(self) -> bool:
        return self.protocol == "memory" or self.conditional_put

    def put_if_absent(self, target: str, data: bytes) -> bool:
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
        return f"{getattr(self.fs, '_fs_token', '')}:{self.root.split('/', 1)[0]}"

    def _ensure_parent(self, target: str) -> None:
        """Directory-based fsspec backends need the parent to exist; object stores ignore this."""
        try:
            self.fs.makedirs(self.fs._parent(target), exist_ok=True)
        except (OSError, NotImplementedError, ValueError):
            pass  # the write itself reports a real problem

    def write_atomic(self, target: str, data: bytes) -> None:
        """One upload replaces the object whole (readers see the old or the new content)."""
        self._ensure_parent(target)
        self.fs.pipe_file(target, data)

    def write_bytes(self, target: str, data: bytes) -> None:
        self.fs.pipe_file(target, data)

    def makedirs(self, p: str) -> None:
        try:
            self.fs.makedirs(p, exist_ok=True)
        except (FileExistsError, NotADirectoryError) as e:
            raise file_in_the_way(p, e) from None

    def delete(self, p: str) -> None:
        try:
            self.fs.rm_file(p)
        except FileNotFoundError:
            pass


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
            try:
                return int(datetime.fromisoformat(v.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
        return int(float(v) * 1000)
    return 0
