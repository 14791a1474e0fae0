"""What the log needs from an object-store driver beyond fsspec's generic API.

Two things, each decided per driver here and nowhere else:

* **Listing from a name on** (:func:`list_from`). A sensor that last saw version N only
  needs the log files named from ``N.json`` on; listing the whole ``_delta_log`` of a
  100,000-version table costs a hundred requests per poll. S3 has ``StartAfter``, GCS
  ``startOffset``; Azure Blob has neither, but Delta's file names start with a
  zero-padded number, so a name prefix that fixes all but the last two digits selects a
  block of 100 versions: we list block after block until one ends early. Other drivers
  return None (the caller then finds another way).
* **Whether ``open(path, "xb")`` really is conditional** (:func:`check_conditional_create`).
  A commit is safe only if a second create of the same object fails. Some drivers and
  emulators accept the precondition and overwrite anyway (for example the GCS
  emulators on PyPI ignore ``ifGenerationMatch=0``); a silent overwrite would lose a
  commit, so before the first commit through a driver we create a probe object twice
  and refuse to commit if the second create succeeds.

Every answer bypasses the drivers' directory-listing caches: a version decision must
never come from a cache.
"""
from __future__ import annotations

import threading
import uuid
from importlib import metadata
from typing import Any, Callable

from fsspec.asyn import sync

from .errors import ConditionalCreateError

#: Digits fixed by an Azure name prefix: all but the last two of a 20-digit version,
#: so one prefix listing covers at most 100 versions' files.
_BLOCK_DIGITS = 2
_VERSION_DIGITS = 20

_CHECKED: dict[tuple[str, str], bool] = {}
_CHECK_LOCK = threading.Lock()


def driver_of(fs: Any) -> str:
    """``"<package> <version>"`` of the fsspec driver behind ``fs`` (for error messages)."""
    package = type(fs).__module__.split(".")[0]
    try:
        return f"{package} {metadata.version(package)}"
    except metadata.PackageNotFoundError:
        return package


def list_from(fs: Any, protocol: str, directory: str, first_name: str) -> list[dict] | None:
    """fsspec-style info dicts of the files in ``directory`` named ``first_name`` or later.

    ``directory`` is in the driver's own form (``bucket/key``). None when the driver
    offers no ranged listing. Names are compared as strings, as the stores order them.
    """
    lister = _RANGED.get(protocol)
    if lister is None:
        return None
    entries = lister(fs, directory.rstrip("/"), first_name)
    return [e for e in entries if e["name"].rstrip("/").rsplit("/", 1)[-1] >= first_name]


def _s3_list_from(fs: Any, directory: str, first_name: str) -> list[dict]:
    bucket, key, _ = fs.split_path(directory)
    prefix = key + "/" if key else ""
    kwargs: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix, "Delimiter": "/",
                              # S3's StartAfter is exclusive: start just before first_name
                              "StartAfter": prefix + first_name[:-1]}
    out: list[dict] = []
    while True:
        page = sync(fs.loop, fs._call_s3, "list_objects_v2", **kwargs)
        for obj in page.get("Contents", []):
            out.append({"name": f"{bucket}/{obj['Key']}", "size": obj.get("Size", 0), "type": "file",
                        "LastModified": obj.get("LastModified")})
        token = page.get("NextContinuationToken")
        if not page.get("IsTruncated") or not token:
            return out
        kwargs["ContinuationToken"] = token


def _gcs_list_from(fs: Any, directory: str, first_name: str) -> list[dict]:
    bucket, key, _ = fs.split_path(directory)
    prefix = key + "/" if key else ""
    out: list[dict] = []
    token = None
    while True:
        page = sync(fs.loop, fs._call_list_objects, bucket, delimiter="/", prefix=prefix,
                    startOffset=prefix + first_name, maxResults=1000, pageToken=token)
        for item in page.get("items", []):
            out.append(fs._process_object(bucket, item))
        token = page.get("nextPageToken")
        if not token:
            return out


def _azure_list_from(fs: Any, directory: str, first_name: str) -> list[dict]:
    head = first_name[:_VERSION_DIGITS]
    if len(head) < _VERSION_DIGITS or not head.isdigit():
        return list(fs.ls(directory, detail=True))
    block = int(head) // 10 ** _BLOCK_DIGITS
    out: list[dict] = []
    while True:
        prefix = f"{block:0{_VERSION_DIGITS - _BLOCK_DIGITS}d}"
        found = fs.find(directory, prefix=prefix, detail=True)
        infos = [i for p, i in found.items() if p.rsplit("/", 1)[-1].startswith(prefix)]
        out.extend(infos)
        last = (block + 1) * 10 ** _BLOCK_DIGITS - 1
        if not any(i["name"].rsplit("/", 1)[-1].startswith(f"{last:0{_VERSION_DIGITS}d}") for i in infos):
            return out          # this block ends before its last version: nothing further
        block += 1


_RANGED: dict[str, Callable[[Any, str, str], list[dict]]] = {
    "s3": _s3_list_from, "s3a": _s3_list_from,
    "gs": _gcs_list_from, "gcs": _gcs_list_from,
    "abfs": _azure_list_from, "abfss": _azure_list_from, "az": _azure_list_from,
}


def forget_listings(fs: Any, path: str) -> None:
    """Drop whatever the driver cached about ``path`` and its parent before we ask again."""
    invalidate = getattr(fs, "invalidate_cache", None)
    if invalidate is not None:
        invalidate(path)


def check_conditional_create(fs: Any, directory: str, store_key: str) -> None:
    """Refuse (ConditionalCreateError) unless a second ``open(.., "xb")`` of one object fails.

    Done once per process for each store (``store_key``: the driver's options and the
    bucket), in ``directory`` (the table's ``_delta_log``) under a hidden temporary name
    that readers and cleanup already ignore; the probe object is deleted afterwards.
    """
    key = (driver_of(fs), store_key)
    with _CHECK_LOCK:
        if _CHECKED.get(key):
            return
    probe = f"{directory.rstrip('/')}/.put-if-absent-check.{uuid.uuid4().hex}.tmp"
    try:
        with fs.open(probe, "xb") as f:
            f.write(b"1")
        try:
            with fs.open(probe, "xb") as f:
                f.write(b"2")
        except FileExistsError:
            with _CHECK_LOCK:
                _CHECKED[key] = True
            return
    finally:
        try:
            fs.rm_file(probe)
        except (FileNotFoundError, OSError):
            pass
    raise ConditionalCreateError(
        f"{key[0]} overwrote an existing object on a create-only write (open mode 'xb') at "
        f"{directory}: this store or driver version ignores the precondition, so concurrent "
        "commits would silently replace each other. Nothing was committed. Use a commit owner "
        "(managed commits), a driver/store that honours conditional writes, or single_writer=True "
        "if exactly one process ever writes this table.", driver=key[0])
