"""File-path spelling: a file action names an existing file by the log's own path string.

``path`` in an ``add``/``remove``/``cdc`` action is a URI (PROTOCOL.md, "Add File and Remove
File"): the same file can be spelled several ways. Delta Spark writes non-ASCII characters raw
(``p=München/part-0.parquet``; ``java.net.URI`` keeps them), we percent-encode them
(``p=M%C3%BCnchen/...``). Both open the same file, but Action Reconciliation matches a remove to
its add by the path *string* (Delta Spark's canonicalization, ``new Path(new URI(path))``, leaves
the spelling as it is; delta-rs compares the strings too). So:

- **replay** keys each logical file by the path exactly as the log spells it
  (:data:`LOG_PATH_COLUMN`), plus its deletion vector's id: a remove spelled differently
  from its add leaves the add live, as it does for Delta Spark, and every reader agrees on
  the table's rows whatever mix of writers produced the log;
- **writers** that name an existing file (a remove, a restored add, a DV-replacing add) write
  the spelling the live action has (``log_path``, kept by replay next to the decoded ``path``
  used to open the file): :func:`log_spelling`;
- new files are spelled by :func:`encode_path`;
- anything that **deletes** data files (vacuum) compares decoded paths, so a file named live
  under any spelling is kept (fail safe).
"""
from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import quote, unquote


def encode_path(path: str) -> str:
    """URL-encode a relative data file path for the log, as Delta Spark does (keeps '/', '=')."""
    return quote(path, safe="/=:@$&+,;~-_.!*'()")


def spelling_may_differ(path: str) -> bool:
    """Whether writers may spell ``path`` differently: it has characters our encoding escapes
    (non-ASCII, ``%``, spaces ...). A path of only safe characters has one spelling for every writer."""
    return encode_path(path) != path


def log_spelling(path: str, log_path: str | None) -> str:
    """The path string an action writes: the existing action's own spelling when it names a
    file already in the log (``log_path``), else the encoding of the decoded ``path``."""
    return log_path if log_path else encode_path(path)


def existing_spelling(log_path: str | None, path: str) -> str | None:
    """The spelling a writer gives a file the log already names (a remove, a restored or checkpointed
    add): replay's key (``log_path``), except for a scheme-less absolute path (decoded ``path`` ``/t/x``):
    its key is qualified with Delta Spark's default file system (``file:///t/x``), but the path names a
    file on the table's own file system (``s3://b/t/x`` in an ``s3://b`` table, as the reader opens it),
    so it is written scheme-less again, the decoded path encoded (the same key for every reader)."""
    if log_path is not None and path.startswith("/") and not path.startswith("//") and log_path.startswith("file:"):
        return encode_path(path)
    return log_path


#: The normalized file-action column holding each action's path as the log spells it: the
#: path part of the logical file's key in Action Reconciliation (the ``path`` column next to
#: it is the decoded form used to open the file). Delta Spark canonicalizes that string
#: (``new Path(new URI(path))``, DeltaLog.CanonicalPathFunction): it does not decode
#: percent-escapes, but ``java.net.URI.normalize`` drops ``.`` segments, resolves ``a/..`` and
#: collapses doubled slashes, so ``./p``, ``a/../p`` and ``p`` are one logical file; replay keys
#: by :func:`canonical_log_path` (which qualifies a scheme-less ``/t/p`` as ``file:///t/p``, as Delta Spark's
#: ``fs.makeQualified`` with the default file system does).
LOG_PATH_COLUMN = "log_path"

#: A superset of the log paths :func:`canonical_log_path` changes, only those go through Python: a
#: ``.``/``..`` segment; a doubled slash that is not an authority's ``//``, which follows a scheme's colon
#: at the start (``s3://b``; ``file:///t`` is that ``//`` and the path's ``/``): one after another
#: character (``a//b``), a fourth slash (``file:////t``), a ``://`` after something no scheme
#: (``d/a://x``, ``C://x``, ``1a://x``) or after a first colon (``s3://b/x://y``); a scheme-less absolute
#: path (``/t/p``: Delta Spark qualifies it, ``file:///t/p``).
NEEDS_NORMALIZING_REGEX = (r"^/|(^|/)\.\.?($|[/?#])|[^:/]//|[^:]///|^[^:]*[^A-Za-z0-9+.\-:][^:]*://"
                           r"|^[^A-Za-z:][^:]*://|^[A-Za-z]?://|:[^?#]*://")

