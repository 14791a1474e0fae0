"""An action's line in a commit file, found without parsing the other lines.

A commit file holds one JSON object per line (PROTOCOL.md "Delta Log Entries"). Readers that
need only one kind of action (``protocol``, ``metaData``, ``commitInfo``) find its line with a
pattern over the raw bytes, after a substring test that skips most files. JSON lets another
writer spell the same line in ways a pattern on the literal key cannot see, and every JSON parser
(Delta Spark's Jackson, pyarrow's reader) takes them for the same action:

* whitespace before the object or around the key (``  {"protocol" : ...}``): the pattern allows
  JSON whitespace there;
* the action after another key (``{"commitInfo": null, "protocol": {...}}``: JSON key order has
  no meaning, and a serializer that writes null fields puts the other actions' keys first): the
  pattern looks for the key anywhere in the line and the line is parsed; only a key at the top of
  the object makes it the action, so ``"protocol"`` as a nested key (a partition column of that
  name, a field inside ``commitInfo``) never does;
* a key written with escapes (``"pr\\u006ftocol"``): a blob holding a JSON escape of an ASCII
  letter (:func:`may_spell_keys_escaped`; no writer needs one, so it is rare and cheap to test) is
  parsed line by line instead (:func:`action_lines`).

The rule (:func:`action_of`): a line is the action ``kind`` when it parses as a JSON object whose
top-level ``kind`` is not null - as in Delta Spark, whose JSON reader fills that action's column
and leaves a null one empty. A line naming the key twice (``{"protocol": {...}, "protocol": {...}}``,
malformed) is the last one's, as Jackson (Spark's JSON reader) and Python's ``json`` both take it.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable, Iterator

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


def key_pattern(kind: str) -> re.Pattern:
    """The pattern of the key ``kind`` with a value that may be an action: anywhere in a line (the
    line is then parsed, :func:`action_of`), JSON whitespace around the colon, and neither a string
    nor null after it (an action is an object, a null key is no action; a ``"protocol"`` so valued is
    a nested key such as a partition value's, and its lines stay unparsed)."""
    return re.compile(rb'"' + kind.encode() + rb'"\s*:\s*[^\s"n]')


_KEY_PATTERNS = {kind: key_pattern(kind) for kind in ("protocol", "metaData", "commitInfo")}


def _key_pattern(kind: str) -> re.Pattern:
    pattern = _KEY_PATTERNS.get(kind)
    return pattern if pattern is not None else key_pattern(kind)


def quoted_key(kind: str) -> bytes:
    """The quoted action name a substring test looks for (``b'"protocol"'``)."""
    return b'"' + kind.encode() + b'"'


def may_carry(data: bytes, kind: str) -> bool:
    """Whether ``data`` may hold an action ``kind`` (False only when it surely holds none)."""
    return data.rfind(quoted_key(kind)) >= 0 or may_spell_keys_escaped(data)


def action_of(line: Any, kind: str) -> bool:
    """Whether the parsed ``line`` is the action ``kind`` (a JSON object whose top-level ``kind`` is not
    null; another action's null key before it does not matter)."""
    return isinstance(line, dict) and line.get(kind) is not None


#: the actions a log line may be, in the order Delta Spark's ``SingleAction.unwrap`` tries them
#: (spark/.../actions/actions.scala)
ACTION_KINDS = ("add", "remove", "metaData", "txn", "protocol", "cdc", "sidecar", "checkpointMetadata",
                "domainMetadata", "commitInfo")


def kinds_before(kind: str) -> tuple[str, ...]:
    """The actions that take a line before ``kind`` does (earlier in :data:`ACTION_KINDS`): a line
    holding one of them non-null is that one, whatever else it holds (``{"add": A, "remove": B}`` is
    the add of A, in either key order). A reader that reads action columns (replay's fast path) masks
    ``kind`` where any of these is valid, so each line is one action, as :func:`action_kind` says."""
    return ACTION_KINDS[:ACTION_KINDS.index(kind)]


def action_kind(line: Any) -> str | None:
    """Which action the parsed ``line`` is (None: none we know): its first non-null action key in
    Delta Spark's order, whatever the order of the keys (``{"txn": null, "commitInfo": {...}}`` is a
    commitInfo)."""
    if not isinstance(line, dict):
        return None
    return next((kind for kind in ACTION_KINDS if line.get(kind) is not None), None)


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


def is_line_of_kind(line: Any, kind: str) -> bool:
    """Whether the parsed ``line`` is the action ``kind`` as :func:`action_kind` says (Delta Spark's
    ``Action.fromJson``: ``{"add": A, "commitInfo": C}`` is the add, no commitInfo)."""
    return action_kind(line) == kind


def _matched_lines(data: bytes, kind: str, start: int, end: int,
                   is_kind: Callable[[Any, str], bool] = action_of) -> Iterator[dict[str, Any]]:
    """The lines of ``data[start:end]`` that are the action ``kind`` (``is_kind``), found by the key pattern
    and parsed (keys spelled plainly; a line is parsed once however often the key is in it)."""
    pattern = _key_pattern(kind)
    pos = start
    while True:
        m = pattern.search(data, pos, end)
        if m is None:
            return
        line_start = data.rfind(b"\n", start, m.start()) + 1 or start
        line_end = data.find(b"\n", m.end(), end)
        line_end = end if line_end < 0 else line_end
        try:
            action = json.loads(data[line_start:line_end])
        except ValueError:
            action = None    # the replay reports a malformed line
        if is_kind(action, kind):
            yield action
        pos = line_end


def action_lines(data: bytes, kind: str, start: int = 0, end: int | None = None) -> list[dict[str, Any]]:
    """Every action ``kind`` in ``data[start:end]`` parsed (``{kind: {...}}`` objects) in file order;
    lines that are not JSON are skipped (the replay reports them)."""
    return actions_by_kind(data, (kind,), start, end)[kind]


def actions_by_kind(data: bytes, kinds: tuple[str, ...], start: int = 0, end: int | None = None
                    ) -> dict[str, list[dict[str, Any]]]:
    """:func:`action_lines` for each of ``kinds`` at once (one escape test over the bytes for all)."""
    end = len(data) if end is None else end
    if may_spell_keys_escaped(data, start, end):
        parsed = list(parsed_lines(data[start:end]))
        return {kind: [action for action in parsed if action_of(action, kind)] for kind in kinds}
    return {kind: list(_matched_lines(data, kind, start, end)) if data.rfind(quoted_key(kind), start, end) >= 0
            else [] for kind in kinds}


def first_action(data: bytes, kind: str, unwrapped: bool = False) -> dict[str, Any] | None:
    """The value of the first action ``kind`` in ``data`` (``{...}``, not ``{kind: {...}}``), or None;
    the search stops at the first match (a ``commitInfo`` usually opens the file). ``unwrapped``: only a
    line that *is* that action by :func:`action_kind` counts (where Delta Spark reads a commit by
    ``Action.fromJson``, as its history's ``getCommitInfoOpt`` does), not one whose earlier action in
    unwrap's order is another (``{"add": A, "commitInfo": C}``)."""
    is_kind = is_line_of_kind if unwrapped else action_of
    if may_spell_keys_escaped(data):
        return next((line[kind] for line in parsed_lines(data) if is_kind(line, kind)), None)
    if data.find(quoted_key(kind)) < 0:
        return None
    return next((action[kind] for action in _matched_lines(data, kind, 0, len(data), is_kind)), None)
