"""An action's line in a commit file, found without parsing the other lines.

A commit file holds one JSON object per line (PROTOCOL.md "Delta Log Entries"). Readers that
need only one kind of action (``protocol``, ``metaData``, ``commitInfo``) find its line with a
pattern over the raw bytes, after a substring test that skips most files. JSON lets another
writer spell the same line in ways a pattern on the literal key cannot see, and every JSON parser
(Delta Spark's Jackson, pyarrow's reader) takes them for the same action:

* whitespace before the object (``  {"protocol": ...}``): the patterns allow JSON whitespace there;
* a key written with escapes (``"pr\\u006ftocol"``): a blob holding a JSON escape of an ASCII
  letter (:func:`may_spell_keys_escaped`; no writer needs one, so it is rare and cheap to test) is
  parsed line by line instead (:func:`action_lines`).
"""
from __future__ import annotations

import json
import re
from typing import Any, Iterator

#: a JSON escape of an ASCII letter (``\u0070`` for ``p``; action keys are letters only): no writer
#: needs one, but JSON allows it, so a commit holding one may spell an action's key so, which the line
#: patterns cannot see; such a commit is parsed as JSON instead. Non-ASCII text escapes to ``\u0080``
#: and above, control characters to below ``\u0020``, and the escapes some encoders use for
#: ``< > & ` @ [ ] { } ~`` or DEL are no letters: none of them sends a commit to the slow path.
ESCAPED_ASCII = re.compile(rb"\\u00(?:[46][1-9a-fA-F]|[57][0-9aA])")


def may_spell_keys_escaped(data: bytes, start: int = 0, end: int | None = None) -> bool:
    """Whether ``data[start:end]`` holds a JSON escape of an ASCII letter (a cheap substring test first)."""
    end = len(data) if end is None else end
    return data.find(b"\\u00", start, end) >= 0 and ESCAPED_ASCII.search(data, start, end) is not None


def line_pattern(kind: str) -> re.Pattern:
    """The pattern of a line holding the action ``kind`` with its key spelled plainly (JSON whitespace
    may come before the object and around the key)."""
    return re.compile(rb'^[ \t\r]*\{\s*"' + kind.encode() + rb'"\s*:.*$', re.M)


def quoted_key(kind: str) -> bytes:
    """The quoted action name a substring test looks for (``b'"protocol"'``)."""
    return b'"' + kind.encode() + b'"'


def may_carry(data: bytes, kind: str) -> bool:
    """Whether ``data`` may hold an action ``kind`` (False only when it surely holds none)."""
    return data.rfind(quoted_key(kind)) >= 0 or may_spell_keys_escaped(data)


def parsed_lines(data: bytes) -> Iterator[dict[str, Any]]:
    """Every line of ``data`` that parses as a JSON object, parsed (the slow path: all of them)."""
    for line in data.splitlines():
        if not line.strip():
            continue
        try:
            action = json.loads(line)
        except ValueError:
            continue         # the replay reports a malformed line
        if isinstance(action, dict):
            yield action


def action_lines(data: bytes, kind: str) -> list[dict[str, Any]]:
    """Every action ``kind`` in ``data`` parsed (``{kind: {...}}`` objects) in file order; lines that
    are not JSON are skipped (the replay reports them)."""
    if may_spell_keys_escaped(data):
        return [action for action in parsed_lines(data) if kind in action]
    if data.rfind(quoted_key(kind)) < 0:
        return []
    out = []
    for m in line_pattern(kind).finditer(data):
        try:
            action = json.loads(m.group(0))
        except ValueError:
            continue
        if isinstance(action, dict) and kind in action:
            out.append(action)
    return out


def first_action(data: bytes, kind: str) -> dict[str, Any] | None:
    """The value of the first action ``kind`` in ``data`` (``{...}``, not ``{kind: {...}}``), or None;
    the pattern stops at the first match (a ``commitInfo`` usually opens the file)."""
    if may_spell_keys_escaped(data):
        found = action_lines(data, kind)
        return found[0][kind] if found else None
    if data.find(quoted_key(kind)) < 0:
        return None
    m = line_pattern(kind).search(data)
    if m is None:
        return None
    try:
        return json.loads(m.group(0))[kind]
    except (ValueError, KeyError, TypeError):
        return None
