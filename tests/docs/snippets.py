"""The Python snippets of a Markdown page, in the order a reader meets them.

A page's ```python blocks run, top to bottom, in one namespace, in a fresh empty working
directory (so relative table paths such as ``"orders"`` land there). Two HTML comments,
invisible on the rendered page, steer this:

- ``<!-- snippet-setup`` ... ``-->``: code that runs at that point but is not shown (say, the
  table a snippet reads);
- ``<!-- snippet: skip (why) -->`` right before a block: the block is not run (it needs a
  cluster, credentials, or runs inside spark-submit); the reason is required.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

_FENCE = re.compile(r"^(```+|~~~+)\s*([\w+-]*)")
_SKIP = re.compile(r"^<!--\s*snippet:\s*skip\s*\((.+)\)\s*-->\s*$")


@dataclass(frozen=True)
class Snippet:
    line: int          # 1-based line of the block's first code line
    code: str
    shown: bool        # False for snippet-setup comments


class SnippetSyntaxError(ValueError):
    """A page's snippet markers are malformed (a skip without a reason, an unclosed setup)."""


def page_snippets(path: Path) -> list[Snippet]:
    lines = path.read_text().split("\n")
    out: list[Snippet] = []
    i, skip_next = 0, False
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped.startswith("<!-- snippet-setup"):
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "-->"), None)
            if end is None:
                raise SnippetSyntaxError(f"{path}:{i + 1}: snippet-setup comment is not closed by a '-->' line")
            out.append(Snippet(i + 2, "\n".join(lines[i + 1:end]), shown=False))
            i = end + 1
            continue
        if stripped.startswith("<!-- snippet:"):
            if not _SKIP.match(stripped):
                raise SnippetSyntaxError(f"{path}:{i + 1}: write '<!-- snippet: skip (reason) -->'")
            skip_next = True
            i += 1
            continue
        m = _FENCE.match(stripped)
        if m:
            fence, lang = m.group(1), m.group(2)
            end = next((j for j in range(i + 1, len(lines)) if lines[j].strip().startswith(fence)), len(lines))
            if lang in ("python", "py") and not skip_next:
                out.append(Snippet(i + 2, "\n".join(lines[i + 1:end]), shown=True))
            skip_next = False
            i = end + 1
            continue
        if stripped:
            skip_next = False if not stripped.startswith("<!--") else skip_next
        i += 1
    return out
