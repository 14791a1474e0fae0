"""Opening the files a log action points at: table-relative paths and absolute URIs alike.

``add.path`` and a ``p`` deletion vector's path may be relative to the table root
(the usual case) or absolute URIs (``s3://...``, ``file:/...``; shallow clones and
some writers). Data files and DV files are opened through this one rule, with the
table's storage options, so both kinds of reference behave the same.
"""
from __future__ import annotations

import os
from typing import IO

from ..base.storage import Storage, normalize_uri


def is_uri(path: str) -> bool:
    """True for an absolute URI (``scheme://...`` or Hadoop's ``file:/...``), False for a table path."""
    return "://" in path or path.startswith("file:")


def open_path(storage: Storage, path: str) -> str | IO[bytes]:
    """Something pyarrow can read: a local path, or an open binary file."""
    if is_uri(path):
        protocol, location = normalize_uri(path)    # Hadoop's file:/x and file:///x alike
        if protocol == "file":
            return location
        other = Storage(location, storage.storage_options)   # rooted at the file itself
        return other.files.open(other.path())
    full = storage.path(path)
    return full if storage.is_local else storage.files.open(full)


def read_path_bytes(storage: Storage, path: str) -> bytes:
    """The whole content of the file at ``path`` (raises FileNotFoundError if it is gone)."""
    src = open_path(storage, path)
    if isinstance(src, str):
        with open(src, "rb") as f:
            return f.read()
    with src:
        return src.read()


def path_exists(storage: Storage, path: str) -> bool:
    """Whether the file at ``path`` (table-relative or an absolute URI) is there."""
    if is_uri(path):
        protocol, location = normalize_uri(path)
        if protocol == "file":
            return os.path.exists(location)
        other = Storage(location, storage.storage_options)
        return other.files.exists(other.path())
    return storage.exists(path)
