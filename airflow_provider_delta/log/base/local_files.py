"""The local file system as a storage backend, through ``os`` alone.

Local tables are where commits must be exclusive and where sensors poll most often,
and a task that opens one should not pay for fsspec's import (about a tenth of a
second, more than listing a large log). Every operation works on absolute paths;
:class:`~.storage.Storage` turns table-relative names into them.

The commit primitive: the bytes go to a hidden temporary file beside the target
(fsynced), which ``os.link`` publishes; link fails atomically if the target exists,
so a reader never sees a partial file and a second writer never replaces a commit.
"""
from __future__ import annotations

import os
from typing import IO

from .errors import StorageError
from .file_info import FileInfo, temp_name


class LocalFiles:
    """Storage operations on a local file system (paths are absolute ``os`` paths)."""

    is_local = True

    def list_dir(self, d: str) -> list[FileInfo]:
        """Files (not directories) directly in ``d``; empty if ``d`` does not exist."""
        out: list[FileInfo] = []
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

    def list_from(self, d: str, first_name: str) -> list[FileInfo] | None:
        """No ranged listing here (a local directory lists fast; callers probe names instead)."""
        return None

    def scan_from(self, d: str, first_name: str) -> list[FileInfo]:
        """Files in ``d`` named ``first_name`` or later: the names of one scan (no stat), a stat of those only.
        For a caller that needs every kind of file from a version on (checkpoints cannot be probed by name)
        where a full listing would stat a long log's every file."""
        out: list[FileInfo] = []
        try:
            with os.scandir(d) as it:
                for e in it:
                    if e.name < first_name:
                        continue
                    try:
                        if not e.is_file():
                            continue
                        st = e.stat()
                    except FileNotFoundError:
                        continue
                    out.append(FileInfo(e.path, e.name, st.st_size, st.st_mtime_ns // 1_000_000))
        except (FileNotFoundError, NotADirectoryError):
            return []
        return out

    def file_info(self, p: str) -> FileInfo | None:
        try:
            st = os.stat(p)
        except (FileNotFoundError, NotADirectoryError):
            return None
        return FileInfo(p, os.path.basename(p), st.st_size, st.st_mtime_ns // 1_000_000)

    def exists(self, p: str) -> bool:
        return os.path.exists(p)

    def isdir(self, p: str) -> bool:
        return os.path.isdir(p)

    def read_bytes(self, p: str) -> bytes:
        """The whole file through the raw descriptor: a replay reads a thousand small commit
        files, and a buffered file object per file costs about a third more than the reads."""
        fd = os.open(p, os.O_RDONLY)
        try:
            parts = [os.read(fd, os.fstat(fd).st_size + 1)]   # one read, unless the file grew
            while parts[-1]:
                parts.append(os.read(fd, 1 << 20))
        finally:
            os.close(fd)
        return parts[0] if len(parts) == 2 else b"".join(parts)

    def read_into(self, p: str, view: memoryview) -> int | None:
        """Read the file into ``view``; the number of bytes, or None if it does not fit.

        Many commit files read straight into one buffer (see ``commit_reader.read_blobs``)
        cost one copy of the log instead of a bytes object per file and then their join."""
        fd = os.open(p, os.O_RDONLY)
        try:
            n = 0
            while n < len(view):
                k = os.readv(fd, [view[n:]])
                if k == 0:
                    return n
                n += k
            return None if os.read(fd, 1) else n
        finally:
            os.close(fd)

    def open(self, p: str, mode: str = "rb") -> IO:
        return open(p, mode)

    def walk_files(self, base: str) -> list[FileInfo]:
        out: list[FileInfo] = []
        for dirpath, _dirs, files in os.walk(base):
            for name in files:
                fp = os.path.join(dirpath, name)
                try:
                    st = os.stat(fp)
                except FileNotFoundError:
                    continue
                out.append(FileInfo(fp, name, st.st_size, st.st_mtime_ns // 1_000_000))
        return out

    def put_if_absent(self, target: str, data: bytes) -> bool:
        """Publish ``data`` at ``target`` with ``os.link`` of a complete temporary file;
        False if something is already there."""
        tmp = _write_temp(target, data)
        try:
            os.link(tmp, target)
            return True
        except FileExistsError:
            return False
        finally:
            os.unlink(tmp)

    def write_atomic(self, target: str, data: bytes) -> None:
        os.replace(_write_temp(target, data), target)

    def write_bytes(self, target: str, data: bytes) -> None:
        with open(target, "wb") as f:
            f.write(data)

    def makedirs(self, p: str) -> None:
        makedirs(p)

    def delete(self, p: str) -> None:
        try:
            os.unlink(p)
        except FileNotFoundError:
            pass


def file_in_the_way(folder: str, e: OSError) -> StorageError:
    """The typed error for a file standing where a table folder must be (every backend's wording)."""
    return StorageError(f"cannot create folder {folder!r}: a file is in the way ({e.strerror or e}); "
                        "a table path must be a folder")


def makedirs(folder: str) -> None:
    """``os.makedirs`` that reports a file standing where the table's folders go as a typed error."""
    try:
        os.makedirs(folder, exist_ok=True)
    except (FileExistsError, NotADirectoryError) as e:
        raise file_in_the_way(folder, e) from None


def _write_temp(target: str, data: bytes) -> str:
    """Write ``data`` durably to a hidden temporary file beside ``target``; return its path.

    Publishing it (link or rename) is then a single atomic step, so no reader ever
    sees a partly written file.
    """
    d = os.path.dirname(target)
    makedirs(d)
    tmp = os.path.join(d, temp_name(os.path.basename(target)))
    with open(tmp, "xb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    return tmp