_URI_PREFIX = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*:)?(//[^/?#]*)?")


def _normalized_uri_path(path: str) -> str:
    """``java.net.URI.normalize`` of a path component: ``.`` segments dropped, ``seg/..`` pairs removed
    (a relative path keeps its leading ``..``), repeated slashes one; a final slash stays, and a removed
    last ``.``/``..`` segment leaves one."""
    absolute = path.startswith("/")
    if "//" not in path and not any(s in (".", "..") for s in path.split("/")):
        return path               # java.net.URI.needsNormalization: nothing to do, no leading '.' added
    segments = [s for s in path.split("/") if s]
    out: list[str] = []
    for seg in segments:
        if seg == ".":
            continue
        if seg == ".." and out and out[-1] != "..":
            out.pop()
            continue
        out.append(seg)
    trailing = bool(segments) and (path.endswith("/") or segments[-1] in (".", ".."))
    if not out:
        return "/" if absolute else ""
    if not absolute and ":" in out[0]:
        out.insert(0, ".")        # java.net.URI: a first segment with a colon would read as a scheme
    return ("/" if absolute else "") + "/".join(out) + ("/" if trailing else "")


#: Characters java.net.URI's multi-argument constructors leave unquoted in a path (unreserved, punct,
#: '/', '@'); every other ASCII character is percent-encoded, '%' always, non-ASCII letters are kept
_URI_PATH_SAFE = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.!~*'()/@,;:$&+=")


def _uri_quoted(text: str) -> str:
    return "".join(c if c in _URI_PATH_SAFE or (ord(c) > 127 and c.isprintable() and not c.isspace())
                   else "".join(f"%{b:02X}" for b in c.encode("utf-8")) for c in text)


def _qualified(path: str, tail: str) -> str:
    """A scheme-less absolute path as Delta Spark keys it: qualified with the default file system,
    ``file:///`` (``DeltaLog.CanonicalPathFunction``: ``fs.makeQualified`` for a path without scheme and
    authority; ``fs`` is ``FileSystem.get(conf)``, ``fs.defaultFS``, whatever the table's own file system).
    Hadoop's ``Path.makeQualified`` rebuilds the URI from the decoded path (doubled slashes made one, a
    final slash dropped) and the fragment, without the query: ``new URI("file", "", path, null, fragment)``
    quotes what a path may not hold and keeps non-ASCII characters raw (checked on the jars:
    ``/t/p=M%C3%BCnchen/x`` is ``file:///t/p=München/x``, ``/t/a%3Ab`` is ``file:///t/a:b``,
    ``/t/%2E/x`` is ``file:/t/x``)."""
    decoded = unquote(path)
    while "//" in decoded:
        decoded = decoded.replace("//", "/")
    if len(decoded) > 1 and decoded.endswith("/"):
        decoded = decoded[:-1]
    fragment = "#" + _uri_quoted(unquote(tail[tail.index("#") + 1:])) if "#" in tail else ""
    quoted = _uri_quoted(decoded)
    norm = _normalized_uri_path(quoted)       # new Path(uri) normalizes again: an escaped dot now is one
    return ("file:" + norm if norm != quoted else "file://" + quoted) + fragment


def canonical_log_path(raw: str) -> str:
    """A file action's path as Delta Spark keys it in Action Reconciliation (``new Path(new URI(raw))``
    of the raw, still percent-encoded string): the path component normalized, scheme, authority,
    query and fragment as written. ``./p`` and ``a/../p`` are ``p``; ``s3://b//t/p`` is ``s3://b/t/p``;
    ``%2E/p`` stays (an escaped dot is no segment to ``java.net.URI``)."""
    cut = len(raw)
    for sep in "?#":
        i = raw.find(sep)
        if i != -1:
            cut = min(cut, i)
    head, tail = raw[:cut], raw[cut:]
    m = _URI_PREFIX.match(head)
    assert m is not None                   # both groups are optional
    scheme, authority = m.group(1) or "", m.group(2) or ""
    if len(scheme) == 2:
        scheme, authority = "", ""         # C:/x: a drive letter, no scheme
    path = head[len(scheme) + len(authority):]
    if scheme and not authority and not path.startswith("/"):
        return raw                         # an opaque URI (file:./x): java.net.URI does not normalize it
    if not scheme and authority in ("", "//") and path.startswith("/"):
        # a scheme-less absolute path, also with an empty authority ('///t/x', '////t/x'): java.net.URI
        # holds no authority then, so Delta Spark qualifies it as it does '/t/x' (all 'file:///t/x')
        return _qualified(_normalized_uri_path(path), tail)
    norm = _normalized_uri_path(path)
    if norm == path:
        return raw
    if authority == "//":
        authority = ""                     # an empty authority is not written back (file:///t -> file:/t)
    return scheme + authority + norm + tail


_NEEDS_NORMALIZING = re.compile(NEEDS_NORMALIZING_REGEX)
#: a string :func:`encode_path` leaves as it is (the characters it keeps)
_ENCODED_AS_IS = re.compile(r"[A-Za-z0-9/=:@$&+,;~\-_.!*'()]*")


def log_path_key(raw: str) -> str:
    """:func:`canonical_log_path` of one raw log path, a plain one (the most) tested by a pattern only:
    the key a remove reconciles with, and conflict checks compare by."""
    # every alternative of NEEDS_NORMALIZING_REGEX needs a leading '/' or '.', a '/.' or a '//'
    may = raw.startswith(("/", ".")) or "/." in raw or "//" in raw
    return canonical_log_path(raw) if may and _NEEDS_NORMALIZING.search(raw) else raw


def keys_of_spellings(paths: Iterable[str]) -> set[str]:
    """The reconciliation keys path strings may stand for, each given raw (as the log spells it) or
    decoded (as ``files()`` gives it): the key of the string and of its encoding (:func:`encode_path`).
    Plain paths (the most) are their own key and cost a pattern test."""
    out: set[str] = set()
    for p in paths:
        out.add(log_path_key(p))
        if not _ENCODED_AS_IS.fullmatch(p):
            out.add(log_path_key(encode_path(p)))
    return out


def uri_path_part(raw: str) -> str:
    """A raw log path without its query or fragment (a ``?`` or ``#`` a writer did not percent-encode):
    the file it names to Hadoop's file systems, which open a URI's path component only (Delta Spark
    reads ``x.parquet`` for ``x.parquet?a=b`` and ``x.parquet#f``). An escaped ``%3F``/``%23`` is part
    of the name."""
    cut = len(raw)
    for sep in "?#":
        i = raw.find(sep)
        if i != -1:
            cut = min(cut, i)
    return raw[:cut]
