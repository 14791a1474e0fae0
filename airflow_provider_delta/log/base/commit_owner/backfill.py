"""Copying ratified commits from ``_delta_log/_commits`` to ``_delta_log/<v>.json``.

Backfill must be sequential (v-1 before v) and may run in several processes at
once, or again after a crash. Each copy is a put-if-absent, so two backfillers
cannot both write a version; finding the target already there with the same
bytes means another backfiller (or a crashed earlier run) did the work, while
different bytes mean the log and the owner disagree, which must never be papered
over.
"""
from __future__ import annotations

from typing import Iterator, Sequence

from ..errors import CorruptLogError
from ..names import commit_path
from ..storage import Storage
from .records import Commit


def copy_commit(storage: Storage, commit: Commit) -> None:
    """Make ``_delta_log/<v>.json`` hold exactly the bytes of the ratified commit file."""
    target = commit_path(commit.version)
    try:
        data = storage.read_bytes(commit.rel_path)
    except FileNotFoundError:
        # Metadata cleanup may delete _commits files once they are backfilled.
        if storage.exists(target):
            return
        raise CorruptLogError(
            f"ratified commit {commit.version} is missing: neither {commit.rel_path} nor {target} "
            f"exists in {storage.uri}", path=storage.path(commit.rel_path)) from None
    if len(data) != commit.file_size:
        raise CorruptLogError(
            f"{commit.rel_path} holds {len(data)} bytes but the commit owner ratified "
            f"{commit.file_size}; it was modified after the commit", path=storage.path(commit.rel_path))
    if storage.put_if_absent(target, data):
        return
    if storage.read_bytes(target) != data:
        raise CorruptLogError(
            f"cannot backfill version {commit.version}: {target} already exists with different "
            f"content than the ratified commit {commit.rel_path}; the log and the commit owner "
            "disagree (was the table written without its commit owner?)", path=storage.path(target))


def copy_in_order(storage: Storage, commits: Sequence[Commit], first_version: int) -> Iterator[int]:
    """Copy ``commits`` (which must be contiguous from ``first_version``) one after another,
    yielding each version once it is in ``_delta_log``, so the caller can record progress
    even when a later copy fails."""
    expected = first_version
    for c in commits:
        if c.version != expected:
            raise CorruptLogError(
                f"the commit owner's un-backfilled commits are not contiguous: expected version "
                f"{expected}, found {c.version}")
        expected += 1
    for c in commits:
        copy_commit(storage, c)
        yield c.version
