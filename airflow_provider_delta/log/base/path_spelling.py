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

from urllib.parse import quote


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


#: The normalized file-action column holding each action's path as the log spells it: the
#: path part of the logical file's key in Action Reconciliation (the ``path`` column next to
#: it is the decoded form used to open the file). Delta Spark's canonicalization of that
#: string (``new Path(new URI(path))``) does not decode percent-escapes; it only qualifies
#: scheme-less absolute paths and drops ``.`` segments, which no writer of data paths produces.
LOG_PATH_COLUMN = "log_path"
