"""What every storage backend reports and how writers name their unpublished files.

Kept apart from :mod:`.storage` so that both backends (:mod:`.local_files` and
:mod:`.fsspec_files`) can use it without importing each other or the front class.
"""
from __future__ import annotations

import re
import uuid
from typing import NamedTuple


class FileInfo(NamedTuple):
    """One directory entry: full path (in the storage's own form), size and mtime in epoch ms.

    A named tuple, not a dataclass: a listing makes one per file of ``_delta_log``, and a
    frozen dataclass costs several times more to build (and to define, on every cold start)."""

    path: str
    name: str
    size: int
    mtime_ms: int


#: Our hidden temporary files: ``.<final name>.<32 hex>.tmp`` beside the file they become
#: (commits, checkpoint parts, sidecars). A writer killed before publishing leaves one behind.
OWN_TEMP_FILE = re.compile(r"^\..+\.[0-9a-f]{32}\.tmp$")


def temp_name(final_name: str) -> str:
    """The hidden temporary name a file is written under before it is published."""
    return f".{final_name}.{uuid.uuid4().hex}.tmp"
